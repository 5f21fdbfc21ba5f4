/*
 * registry_json.c -- the registry's live figures as the admin API's JSON
 * (GET /-/deployments and /-/deployments/NAME).  A rendering of
 * registry_figures(), like /metrics (metrics.c) is the other; it reads
 * nothing else of the registry.  The only registry file that knows jansson.
 */
#include <string.h>

#include <jansson.h>

#include "registry.h"

static json_t *
registry_replica_json(const struct reg_replica_figures *f)
{
	json_t *o;

	o = json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:I}",
	    "id", f->id, "address", f->address,
	    "state", registry_estate_str(f->state), "in_flight",
	    (int)f->in_flight, "pings", (json_int_t)f->pings,
	    "pongs", (json_int_t)f->pongs,
	    "missed_pongs", (json_int_t)f->missed_pongs,
	    "requests", (json_int_t)f->requests);
	if (o != NULL)
		json_object_update_new(o, json_pack("{s:s, s:i, s:i}",
		    "protocol", f->protocol, "weight", (int)f->weight,
		    "priority", (int)f->priority));
	/* HTTP replicas: active checks and the keep-alive pool. */
	if (o != NULL && (strcmp(f->protocol, "h2c") == 0 ||
	    strcmp(f->protocol, "h2") == 0))
		json_object_update_new(o, json_pack("{s:i, s:i}",
		    "connections_open", (int)f->conns_open,
		    "connections_idle", (int)f->conns_idle));
	if (o != NULL && strcmp(f->protocol, "http") == 0)
		json_object_update_new(o, json_pack("{s:I, s:I, s:i, s:i}",
		    "health_passed", (json_int_t)f->health_passed,
		    "health_failed", (json_int_t)f->health_failed,
		    "connections_open", (int)f->conns_open,
		    "connections_idle", (int)f->conns_idle));
	if (o != NULL && f->pid != 0)
		json_object_set_new(o, "pid", json_integer(f->pid));
	if (o != NULL && f->spawned)
		json_object_set_new(o, "restarts", json_integer(f->restarts));
	return o;
}

/* How many workers hold a handle in each state (idle: none). */
static json_t *
registry_handles_json(const struct reg_figures *f)
{
	json_t *o;
	int i;

	if ((o = json_object()) == NULL)
		return NULL;
	for (i = REG_H_RESOLVING; i < REG_H_NSTATES; i++)
		json_object_set_new(o, registry_hstate_str(i),
		    json_integer(f->handles[i]));
	return o;
}

static json_t *
registry_figures_json(const struct reg_figures *f)
{
	json_t *reps, *handles, *o;
	unsigned i;

	handles = registry_handles_json(f);
	if ((reps = json_array()) == NULL) {
		json_decref(handles);
		return NULL;
	}
	for (i = 0; i < f->nreplicas; i++)
		json_array_append_new(reps,
		    registry_replica_json(&f->replicas[i]));
	o = json_pack("{s:s, s:I, s:I, s:s, s:i, s:i, s:o*, s:o}",
	    "state", registry_hstate_str(f->state),
	    "resolutions", (json_int_t)f->resolutions,
	    "evictions", (json_int_t)f->evictions,
	    "source", f->source,
	    "version", (int)f->version, "queued", (int)f->queued,
	    "handles", handles, "replicas", reps);
	if (o != NULL && f->dns != NULL)
		json_object_set_new(o, strcmp(f->source, "dns_srv") == 0 ?
		    "dns_srv" : "dns", json_string(f->dns));
	return o;
}

static void
registry_json_add(void *arg, const struct reg_figures *f)
{
	json_object_set_new((json_t *)arg, f->name, registry_figures_json(f));
}

static void
registry_json_one(void *arg, const struct reg_figures *f)
{
	*(json_t **)arg = registry_figures_json(f);
}

json_t *
registry_status_json(struct registry *r)
{
	json_t *doc;

	if ((doc = json_object()) == NULL)
		return NULL;
	registry_figures(r, NULL, registry_json_add, doc);
	return doc;
}

json_t *
registry_name_json(struct registry *r, const char *name)
{
	json_t *o = NULL;

	registry_figures(r, name, registry_json_one, &o);
	return o;
}
