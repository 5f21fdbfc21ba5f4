/*
 * handle.c -- deployment names resolved on first use, cached per worker
 * (see handle.h).
 */
#include <stdlib.h>
#include <string.h>

#include "balance.h"
#include "conf.h"
#include "handle.h"
#include "log.h"
#include "registry.h"
#include "stream.h"
#include "upstream.h"
#include "worker.h"

struct handle {
	char		*name;
	struct worker	*w;
	struct reg_deployment *dep;
	enum reg_hstate	 state;
	struct upstream	**ups;
	unsigned	 nups;
	struct stream	*qhead, *qtail;	/* waiting for a replica */
	unsigned	 qlen;
	unsigned	 queue_max;
	double		 queue_timeout;
	double		 request_timeout;
	struct handle	*hnext;		/* hash chain */
};

struct handle_table {
	struct handle	**buckets;
	unsigned	 nbuckets;	/* a power of two */
	unsigned	 count;
};

/* FNV-1a: names are short and trusted to be few per bucket. */
static uint32_t
handle_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s != '\0')
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

struct handle_table *
handle_table_new(void)
{
	struct handle_table *t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->nbuckets = 64;
	if ((t->buckets = calloc(t->nbuckets, sizeof(*t->buckets))) == NULL) {
		free(t);
		return NULL;
	}
	return t;
}

static void
handle_free(struct handle *h)
{
	unsigned i;

	for (i = 0; i < h->nups; i++)
		upstream_unwatch(h->ups[i], h);
	free(h->ups);
	free(h->name);
	free(h);
}

void
handle_table_free(struct handle_table *t)
{
	struct handle *h, *next;
	unsigned i;

	if (t == NULL)
		return;
	for (i = 0; i < t->nbuckets; i++) {
		for (h = t->buckets[i]; h != NULL; h = next) {
			next = h->hnext;
			handle_free(h);
		}
	}
	free(t->buckets);
	free(t);
}

static void
handle_table_grow(struct handle_table *t)
{
	struct handle **nb, *h, *next;
	unsigned i, n = t->nbuckets * 2;

	if ((nb = calloc(n, sizeof(*nb))) == NULL)
		return;		/* longer chains, still correct */
	for (i = 0; i < t->nbuckets; i++) {
		for (h = t->buckets[i]; h != NULL; h = next) {
			next = h->hnext;
			h->hnext = nb[handle_hash(h->name) & (n - 1)];
			nb[handle_hash(h->name) & (n - 1)] = h;
		}
	}
	free(t->buckets);
	t->buckets = nb;
	t->nbuckets = n;
}

static void
handle_set_state(struct handle *h, enum reg_hstate st)
{
	if (h->state == st)
		return;
	log_debug("worker %u: %s: %d -> %d", worker_id(h->w), h->name,
	    h->state, st);
	h->state = st;
	registry_publish_hstate(h->dep, worker_id(h->w), st);
}

/* READY if any replica is; FAILED only while none is even trying. */
static void
handle_update_state(struct handle *h)
{
	unsigned i;
	int ready = 0;

	for (i = 0; i < h->nups; i++)
		ready |= upstream_is_ready(h->ups[i]);
	handle_set_state(h, ready ? REG_H_READY :
	    h->nups == 0 ? REG_H_FAILED : REG_H_WARMING);
}

/* RESOLVING -> WARMING: ask the registry, then connect to each replica. */
static struct handle *
handle_resolve(struct worker *w, const char *name)
{
	struct reg_lookup lk;
	struct handle *h;
	unsigned i;

	if (registry_lookup(worker_registry(w), name, &lk) == -1)
		return NULL;
	if ((h = calloc(1, sizeof(*h))) == NULL ||
	    (h->name = strdup(name)) == NULL ||
	    (h->ups = calloc(lk.neps ? lk.neps : 1, sizeof(*h->ups))) == NULL) {
		if (h != NULL)
			free(h->name);
		free(h);
		free(lk.eps);
		return NULL;
	}
	h->w = w;
	h->dep = lk.dep;
	h->queue_max = lk.queue_max;
	h->queue_timeout = lk.queue_timeout > 0 ? lk.queue_timeout :
	    worker_conf(w)->timeouts.queue;
	h->request_timeout = lk.request_timeout > 0 ? lk.request_timeout :
	    worker_conf(w)->timeouts.request;
	handle_set_state(h, REG_H_RESOLVING);
	for (i = 0; i < lk.neps; i++) {
		if ((h->ups[h->nups] = upstream_get(w, lk.eps[i])) == NULL)
			continue;
		upstream_watch(h->ups[h->nups++], h);
	}
	free(lk.eps);
	handle_update_state(h);
	log_debug("worker %u: resolved %s: %u replicas", worker_id(w), name,
	    h->nups);
	return h;
}

struct handle *
handle_get(struct worker *w, const char *name)
{
	struct handle_table *t = worker_handles(w);
	struct handle *h;
	uint32_t hv = handle_hash(name);

	for (h = t->buckets[hv & (t->nbuckets - 1)]; h != NULL; h = h->hnext) {
		if (strcmp(h->name, name) == 0)
			return h;
	}
	if ((h = handle_resolve(w, name)) == NULL)
		return NULL;
	if (t->count >= t->nbuckets)
		handle_table_grow(t);
	h->hnext = t->buckets[hv & (t->nbuckets - 1)];
	t->buckets[hv & (t->nbuckets - 1)] = h;
	t->count++;
	return h;
}

const char *
handle_name(const struct handle *h)
{
	return h->name;
}

double
handle_request_timeout(const struct handle *h)
{
	return h->request_timeout;
}

static int
handle_try_attach(struct handle *h, struct stream *s)
{
	struct balance_cand cand[64];
	unsigned i, n = h->nups < 64 ? h->nups : 64;
	int k;

	for (i = 0; i < n; i++) {
		cand[i].ready = upstream_is_ready(h->ups[i]);
		cand[i].load = upstream_in_flight(h->ups[i]);
		cand[i].cap = upstream_capacity(h->ups[i]);
	}
	if ((k = balance_pick(cand, n, worker_rng(h->w))) == -1)
		return -1;
	return upstream_attach(h->ups[k], s);
}

void
handle_submit(struct handle *h, struct stream *s)
{
	if (h->qlen == 0 && handle_try_attach(h, s) == 0)
		return;
	if (h->qlen >= h->queue_max) {
		stream_on_fail(s, 503, "queue full");
		return;
	}
	stream_queue_set_next(s, NULL);
	if (h->qtail != NULL)
		stream_queue_set_next(h->qtail, s);
	else
		h->qhead = s;
	h->qtail = s;
	h->qlen++;
	stream_queued(s, h, h->queue_timeout < h->request_timeout ?
	    h->queue_timeout : h->request_timeout);
}

void
handle_dequeue(struct handle *h, struct stream *s)
{
	struct stream *p = NULL, *q;

	for (q = h->qhead; q != NULL; p = q, q = stream_queue_next(q)) {
		if (q != s)
			continue;
		if (p != NULL)
			stream_queue_set_next(p, stream_queue_next(q));
		else
			h->qhead = stream_queue_next(q);
		if (h->qtail == q)
			h->qtail = p;
		h->qlen--;
		stream_unqueued(s);
		return;
	}
}

/* Attach waiting streams, oldest first, while replicas have room.  A
 * stream leaves the queue only once attached, so a failed try keeps its
 * place and its deadline. */
static void
handle_dispatch(struct handle *h)
{
	struct stream *s;

	while ((s = h->qhead) != NULL) {
		if (handle_try_attach(h, s) == -1)
			return;
		h->qhead = stream_queue_next(s);
		if (h->qhead == NULL)
			h->qtail = NULL;
		h->qlen--;
	}
}

void
handle_upstream_event(struct handle *h, struct upstream *up)
{
	handle_update_state(h);
	if (h->qhead != NULL)
		handle_dispatch(h);
}

/* Reload (see docs/operations.md) ------------------------------------- */

static struct handle *
handle_find(struct handle_table *t, const char *name)
{
	struct handle *h;

	for (h = t->buckets[handle_hash(name) & (t->nbuckets - 1)]; h != NULL;
	    h = h->hnext) {
		if (strcmp(h->name, name) == 0)
			return h;
	}
	return NULL;
}

/*
 * The deployment changed in the registry: resolve again in place, so the
 * handle keeps its queue and the streams that point at it.  Connections
 * to addresses it still uses stay warm (upstreams are per worker and
 * address).  Every old watch is dropped and every new one taken, so the
 * watch counts stay exact even with an address listed twice.
 */
int
handle_refresh(struct worker *w, const char *name)
{
	struct reg_lookup lk;
	struct upstream **ups;
	struct handle *h;
	unsigned i, n = 0;

	if ((h = handle_find(worker_handles(w), name)) == NULL)
		return 0;
	if (registry_lookup(worker_registry(w), name, &lk) == -1)
		return -1;
	if ((ups = calloc(lk.neps ? lk.neps : 1, sizeof(*ups))) == NULL) {
		free(lk.eps);
		return -1;
	}
	for (i = 0; i < lk.neps; i++) {
		if ((ups[n] = upstream_get(w, lk.eps[i])) != NULL)
			n++;
	}
	free(lk.eps);
	for (i = 0; i < h->nups; i++)
		upstream_unwatch(h->ups[i], h);
	for (i = 0; i < n; i++)
		upstream_watch(ups[i], h);
	free(h->ups);
	h->ups = ups;
	h->nups = n;
	h->dep = lk.dep;
	h->queue_max = lk.queue_max;
	h->queue_timeout = lk.queue_timeout > 0 ? lk.queue_timeout :
	    worker_conf(w)->timeouts.queue;
	h->request_timeout = lk.request_timeout > 0 ? lk.request_timeout :
	    worker_conf(w)->timeouts.request;
	log_debug("worker %u: resolved %s again: %u replicas", worker_id(w),
	    name, n);
	handle_update_state(h);
	if (h->qhead != NULL)
		handle_dispatch(h);
	return 1;
}

/* Take the handle out of the table (its deployment was removed): new
 * requests cannot find it; queued and running ones still use it. */
struct handle *
handle_detach(struct worker *w, const char *name)
{
	struct handle_table *t = worker_handles(w);
	struct handle **pp, *h;

	pp = &t->buckets[handle_hash(name) & (t->nbuckets - 1)];
	for (; (h = *pp) != NULL; pp = &h->hnext) {
		if (strcmp(h->name, name) == 0) {
			*pp = h->hnext;
			h->hnext = NULL;
			t->count--;
			return h;
		}
	}
	return NULL;
}

/*
 * Nothing can point at a detached handle any more: none queued, and none
 * in flight on its replicas (a running stream retries through its handle).
 * Conservative: another name's streams on a shared replica count too.
 */
int
handle_is_idle(const struct handle *h)
{
	unsigned i;

	if (h->qlen > 0)
		return 0;
	for (i = 0; i < h->nups; i++) {
		if (upstream_in_flight(h->ups[i]) > 0)
			return 0;
	}
	return 1;
}

void
handle_release(struct handle *h)
{
	handle_free(h);
}

/* Queue depths for the metrics, per deployment (the worker's tick). */
void
handle_table_publish(struct worker *w)
{
	struct handle_table *t = worker_handles(w);
	struct handle *h;
	unsigned i;

	for (i = 0; i < t->nbuckets; i++) {
		for (h = t->buckets[i]; h != NULL; h = h->hnext)
			registry_publish_queued(h->dep, worker_id(w), h->qlen);
	}
}
