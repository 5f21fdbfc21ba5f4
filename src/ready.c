/*
 * ready.c -- the readiness rule of GET /-/ready (see ready.h).
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "conf.h"
#include "etcd.h"
#include "handle.h"
#include "ready.h"
#include "registry.h"
#include "worker.h"

/* Does some replica of the deployment have a ready connection? */
static int
ready_any_replica(json_t *dep)
{
	const char *st;
	json_t *rep;
	size_t i;

	json_array_foreach(json_object_get(dep, "replicas"), i, rep) {
		st = json_string_value(json_object_get(rep, "state"));
		if (st != NULL && strcmp(st, "ready") == 0)
			return 1;
	}
	return 0;
}

/* 1 if the deployment can serve, else 0 and why. */
static int
ready_deployment(struct worker *w, const struct conf_deployment *cd,
    char *why, size_t whylen)
{
	const struct conf *conf = worker_conf(w);
	json_t *dep;
	json_int_t nready;
	int ok;

	if ((dep = registry_name_json(worker_registry(w), cd->name)) == NULL) {
		snprintf(why, whylen, "deployment '%s' is not loaded yet",
		    cd->name);
		return 0;
	}
	if (cd->prewarm) {
		nready = json_integer_value(json_object_get(json_object_get(dep,
		    "handles"), "ready"));
		ok = nready >= (json_int_t)conf->workers;
		if (!ok)
			snprintf(why, whylen, "deployment '%s' is warming "
			    "(%lld of %u workers ready)", cd->name,
			    (long long)nready, conf->workers);
	} else if (!(ok = ready_any_replica(dep))) {
		snprintf(why, whylen, "no replica of deployment '%s' is ready",
		    cd->name);
		/* A lazily connected deployment: start warming it here. */
		(void)handle_get(worker_ctx(w), cd->name);
	}
	json_decref(dep);
	return ok;
}

int
ready_check(struct worker *w, char *why, size_t whylen)
{
	const struct conf *conf = worker_conf(w);
	const struct conf_deployment *cd;
	const struct conf_route *rt;
	unsigned i;

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
		if (!ready_deployment(w, cd, why, whylen))
			return 0;
	}
	return 1;
}
