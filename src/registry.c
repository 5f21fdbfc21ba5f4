/*
 * registry.c -- deployment name -> endpoints (see registry.h).
 *
 * A reload runs in two phases.  The plan phase reads the registry without
 * the mutex (only the main thread writes it), compares each deployment of
 * the new conf with the live one of the same name, parses new addresses
 * (which may ask DNS) and allocates everything it will need.  The commit
 * phase takes the mutex and only links pointers, so it cannot fail half
 * way and workers never see a mix of old and new.
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
	enum conf_source source;
	char		*command;	/* spawn: argv joined by '\n' */
	unsigned	 replicas;
	unsigned	 gen;		/* spawn: socket path generation */
	unsigned	 max_ongoing;
	unsigned	 queue_max;
	double		 queue_timeout;
	double		 request_timeout;
	struct reg_endpoint **eps;
	unsigned	 neps;
	unsigned	 version;
	_Atomic uint64_t resolutions;
	_Atomic int	*hstate;	/* [nworkers] */
	_Atomic unsigned *queued;	/* [nworkers] */
};

struct registry {
	pthread_mutex_t	 lock;
	unsigned	 nworkers;
	char		*runtime_dir;
	struct reg_deployment **deps;	/* live, in conf order */
	unsigned	 ndeps;
	struct reg_deployment **gone;	/* removed by a reload */
	unsigned	 ngone;
	struct reg_endpoint **eps;	/* every endpoint, owned here */
	unsigned	 neps;
};

/* One deployment of the new conf, as the plan phase sees it. */
enum reg_plan_kind { PLAN_SAME, PLAN_SETTINGS, PLAN_ENDPOINTS, PLAN_NEW };

struct reg_plan {
	const struct conf_deployment *cd;
	struct reg_deployment *old;	/* live one of that name, or NULL */
	enum reg_plan_kind kind;
	struct reg_deployment *dep;	/* PLAN_NEW: allocated */
	char		*command;
	unsigned	 gen;
	struct reg_endpoint **eps;	/* PLAN_NEW, PLAN_ENDPOINTS */
	unsigned	 neps;
};

static const char *hstate_names[] = {
	"idle", "resolving", "warming", "ready", "failed",
};

static void
registry_deployment_free(struct reg_deployment *d)
{
	if (d == NULL)
		return;
	free(d->name);
	free(d->command);
	free(d->eps);
	free(d->hstate);
	free(d->queued);
	free(d);
}

static void
registry_endpoint_free(struct reg_endpoint *ep)
{
	if (ep == NULL)
		return;
	free(ep->stats);
	free(ep);
}

struct registry *
registry_new(const struct conf *conf, unsigned nworkers,
    const char *runtime_dir, char *err, size_t errlen)
{
	struct registry *r;
	struct reg_change *ch;
	unsigned n;

	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->runtime_dir = strdup(runtime_dir)) == NULL) {
		free(r);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	r->nworkers = nworkers;
	if (registry_reload(r, conf, &ch, &n, err, errlen) == -1) {
		registry_free(r);
		return NULL;
	}
	registry_changes_free(ch, n);
	return r;
}

void
registry_free(struct registry *r)
{
	unsigned i;

	if (r == NULL)
		return;
	for (i = 0; i < r->ndeps; i++)
		registry_deployment_free(r->deps[i]);
	for (i = 0; i < r->ngone; i++)
		registry_deployment_free(r->gone[i]);
	for (i = 0; i < r->neps; i++)
		registry_endpoint_free(r->eps[i]);
	free(r->deps);
	free(r->gone);
	free(r->eps);
	free(r->runtime_dir);
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

/* Plan phase ---------------------------------------------------------- */

/* The argv as one string, to tell whether a command changed. */
static char *
registry_command(const struct conf_deployment *cd)
{
	size_t i, len = 1;
	char *s;

	if (cd->source != CONF_SPAWN)
		return strdup("");
	for (i = 0; cd->command[i] != NULL; i++)
		len += strlen(cd->command[i]) + 1;
	if ((s = calloc(1, len)) == NULL)
		return NULL;
	for (i = 0; cd->command[i] != NULL; i++) {
		if (i > 0)
			strcat(s, "\n");
		strcat(s, cd->command[i]);
	}
	return s;
}

static int
registry_same_endpoints(const struct reg_deployment *d,
    const struct conf_deployment *cd, const char *command)
{
	unsigned i;

	if (d->source != cd->source)
		return 0;
	if (cd->source == CONF_SPAWN)
		return strcmp(d->command, command) == 0 &&
		    d->replicas == cd->replicas;
	if (d->neps != cd->nendpoints)
		return 0;
	for (i = 0; i < d->neps; i++) {
		if (strcmp(d->eps[i]->addr.text, cd->endpoints[i]) != 0)
			return 0;
	}
	return 1;
}

static int
registry_same_settings(const struct reg_deployment *d,
    const struct conf_deployment *cd)
{
	return d->max_ongoing == cd->max_ongoing &&
	    d->queue_max == cd->queue_max &&
	    d->queue_timeout == cd->queue_timeout &&
	    d->request_timeout == cd->request_timeout;
}

/*
 * A spawn generation no deployment of that name used before: the sockets
 * of a removed or replaced one may still be draining.
 */
static unsigned
registry_next_gen(struct registry *r, const char *name)
{
	unsigned i, gen = 0;

	for (i = 0; i < r->ndeps; i++) {
		if (strcmp(r->deps[i]->name, name) == 0 && r->deps[i]->gen > gen)
			gen = r->deps[i]->gen;
	}
	for (i = 0; i < r->ngone; i++) {
		if (strcmp(r->gone[i]->name, name) == 0 && r->gone[i]->gen > gen)
			gen = r->gone[i]->gen;
	}
	return gen + 1;
}

/* An endpoint by address: an existing one, one planned already, or new. */
static struct reg_endpoint *
registry_plan_endpoint(struct registry *r, struct reg_endpoint ***fresh,
    unsigned *nfresh, const char *text, const char *id, char *err,
    size_t errlen)
{
	struct reg_endpoint *ep, **nf;
	unsigned i;

	for (i = 0; i < r->neps; i++) {
		if (strcmp(r->eps[i]->addr.text, text) == 0)
			return r->eps[i];
	}
	for (i = 0; i < *nfresh; i++) {
		if (strcmp((*fresh)[i]->addr.text, text) == 0)
			return (*fresh)[i];
	}
	if ((ep = calloc(1, sizeof(*ep))) == NULL ||
	    (ep->stats = calloc(r->nworkers, sizeof(*ep->stats))) == NULL ||
	    (nf = realloc(*fresh, (*nfresh + 1) * sizeof(*nf))) == NULL) {
		registry_endpoint_free(ep);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*fresh = nf;
	if (net_addr_parse(text, &ep->addr, err, errlen) == -1) {
		registry_endpoint_free(ep);
		return NULL;
	}
	snprintf(ep->id, sizeof(ep->id), "%s", id);
	nf[(*nfresh)++] = ep;
	return ep;
}

/* The endpoints a deployment will have: its addresses, or its sockets. */
static int
registry_plan_endpoints(struct registry *r, struct reg_plan *p,
    struct reg_endpoint ***fresh, unsigned *nfresh, char *err, size_t errlen)
{
	const struct conf_deployment *cd = p->cd;
	char addr[512], id[64], msg[256];
	unsigned i, n;

	n = cd->source == CONF_SPAWN ? cd->replicas : cd->nendpoints;
	if ((p->eps = calloc(n ? n : 1, sizeof(*p->eps))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (cd->source == CONF_ENDPOINTS) {
			snprintf(addr, sizeof(addr), "%s", cd->endpoints[i]);
			snprintf(id, sizeof(id), "%s", cd->endpoints[i]);
		} else if (p->gen == 1) {
			snprintf(addr, sizeof(addr), "unix:%s/%s-%u.sock",
			    r->runtime_dir, cd->name, i);
			snprintf(id, sizeof(id), "%s-%u", cd->name, i);
		} else {
			snprintf(addr, sizeof(addr), "unix:%s/%s-%u.g%u.sock",
			    r->runtime_dir, cd->name, i, p->gen);
			snprintf(id, sizeof(id), "%s-%u.g%u", cd->name, i,
			    p->gen);
		}
		p->eps[i] = registry_plan_endpoint(r, fresh, nfresh, addr, id,
		    msg, sizeof(msg));
		if (p->eps[i] == NULL) {
			snprintf(err, errlen, "deployments.%s: %s", cd->name,
			    msg);
			return -1;
		}
		p->neps++;
	}
	return 0;
}

static struct reg_deployment *
registry_deployment_new(struct registry *r, const char *name)
{
	struct reg_deployment *d;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	d->name = strdup(name);
	d->hstate = calloc(r->nworkers, sizeof(*d->hstate));
	d->queued = calloc(r->nworkers, sizeof(*d->queued));
	if (d->name == NULL || d->hstate == NULL || d->queued == NULL) {
		registry_deployment_free(d);
		return NULL;
	}
	return d;
}

static int
registry_plan_one(struct registry *r, struct reg_plan *p,
    struct reg_endpoint ***fresh, unsigned *nfresh, char *err, size_t errlen)
{
	const struct conf_deployment *cd = p->cd;

	if ((p->command = registry_command(cd)) == NULL)
		goto oom;
	p->old = registry_find(r, cd->name);
	if (p->old != NULL && registry_same_endpoints(p->old, cd, p->command)) {
		p->kind = registry_same_settings(p->old, cd) ? PLAN_SAME :
		    PLAN_SETTINGS;
		p->gen = p->old->gen;
		return 0;
	}
	p->kind = p->old != NULL ? PLAN_ENDPOINTS : PLAN_NEW;
	/* Only the replica count changed: keep the sockets that stay. */
	if (p->old != NULL && cd->source == CONF_SPAWN &&
	    p->old->source == CONF_SPAWN &&
	    strcmp(p->old->command, p->command) == 0)
		p->gen = p->old->gen;
	else
		p->gen = cd->source == CONF_SPAWN ?
		    registry_next_gen(r, cd->name) : 0;
	if (p->kind == PLAN_NEW &&
	    (p->dep = registry_deployment_new(r, cd->name)) == NULL)
		goto oom;
	return registry_plan_endpoints(r, p, fresh, nfresh, err, errlen);
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

static void
registry_plan_free(struct reg_plan *plan, unsigned n)
{
	unsigned i;

	for (i = 0; plan != NULL && i < n; i++) {
		free(plan[i].command);
		free(plan[i].eps);
		registry_deployment_free(plan[i].dep);
	}
	free(plan);
}

/* Commit phase --------------------------------------------------------- */

static void
registry_commit_one(struct reg_plan *p)
{
	const struct conf_deployment *cd = p->cd;
	struct reg_deployment *d = p->kind == PLAN_NEW ? p->dep : p->old;
	unsigned i;

	if (p->kind == PLAN_SAME)
		return;
	d->source = cd->source;
	d->replicas = cd->replicas;
	d->max_ongoing = cd->max_ongoing;
	d->queue_max = cd->queue_max;
	d->queue_timeout = cd->queue_timeout;
	d->request_timeout = cd->request_timeout;
	d->gen = p->gen;
	d->version++;
	if (p->kind == PLAN_SETTINGS) {
		for (i = 0; i < d->neps; i++)
			atomic_store(&d->eps[i]->max_ongoing, cd->max_ongoing);
		return;
	}
	/* Swap the strings and arrays: the plan frees the old ones. */
	free(d->command);
	d->command = p->command;
	p->command = NULL;
	free(d->eps);
	d->eps = p->eps;
	d->neps = p->neps;
	p->eps = NULL;
	p->dep = NULL;
	for (i = 0; i < d->neps; i++)
		atomic_store(&d->eps[i]->max_ongoing, cd->max_ongoing);
}

static int
registry_add_change(struct reg_change **ch, unsigned *n, const char *name,
    enum reg_change_kind kind)
{
	struct reg_change *nc;

	if ((nc = realloc(*ch, (*n + 1) * sizeof(*nc))) == NULL)
		return -1;
	*ch = nc;
	if ((nc[*n].name = strdup(name)) == NULL)
		return -1;
	nc[(*n)++].kind = kind;
	return 0;
}

/* The change list, and the arrays the commit will need, before the lock. */
static int
registry_plan_changes(struct registry *r, const struct conf *conf,
    struct reg_plan *plan, struct reg_change **ch, unsigned *nch)
{
	unsigned i;

	for (i = 0; i < conf->ndeployments; i++) {
		if (plan[i].kind == PLAN_SAME)
			continue;
		if (registry_add_change(ch, nch, plan[i].cd->name,
		    plan[i].kind == PLAN_NEW ? REG_ADDED : REG_CHANGED) == -1)
			return -1;
	}
	for (i = 0; i < r->ndeps; i++) {
		if (conf_find_deployment(conf, r->deps[i]->name) == NULL &&
		    registry_add_change(ch, nch, r->deps[i]->name,
		    REG_REMOVED) == -1)
			return -1;
	}
	return 0;
}

int
registry_reload(struct registry *r, const struct conf *conf,
    struct reg_change **changes, unsigned *nchanges, char *err, size_t errlen)
{
	struct reg_plan *plan;
	struct reg_endpoint **fresh = NULL, **neps = NULL;
	struct reg_deployment **ndeps = NULL, **ngone = NULL;
	struct reg_change *ch = NULL;
	unsigned i, nfresh = 0, nch = 0, nremoved;

	*changes = NULL;
	*nchanges = 0;
	if ((plan = calloc(conf->ndeployments + 1, sizeof(*plan))) == NULL)
		goto oom;
	for (i = 0; i < conf->ndeployments; i++) {
		plan[i].cd = &conf->deployments[i];
		if (registry_plan_one(r, &plan[i], &fresh, &nfresh, err,
		    errlen) == -1)
			goto fail;
	}
	if (registry_plan_changes(r, conf, plan, &ch, &nch) == -1)
		goto oom;
	nremoved = 0;
	for (i = 0; i < nch; i++)
		nremoved += ch[i].kind == REG_REMOVED;
	ndeps = calloc(conf->ndeployments + 1, sizeof(*ndeps));
	ngone = realloc(r->gone, (r->ngone + nremoved + 1) * sizeof(*ngone));
	if (ngone != NULL)
		r->gone = ngone;
	neps = realloc(r->eps, (r->neps + nfresh + 1) * sizeof(*neps));
	if (neps != NULL)
		r->eps = neps;
	if (ndeps == NULL || ngone == NULL || neps == NULL)
		goto oom;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < nfresh; i++)
		r->eps[r->neps++] = fresh[i];
	for (i = 0; i < r->ndeps; i++) {
		if (conf_find_deployment(conf, r->deps[i]->name) == NULL)
			r->gone[r->ngone++] = r->deps[i];
	}
	for (i = 0; i < conf->ndeployments; i++) {
		ndeps[i] = plan[i].kind == PLAN_NEW ? plan[i].dep : plan[i].old;
		registry_commit_one(&plan[i]);
	}
	free(r->deps);
	r->deps = ndeps;
	r->ndeps = conf->ndeployments;
	pthread_mutex_unlock(&r->lock);

	registry_plan_free(plan, conf->ndeployments);
	free(fresh);
	*changes = ch;
	*nchanges = nch;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
fail:
	for (i = 0; i < nfresh; i++)
		registry_endpoint_free(fresh[i]);
	free(fresh);
	free(ndeps);
	registry_plan_free(plan, conf->ndeployments);
	registry_changes_free(ch, nch);
	return -1;
}

void
registry_changes_free(struct reg_change *ch, unsigned n)
{
	unsigned i;

	for (i = 0; ch != NULL && i < n; i++)
		free(ch[i].name);
	free(ch);
}

/* Lookups and figures -------------------------------------------------- */

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
			out->queue_max = d->queue_max;
			out->queue_timeout = d->queue_timeout;
			out->request_timeout = d->request_timeout;
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

void
registry_publish_queued(struct reg_deployment *d, unsigned worker, unsigned n)
{
	atomic_store_explicit(&d->queued[worker], n, memory_order_relaxed);
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

unsigned
registry_in_flight(struct registry *r, const struct reg_endpoint *ep)
{
	unsigned w;
	int n = 0;

	for (w = 0; w < r->nworkers; w++)
		n += atomic_load_explicit(&ep->stats[w].in_flight,
		    memory_order_relaxed);
	return n > 0 ? (unsigned)n : 0;
}

/* An endpoint is as good as its best worker's connection. */
static json_t *
registry_endpoint_json(struct registry *r, struct reg_endpoint *ep,
    int spawned)
{
	uint64_t pings = 0, pongs = 0, missed = 0, requests = 0;
	int in_flight = 0, best = UPSTREAM_IDLE, st;
	unsigned w;
	json_t *o;

	for (w = 0; w < r->nworkers; w++) {
		struct ep_stats *s = &ep->stats[w];

		pings += atomic_load_explicit(&s->pings, memory_order_relaxed);
		pongs += atomic_load_explicit(&s->pongs, memory_order_relaxed);
		missed += atomic_load_explicit(&s->missed_pongs,
		    memory_order_relaxed);
		requests += atomic_load_explicit(&s->requests,
		    memory_order_relaxed);
		in_flight += atomic_load_explicit(&s->in_flight,
		    memory_order_relaxed);
		st = atomic_load_explicit(&s->state, memory_order_relaxed);
		if (upstream_state_rank(st) > upstream_state_rank(best))
			best = st;
	}
	o = json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:I}",
	    "id", ep->id, "address", ep->addr.text,
	    "state", upstream_state_str(best), "in_flight", in_flight,
	    "pings", (json_int_t)pings, "pongs", (json_int_t)pongs,
	    "missed_pongs", (json_int_t)missed,
	    "requests", (json_int_t)requests);
	if (o != NULL && atomic_load(&ep->pid) != 0)
		json_object_set_new(o, "pid", json_integer(atomic_load(&ep->pid)));
	if (o != NULL && spawned)
		json_object_set_new(o, "restarts",
		    json_integer(atomic_load(&ep->restarts)));
	return o;
}

/* How many workers hold a handle in each state (idle: none). */
static json_t *
registry_handles_json(struct registry *r, struct reg_deployment *d, int *best)
{
	unsigned i, count[REG_H_NSTATES] = { 0 };
	json_t *o;
	int st;

	for (i = 0; i < r->nworkers; i++) {
		st = atomic_load_explicit(&d->hstate[i], memory_order_relaxed);
		if (st < 0 || st >= REG_H_NSTATES)
			continue;
		count[st]++;
		if (st > *best)
			*best = st;
	}
	if ((o = json_object()) == NULL)
		return NULL;
	for (i = REG_H_RESOLVING; i < REG_H_NSTATES; i++)
		json_object_set_new(o, hstate_names[i], json_integer(count[i]));
	return o;
}

static json_t *
registry_deployment_json(struct registry *r, struct reg_deployment *d)
{
	json_t *reps, *handles;
	unsigned i, queued = 0;
	int best = REG_H_IDLE;

	handles = registry_handles_json(r, d, &best);
	for (i = 0; i < r->nworkers; i++)
		queued += atomic_load_explicit(&d->queued[i],
		    memory_order_relaxed);
	if ((reps = json_array()) == NULL) {
		json_decref(handles);
		return NULL;
	}
	for (i = 0; i < d->neps; i++)
		json_array_append_new(reps, registry_endpoint_json(r, d->eps[i],
		    d->source == CONF_SPAWN));
	return json_pack("{s:s, s:I, s:s, s:i, s:i, s:o*, s:o}",
	    "state", hstate_names[best],
	    "resolutions", (json_int_t)atomic_load(&d->resolutions),
	    "source", d->source == CONF_SPAWN ? "spawn" : "endpoints",
	    "version", (int)d->version, "queued", (int)queued,
	    "handles", handles, "replicas", reps);
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
