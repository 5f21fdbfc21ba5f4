/*
 * registry.c -- the store: deployments and endpoints, the name indexes,
 * lookups and the live figures workers publish (see registry.h).
 * registry_reload.c and registry_names.c change it; it never calls them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "conf.h"
#include "hash.h"
#include "registry.h"
#include "registry_impl.h"
#include "registry_publish.h"
#include "tls.h"

static const char *hstate_names[] = {
	"idle", "resolving", "warming", "ready", "failed",
};

static const char *estate_names[REG_E_NSTATES] = {
	"idle", "connecting", "warming", "ready", "down",
};

static const char *source_names[] = { "spawn", "endpoints", "dns",
    "dns_srv", "inproc" };

void
registry_strv_free(char **v, unsigned n)
{
	unsigned i;

	for (i = 0; v != NULL && i < n; i++)
		free(v[i]);
	free(v);
}

void
registry_deployment_free(struct reg_deployment *d)
{
	if (d == NULL)
		return;
	free(d->name);
	free(d->command);
	free(d->eps);
	free(d->shares);
	registry_strv_free(d->rids, d->neps);
	free(d->hstate);
	free(d->queued);
	free(d);
}

void
registry_endpoint_free(struct reg_endpoint *ep)
{
	if (ep == NULL)
		return;
	tls_cli_free(atomic_load(&ep->tls));
	free(ep->stats);
	free(ep);
}

/* Indexes -------------------------------------------------------------- */

struct reg_deployment *
registry_index_find(const struct reg_index *x, const char *name)
{
	struct reg_deployment *d;

	if (x->nb == 0)
		return NULL;
	for (d = x->b[hash_name(name) & (x->nb - 1)]; d != NULL;
	    d = d->hnext) {
		if (strcmp(d->name, name) == 0)
			return d;
	}
	return NULL;
}

void
registry_index_put(struct reg_index *x, struct reg_deployment *d)
{
	unsigned h = hash_name(d->name) & (x->nb - 1);

	d->hnext = x->b[h];
	x->b[h] = d;
}

/* Buckets for n names: at least 2n, a power of two. */
struct reg_deployment **
registry_index_alloc(unsigned n, unsigned *nb)
{
	*nb = 16;
	while (*nb < 2 * n && *nb < (1u << 30))
		*nb *= 2;
	return calloc(*nb, sizeof(struct reg_deployment *));
}

/* Under the mutex: every member of deps[n] into fresh buckets b[nb].
 * Returns the old bucket array, for the caller to free. */
struct reg_deployment **
registry_index_rebuild(struct reg_index *x, struct reg_deployment **b,
    unsigned nb, struct reg_deployment **deps, unsigned n)
{
	struct reg_deployment **old = x->b;
	unsigned i;

	x->b = b;
	x->nb = nb;
	for (i = 0; i < n; i++)
		registry_index_put(x, deps[i]);
	return old;
}

/* The live deployment of that name: the conf's first, then registered. */
static struct reg_deployment *
registry_find_live(struct registry *r, const char *name)
{
	struct reg_deployment *d;

	if ((d = registry_index_find(&r->cidx, name)) != NULL)
		return d;
	if ((d = registry_index_find(&r->ridx, name)) != NULL && d->active)
		return d;
	return NULL;
}

struct registry *
registry_new(unsigned nworkers, const char *runtime_dir)
{
	struct registry *r;

	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->runtime_dir = strdup(runtime_dir)) == NULL) {
		free(r);
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->wlock, NULL);
	r->nworkers = nworkers;
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
	for (i = 0; i < r->nregd; i++)
		registry_deployment_free(r->regd[i]);
	for (i = 0; i < r->ngone; i++)
		registry_deployment_free(r->gone[i]);
	for (i = 0; i < r->neps; i++)
		registry_endpoint_free(r->eps[i]);
	free(r->deps);
	free(r->regd);
	free(r->gone);
	free(r->eps);
	free(r->cidx.b);
	free(r->ridx.b);
	free(r->runtime_dir);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->wlock);
	free(r);
}

void
registry_set_notify(struct registry *r, reg_notify_fn fn, void *arg)
{
	r->notify = fn;
	r->notify_arg = arg;
}

/* Building blocks for reloads and registration ------------------------ */

/* Same address, protocol and protocol settings (TLS included). */
static int
registry_same_endpoint(const struct reg_endpoint *ep, const char *text,
    const struct reg_epopts *o)
{
	const struct reg_http *a = &ep->http, *b = &o->http;

	if (strcmp(ep->addr.text, text) != 0 ||
	    strcmp(ep->protocol, o->protocol) != 0 || ep->tls_id != o->tls_id ||
	    memcmp(&ep->inproc, &o->inproc, sizeof(o->inproc)) != 0)
		return 0;
	return strcmp(a->health_path, b->health_path) == 0 &&
	    a->health_interval == b->health_interval &&
	    a->health_timeout == b->health_timeout &&
	    a->idle_timeout == b->idle_timeout && a->max_5xx == b->max_5xx &&
	    a->prewarm == b->prewarm &&
	    a->retry_idempotent == b->retry_idempotent;
}

/* An endpoint by address and options: an existing one, one planned
 * already, or new.  opts NULL: the wire protocol. */
struct reg_endpoint *
registry_plan_endpoint(struct registry *r, struct reg_endpoint ***fresh,
    unsigned *nfresh, const char *text, const char *id,
    const struct reg_epopts *opts, char *err, size_t errlen)
{
	static const struct reg_epopts wire;
	struct reg_endpoint *ep, **nf;
	unsigned i;

	if (opts == NULL)
		opts = &wire;
	for (i = 0; i < r->neps; i++) {
		if (registry_same_endpoint(r->eps[i], text, opts))
			return r->eps[i];
	}
	for (i = 0; i < *nfresh; i++) {
		if (registry_same_endpoint((*fresh)[i], text, opts))
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
	/* An in-process module has no address: the text names it. */
	if (strcmp(opts->protocol, "inproc") == 0)
		snprintf(ep->addr.text, sizeof(ep->addr.text), "%s", text);
	else if (net_addr_parse(text, &ep->addr, err, errlen) == -1) {
		registry_endpoint_free(ep);
		return NULL;
	}
	snprintf(ep->id, sizeof(ep->id), "%s", id);
	memcpy(ep->protocol, opts->protocol, sizeof(ep->protocol));
	ep->http = opts->http;
	ep->inproc = opts->inproc;
	ep->tls_id = opts->tls_id;
	nf[(*nfresh)++] = ep;
	return ep;
}

struct reg_deployment *
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


/* Lookups and figures -------------------------------------------------- */

void
registry_share_merge(struct reg_share *into, const struct reg_share *s)
{
	unsigned w = (unsigned)into->weight + s->weight;

	if (s->priority < into->priority)
		*into = *s;
	else if (s->priority == into->priority)
		into->weight = w > UINT16_MAX ? UINT16_MAX : (uint16_t)w;
}

/* The endpoints and their shares in one allocation: one free(). */
static struct reg_endpoint **
registry_lookup_alloc(const struct reg_deployment *d,
    struct reg_share **shares)
{
	struct reg_endpoint **eps;
	unsigned i, n = d->neps ? d->neps : 1;

	if ((eps = malloc(n * (sizeof(*eps) + sizeof(**shares)))) == NULL)
		return NULL;
	memcpy(eps, d->eps, d->neps * sizeof(*eps));
	*shares = (struct reg_share *)(eps + n);
	for (i = 0; i < d->neps; i++)
		(*shares)[i] = registry_share(d, i);
	return eps;
}

int
registry_lookup(struct registry *r, const char *name, struct reg_lookup *out)
{
	struct reg_deployment *d;
	int rv = -1;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&r->lock);
	if ((d = registry_find_live(r, name)) != NULL) {
		out->eps = registry_lookup_alloc(d, &out->shares);
		if (out->eps != NULL) {
			out->neps = d->neps;
			out->dep = d;
			out->version = d->version;
			out->queue_max = d->queue_max;
			out->queue_timeout = d->queue_timeout;
			out->request_timeout = d->request_timeout;
			out->prewarm = d->prewarm;
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

void
registry_count_eviction(struct reg_deployment *d)
{
	atomic_fetch_add_explicit(&d->evictions, 1, memory_order_relaxed);
}

void
registry_publish_pid(struct reg_endpoint *ep, int pid)
{
	atomic_store(&ep->pid, pid);
}

void
registry_count_restart(struct reg_endpoint *ep)
{
	atomic_fetch_add(&ep->restarts, 1);
}

const char *
registry_estate_str(int st)
{
	if (st < 0 || st >= REG_E_NSTATES)
		return "?";
	return estate_names[st];
}

/* A connection is as good as its state's rank: ready beats warming beats
 * connecting beats down beats idle. */
int
registry_estate_rank(int st)
{
	static const int rank[REG_E_NSTATES] = {
		[REG_E_IDLE] = 0, [REG_E_DOWN] = 1, [REG_E_CONNECTING] = 2,
		[REG_E_WARMING] = 3, [REG_E_READY] = 4,
	};

	if (st < 0 || st >= REG_E_NSTATES)
		return 0;
	return rank[st];
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
static void
registry_endpoint_figures(struct registry *r, struct reg_endpoint *ep,
    const char *id, int spawned, struct reg_share share,
    struct reg_replica_figures *f)
{
	int in_flight = 0, best = REG_E_IDLE, st;
	unsigned w;

	memset(f, 0, sizeof(*f));
	for (w = 0; w < r->nworkers; w++) {
		struct ep_stats *s = &ep->stats[w];

		f->pings += atomic_load_explicit(&s->pings,
		    memory_order_relaxed);
		f->pongs += atomic_load_explicit(&s->pongs,
		    memory_order_relaxed);
		f->missed_pongs += atomic_load_explicit(&s->missed_pongs,
		    memory_order_relaxed);
		f->requests += atomic_load_explicit(&s->requests,
		    memory_order_relaxed);
		f->health_passed += atomic_load_explicit(&s->health_passed,
		    memory_order_relaxed);
		f->health_failed += atomic_load_explicit(&s->health_failed,
		    memory_order_relaxed);
		f->conns_open += (unsigned)atomic_load_explicit(&s->conns_open,
		    memory_order_relaxed);
		f->conns_idle += (unsigned)atomic_load_explicit(&s->conns_idle,
		    memory_order_relaxed);
		in_flight += atomic_load_explicit(&s->in_flight,
		    memory_order_relaxed);
		st = atomic_load_explicit(&s->state, memory_order_relaxed);
		if (registry_estate_rank(st) > registry_estate_rank(best))
			best = st;
	}
	f->id = id;
	f->address = ep->addr.text;
	f->protocol = ep->protocol[0] != '\0' ? ep->protocol : "wire";
	f->weight = share.weight;
	f->priority = share.priority;
	f->state = (enum reg_estate)best;
	f->in_flight = in_flight > 0 ? (unsigned)in_flight : 0;
	f->pid = atomic_load(&ep->pid);
	f->spawned = spawned;
	f->restarts = atomic_load(&ep->restarts);
}

/*
 * A deployment is as good as its best worker's handle: ready beats
 * warming beats resolving beats failed beats idle (the enum's order is
 * not that: failed comes last in it).
 */
static int
registry_hstate_rank(int st)
{
	static const int rank[REG_H_NSTATES] = {
		[REG_H_IDLE] = 0, [REG_H_FAILED] = 1, [REG_H_RESOLVING] = 2,
		[REG_H_WARMING] = 3, [REG_H_READY] = 4,
	};

	return rank[st];
}

const char *
registry_hstate_str(int st)
{
	if (st < 0 || st >= REG_H_NSTATES)
		return "?";
	return hstate_names[st];
}

/* How many workers hold a handle in each state, and the best of them. */
static void
registry_handle_figures(struct registry *r, struct reg_deployment *d,
    struct reg_figures *f)
{
	unsigned i;
	int st, best = REG_H_IDLE;

	for (i = 0; i < r->nworkers; i++) {
		f->queued += atomic_load_explicit(&d->queued[i],
		    memory_order_relaxed);
		st = atomic_load_explicit(&d->hstate[i], memory_order_relaxed);
		if (st < 0 || st >= REG_H_NSTATES)
			continue;
		f->handles[st]++;
		if (registry_hstate_rank(st) > registry_hstate_rank(best))
			best = st;
	}
	f->state = (enum reg_hstate)best;
}

/* Under the mutex: d's figures to fn.  -1 when out of memory. */
static int
registry_deployment_figures(struct registry *r, struct reg_deployment *d,
    reg_figures_fn fn, void *arg)
{
	struct reg_replica_figures *reps;
	struct reg_figures f;
	unsigned i;

	if ((reps = calloc(d->neps ? d->neps : 1, sizeof(*reps))) == NULL)
		return -1;
	memset(&f, 0, sizeof(f));
	f.name = d->name;
	f.source = d->registered ? "register" : source_names[d->source];
	if (!d->registered && (d->source == CONF_DNS ||
	    d->source == CONF_DNS_SRV))
		f.dns = d->command;
	f.version = d->version;
	f.resolutions = atomic_load(&d->resolutions);
	f.evictions = atomic_load(&d->evictions);
	registry_handle_figures(r, d, &f);
	for (i = 0; i < d->neps; i++)
		registry_endpoint_figures(r, d->eps[i],
		    d->registered ? d->rids[i] : d->eps[i]->id,
		    d->source == CONF_SPAWN, registry_share(d, i), &reps[i]);
	f.replicas = reps;
	f.nreplicas = d->neps;
	fn(arg, &f);
	free(reps);
	return 0;
}

int
registry_figures(struct registry *r, const char *name, reg_figures_fn fn,
    void *arg)
{
	struct reg_deployment *d;
	unsigned i;
	int n = 0;

	pthread_mutex_lock(&r->lock);
	if (name != NULL) {
		if ((d = registry_find_live(r, name)) != NULL)
			n = registry_deployment_figures(r, d, fn, arg) == 0 ?
			    1 : -1;
		pthread_mutex_unlock(&r->lock);
		return n;
	}
	for (i = 0; i < r->ndeps && n != -1; i++)
		n = registry_deployment_figures(r, r->deps[i], fn, arg) == 0 ?
		    n + 1 : -1;
	for (i = 0; i < r->nregd && n != -1; i++) {
		if (r->regd[i]->active)
			n = registry_deployment_figures(r, r->regd[i], fn,
			    arg) == 0 ? n + 1 : -1;
	}
	pthread_mutex_unlock(&r->lock);
	return n;
}
