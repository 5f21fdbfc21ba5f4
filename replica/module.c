/*
 * module.c -- the library's side of replica modules (replica_module.h):
 * its functions as a table for a host, and a module's main over the wire.
 */
#include <stdio.h>

#include "replica_impl.h"
#include "replica_module.h"

#define REPLICA_API_REAL(ret, name, params, args)	.name = name,
#define REPLICA_API_REALV(name, params, args)		.name = name,

const struct replica_api replica_lib_api = {
	.abi = REPLICA_MODULE_ABI,
	REPLICA_API_CALLS(REPLICA_API_REAL, REPLICA_API_REALV)
};

/* Linked with the library itself, a module calls it directly. */
void
replica_module_bind(const struct replica_api *api)
{
}

int
replica_module_main(const struct replica_module *m, int rargc, char **rargv,
    int margc, char **margv)
{
	struct event_base *base;
	struct replica *r;
	void *arg = NULL;
	char err[256];
	int rc;

	if ((base = event_base_new()) == NULL) {
		fprintf(stderr, "%s: event_base_new failed\n", m->name);
		return 1;
	}
	if ((r = replica_new(base, rargc, rargv, m->handler, NULL, err,
	    sizeof err)) == NULL) {
		fprintf(stderr, "%s: %s\n", m->name, err);
		event_base_free(base);
		return 1;
	}
	err[0] = '\0';
	if (m->init != NULL && m->init(r, margc, margv, &arg, err,
	    sizeof err) != 0) {
		fprintf(stderr, "%s: init failed: %s\n", m->name, err);
		replica_free(r);
		event_base_free(base);
		return 1;
	}
	r->arg = arg;
	rc = replica_run(r);
	replica_free(r);
	if (m->fini != NULL)
		m->fini(arg);
	event_base_free(base);
	return rc == 0 ? 0 : 1;
}
