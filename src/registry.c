/*
 * registry.c -- deployment name -> endpoints (see registry.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include <jansson.h>

#include "conf.h"
#include "registry.h"
#include "upstream.h"

struct reg_deployment {
	char		*name;
	const struct conf_deployment *cd;
	struct reg_endpoint **eps;
	unsigned	 neps;
	unsigned	 version;
	_Atomic uint64_t resolutions;
	_Atomic int	*hstate;	/* [nworkers] */
};

struct registry {
	pthread_mutex_t	 lock;
	unsigned	 nworkers;
	struct reg_deployment **deps;
	unsigned	 ndeps;
	struct reg_endpoint **eps;	/* every endpoint, owned here */
	unsigned	 neps;
};

static const char *hstate_names[] = {
	"idle", "resolving", "warming", "ready", "failed",
};

static struct reg_endpoint *
registry_endpoint(struct registry *r, const char *text, const char *id,
    unsigned max_ongoing, char *err, size_t errlen)
{
	struct reg_endpoint *ep, **neps;
	unsigned i;

	for (i = 0; i < r->neps; i++) {
		if (strcmp(r->eps[i]->addr.text, text) == 0)
			return r->eps[i];
	}
	if ((ep = calloc(1, sizeof(*ep))) == NULL)
		return NULL;
	if (net_addr_parse(text, &ep->addr, err, errlen) == -1) {
		free(ep);
		return NULL;
	}
	snprintf(ep->id, sizeof(ep->id), "%s", id);
	ep->max_ongoing = max_ongoing;
	ep->stats = calloc(r->nworkers, sizeof(*ep->stats));
	neps = realloc(r->eps, (r->neps + 1) * sizeof(*neps));
	if (ep->stats == NULL || neps == NULL) {
		free(ep->stats);
		free(ep);
		if (neps != NULL)
			r->eps = neps;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->eps = neps;
	r->eps[r->neps++] = ep;
	return ep;
}

static int
registry_add_deployment(struct registry *r, const struct conf_deployment *cd,
    const char *runtime_dir, char *err, size_t errlen)
{
	struct reg_deployment *d;
	char addr[512], id[64];
	unsigned i, n;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return -1;
	r->deps[r->ndeps++] = d;
	d->name = strdup(cd->name);
	d->cd = cd;
	d->hstate = calloc(r->nworkers, sizeof(*d->hstate));
	n = cd->source == CONF_SPAWN ? cd->replicas : cd->nendpoints;
	d->eps = calloc(n, sizeof(*d->eps));
	if (d->name == NULL || d->hstate == NULL || d->eps == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (cd->source == CONF_SPAWN) {
			snprintf(addr, sizeof(addr), "unix:%s/%s-%u.sock",
			    runtime_dir, cd->name, i);
			snprintf(id, sizeof(id), "%s-%u", cd->name, i);
		} else {
			snprintf(addr, sizeof(addr), "%s", cd->endpoints[i]);
			snprintf(id, sizeof(id), "%s", cd->endpoints[i]);
		}
		d->eps[i] = registry_endpoint(r, addr, id, cd->max_ongoing,
		    err, errlen);
		if (d->eps[i] == NULL)
			return -1;
		d->neps++;
	}
	d->version = 1;
	return 0;
}

struct registry *
registry_new(const struct conf *conf, unsigned nworkers,
    const char *runtime_dir, char *err, size_t errlen)
{
	struct registry *r;
	unsigned i;

	if ((r = calloc(1, sizeof(*r))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	r->nworkers = nworkers;
	r->deps = calloc(conf->ndeployments + 1, sizeof(*r->deps));
	if (r->deps == NULL) {
		registry_free(r);
		return NULL;
	}
	for (i = 0; i < conf->ndeployments; i++) {
		if (registry_add_deployment(r, &conf->deployments[i],
		    runtime_dir, err, errlen) == -1) {
			registry_free(r);
			return NULL;
		}
	}
	return r;
}

void
registry_free(struct registry *r)
{
	unsigned i;

	if (r == NULL)
		return;
	for (i = 0; i < r->ndeps; i++) {
		free(r->deps[i]->name);
		free(r->deps[i]->eps);
		free(r->deps[i]->hstate);
		free(r->deps[i]);
	}
	for (i = 0; i < r->neps; i++) {
		free(r->eps[i]->stats);
		free(r->eps[i]);
	}
	free(r->deps);
	free(r->eps);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static struct reg_deployment *
registry_find(struct registry *r, const char *name)
{
	unsigned i;

	for (i = 0; i < r->ndeps; i++) {
		if (strcmp(r->deps[i]->name, name) == 0)
			return r->deps[i];
	}
	return NULL;
}

int
registry_lookup(struct registry *r, const char *name, struct reg_lookup *out)
{
	struct reg_deployment *d;
	int rv = -1;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&r->lock);
	if ((d = registry_find(r, name)) != NULL) {
		out->eps = calloc(d->neps ? d->neps : 1, sizeof(*out->eps));
		if (out->eps != NULL) {
			memcpy(out->eps, d->eps, d->neps * sizeof(*out->eps));
			out->neps = d->neps;
			out->dep = d;
			out->version = d->version;
			out->queue_max = d->cd->queue_max;
			out->queue_timeout = d->cd->queue_timeout;
			out->request_timeout = d->cd->request_timeout;
			atomic_fetch_add_explicit(&d->resolutions, 1,
			    memory_order_relaxed);
			rv = 0;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return rv;
}

void
registry_publish_hstate(struct reg_deployment *d, unsigned worker,
    enum reg_hstate st)
{
	atomic_store_explicit(&d->hstate[worker], st, memory_order_relaxed);
}

unsigned
registry_ndeployments(struct registry *r)
{
	return r->ndeps;
}

struct reg_deployment *
registry_deployment(struct registry *r, unsigned i)
{
	return i < r->ndeps ? r->deps[i] : NULL;
}

const char *
reg_deployment_name(const struct reg_deployment *d)
{
	return d->name;
}

unsigned
reg_deployment_nendpoints(const struct reg_deployment *d)
{
	return d->neps;
}

struct reg_endpoint *
reg_deployment_endpoint(struct reg_deployment *d, unsigned i)
{
	return i < d->neps ? d->eps[i] : NULL;
}

/* An endpoint is as good as its best worker's connection. */
static json_t *
registry_endpoint_json(struct registry *r, struct reg_endpoint *ep)
{
	uint64_t pings = 0, pongs = 0, requests = 0;
	int in_flight = 0, best = UPSTREAM_IDLE, st;
	unsigned w;
	json_t *o;

	for (w = 0; w < r->nworkers; w++) {
		struct ep_stats *s = &ep->stats[w];

		pings += atomic_load_explicit(&s->pings, memory_order_relaxed);
		pongs += atomic_load_explicit(&s->pongs, memory_order_relaxed);
		requests += atomic_load_explicit(&s->requests,
		    memory_order_relaxed);
		in_flight += atomic_load_explicit(&s->in_flight,
		    memory_order_relaxed);
		st = atomic_load_explicit(&s->state, memory_order_relaxed);
		if (upstream_state_rank(st) > upstream_state_rank(best))
			best = st;
	}
	o = json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:I}",
	    "id", ep->id, "address", ep->addr.text,
	    "state", upstream_state_str(best), "in_flight", in_flight,
	    "pings", (json_int_t)pings, "pongs", (json_int_t)pongs,
	    "requests", (json_int_t)requests);
	if (o != NULL && atomic_load(&ep->pid) != 0) {
		json_object_set_new(o, "pid", json_integer(atomic_load(&ep->pid)));
		json_object_set_new(o, "restarts",
		    json_integer(atomic_load(&ep->restarts)));
	}
	return o;
}

static json_t *
registry_deployment_json(struct registry *r, struct reg_deployment *d)
{
	json_t *o, *reps;
	int best = REG_H_IDLE, st;
	unsigned i;

	for (i = 0; i < r->nworkers; i++) {
		st = atomic_load_explicit(&d->hstate[i], memory_order_relaxed);
		if (st > best)
			best = st;
	}
	if ((reps = json_array()) == NULL)
		return NULL;
	for (i = 0; i < d->neps; i++)
		json_array_append_new(reps, registry_endpoint_json(r, d->eps[i]));
	o = json_pack("{s:s, s:I, s:s, s:o}", "state", hstate_names[best],
	    "resolutions", (json_int_t)atomic_load(&d->resolutions),
	    "source", d->cd->source == CONF_SPAWN ? "spawn" : "endpoints",
	    "replicas", reps);
	return o;
}

json_t *
registry_status_json(struct registry *r)
{
	json_t *doc;
	unsigned i;

	if ((doc = json_object()) == NULL)
		return NULL;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->ndeps; i++)
		json_object_set_new(doc, r->deps[i]->name,
		    registry_deployment_json(r, r->deps[i]));
	pthread_mutex_unlock(&r->lock);
	return doc;
}
