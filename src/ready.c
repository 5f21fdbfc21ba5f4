/*
 * ready.c -- the readiness rule of GET /-/ready (see ready.h).
 */
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "etcd.h"
#include "handle.h"
#include "ready.h"
#include "registry.h"
#include "worker.h"

/* Does some replica of the deployment have a ready connection? */
/* What one deployment's figures say, read under the registry's lock. */
struct ready_fig {
	int		 seen;
	unsigned	 handles_ready;	/* workers whose handle is ready */
	int		 any_replica;	/* a replica is ready on some worker */
};

static void
ready_fig_cb(void *arg, const struct reg_figures *f)
{
	struct ready_fig *rf = arg;
	unsigned i;

	rf->seen = 1;
	rf->handles_ready = f->handles[REG_H_READY];
	for (i = 0; i < f->nreplicas; i++)
		if (f->replicas[i].state == REG_E_READY)
			rf->any_replica = 1;
}

static int
ready_deployment(struct worker *w, const struct conf_deployment *cd,
    char *why, size_t whylen)
{
	const struct conf *conf = worker_conf(w);
	struct ready_fig rf = { 0, 0, 0 };

	if (registry_figures(worker_registry(w), cd->name, ready_fig_cb,
	    &rf) <= 0 || !rf.seen) {
		snprintf(why, whylen, "deployment '%s' is not loaded yet",
		    cd->name);
		return 0;
	}
	if (cd->prewarm) {
		if (rf.handles_ready >= conf->workers)
			return 1;
		snprintf(why, whylen, "deployment '%s' is warming "
		    "(%u of %u workers ready)", cd->name, rf.handles_ready,
		    conf->workers);
		return 0;
	}
	if (rf.any_replica)
		return 1;
	snprintf(why, whylen, "no replica of deployment '%s' is ready",
	    cd->name);
	/* A lazily connected deployment: start warming it here. */
	(void)handle_get(worker_ctx(w), cd->name);
	return 0;
}

int
ready_check(struct worker *w, char *why, size_t whylen)
{
	const struct conf *conf = worker_conf(w);
	const struct conf_deployment *cd;
	const struct conf_route *rt;
	char other[256];
	unsigned i;
	int ok = 1;

	if (etcd_enabled() && !etcd_in_sync()) {
		snprintf(why, whylen, "registry not in sync: no list from "
		    "etcd yet and no snapshot loaded");
		return 0;
	}
	for (i = 0; i < conf->nroutes; i++) {
		rt = &conf->routes[i];
		if (rt->from != CONF_FROM_CONF ||
		    (cd = conf_find_deployment(conf, rt->deployment)) == NULL ||
		    cd->source == CONF_DNS || cd->source == CONF_DNS_SRV)
			continue;
		/* Every unready one is asked to warm now, not one per
		 * probe; the first reason is the answer. */
		if (!ready_deployment(w, cd, ok ? why : other,
		    ok ? whylen : sizeof(other)))
			ok = 0;
	}
	return ok;
}
