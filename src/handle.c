/*
 * handle.c -- deployment names resolved on first use, cached per worker
 * (see handle.h).
 *
 * Cost per handle: this struct with its name, and for each replica a
 * connection pointer, its edge's ops (upconn.h: the handle names no edge),
 * the node linking the handle into that connection's watch list (O(1) in
 * and out, however many names share the replica) and its weight and
 * priority in this name: 64 bytes.
 * Idle handles do nothing at all; the worker's tick looks only at the old
 * end of the LRU list.
 *
 * Lifetime: the table (or, once detached, the worker's orphan list) owns
 * a handle; streams hold it (refs) from submit to free, because a queued
 * or running stream comes back to its handle to retry.  Only a handle
 * nobody holds is freed, and never from inside a stream callback.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balance.h"
#include "conf.h"
#include "handle.h"
#include "hash.h"
#include "log.h"
#include "metrics.h"
#include "monotime.h"
#include "registry.h"
#include "stream.h"
#include "upconn.h"
#include "wctx.h"

/* One replica of the handle: its connection and the handle's watch on it
 * (linked while the handle uses it; never moved meanwhile), and its share
 * of the name (read only when the handle is weighted). */
struct handle_up {
	const struct upconn_ops *ops;	/* its edge, by the endpoint's protocol */
	struct upconn	*up;
	struct upconn_watch watch;
	uint32_t	 weight;	/* balance_weight()'s */
	unsigned	 priority;
};

/*
 * What every request reads or writes comes first, in one cache line, and
 * the name starts a line of its own (the handle is allocated on a line):
 * with thousands of names in use a handle is seldom in the CPU's caches,
 * so each line a request touches is a miss (issue 17, docs/performance.md
 * "Hot set of names"); a name that straddled two lines cost two.  The
 * rest is read on resolution, queueing and expiry only.
 */
#define HANDLE_LINE	64	/* a cache line */

struct handle {
	struct handle	*hnext;		/* hash chain */
	uint32_t	 hv;		/* hash_name(name) */
	unsigned	 refs;		/* streams pointing here */
	double		 used;		/* last handle_get(), monotonic */
	double		 listed;	/* when last put at the LRU's head */
	struct handle_up *ups;
	unsigned	 nups:31;
	unsigned	 weighted:1;	/* unequal weights or priorities */
	unsigned	 qlen;
	double		 request_timeout;
	struct wctx	*w;		/* the worker's context */
	/* cold */
	struct reg_deployment *dep;
	enum reg_hstate	 state;
	unsigned	 queue_max;
	TAILQ_HEAD(, stream_qent) queue; /* waiting for a replica */
	double		 queue_timeout;
	TAILQ_ENTRY(handle) lru;	/* LRU list, by listed, newest first */
	unsigned	 detached:1;	/* out of the table: publishes nothing */
	unsigned	 pinned:1;	/* prewarm: never expires */
	_Alignas(HANDLE_LINE) char name[];
};

struct handle_table {
	struct handle	**buckets;
	unsigned	 nbuckets;	/* a power of two */
	unsigned	 count;
	TAILQ_HEAD(handle_lru, handle) lru; /* most recent at the head */
};

struct handle_table *
handle_table_new(void)
{
	struct handle_table *t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	TAILQ_INIT(&t->lru);
	t->nbuckets = 64;
	if ((t->buckets = calloc(t->nbuckets, sizeof(*t->buckets))) == NULL) {
		free(t);
		return NULL;
	}
	return t;
}

/* Drop the watches; an upstream no handle watches any more is released
 * (unless the worker is going away and frees them all anyway). */
static void
handle_unwatch_all(struct handle_up *ups, unsigned n, int release)
{
	unsigned i;

	for (i = 0; i < n; i++)
		ups[i].ops->unwatch(ups[i].up, &ups[i].watch);
	for (i = 0; release && i < n; i++)
		ups[i].ops->release(ups[i].up);
}

/* The replica array made with the handle, right after its name: on the
 * name's cache line for a short name.  A refresh allocates a new one. */
static size_t
handle_ups_offset(size_t len)
{
	size_t off = offsetof(struct handle, name) + len + 1;
	size_t a = _Alignof(struct handle_up);

	return (off + a - 1) / a * a;
}

static struct handle_up *
handle_ups_inline(struct handle *h, size_t len)
{
	return (struct handle_up *)((char *)h + handle_ups_offset(len));
}

static void
handle_ups_free(struct handle *h, struct handle_up *ups)
{
	if (ups != handle_ups_inline(h, strlen(h->name)))
		free(ups);
}

static void
handle_free(struct handle *h, int release)
{
	handle_unwatch_all(h->ups, h->nups, release);
	handle_ups_free(h, h->ups);
	free(h);
}

void
handle_table_free(struct handle_table *t)
{
	struct handle *h, *next;

	if (t == NULL)
		return;
	for (h = TAILQ_FIRST(&t->lru); h != NULL; h = next) {
		next = TAILQ_NEXT(h, lru);
		handle_free(h, 0);
	}
	free(t->buckets);
	free(t);
}

static void
handle_table_grow(struct handle_table *t)
{
	struct handle **nb, *h, *next;
	unsigned i, k, n = t->nbuckets * 2;

	if ((nb = calloc(n, sizeof(*nb))) == NULL)
		return;		/* longer chains, still correct */
	for (i = 0; i < t->nbuckets; i++) {
		for (h = t->buckets[i]; h != NULL; h = next) {
			next = h->hnext;
			k = h->hv & (n - 1);
			h->hnext = nb[k];
			nb[k] = h;
		}
	}
	free(t->buckets);
	t->buckets = nb;
	t->nbuckets = n;
}

/*
 * The LRU list is kept in order of `listed', not of `used': moving a
 * handle to the head on every request wrote to its two neighbours and the
 * old head, three more cache lines a request when many names are busy.
 * A request only stamps `used' (handle_get); the expiry walk moves a
 * handle used since it was listed when it reaches the old end.  Since
 * listed <= used, every handle idle past the ttl is in the part of the
 * list the walk looks at (listed older than the ttl), so expiry is as
 * exact as before, and a busy handle is moved once per ttl.
 */
static void
handle_relist(struct handle_table *t, struct handle *h, double now)
{
	h->listed = now;
	if (TAILQ_FIRST(&t->lru) == h)
		return;
	TAILQ_REMOVE(&t->lru, h, lru);
	TAILQ_INSERT_HEAD(&t->lru, h, lru);
}

static void
handle_set_state(struct handle *h, enum reg_hstate st)
{
	if (h->state == st)
		return;
	log_debug("worker %u: %s: %d -> %d", h->w->id, h->name,
	    h->state, st);
	h->state = st;
	if (!h->detached)
		registry_publish_hstate(h->dep, h->w->id, st);
}

static void
handle_publish_queue(struct handle *h)
{
	if (!h->detached)
		registry_publish_queued(h->dep, h->w->id, h->qlen);
}

/* READY if any replica is; FAILED only while none is even trying. */
static void
handle_update_state(struct handle *h)
{
	unsigned i;
	int ready = 0;

	for (i = 0; i < h->nups; i++)
		ready |= h->ups[i].ops->is_ready(h->ups[i].up);
	handle_set_state(h, ready ? REG_H_READY :
	    h->nups == 0 ? REG_H_FAILED : REG_H_WARMING);
}

/* The settings a lookup gave, 0 meaning the conf's defaults. */
static void
handle_settings(struct handle *h, const struct reg_lookup *lk)
{
	const struct conf *conf = h->w->conf;

	h->dep = lk->dep;
	h->queue_max = lk->queue_max;
	h->queue_timeout = lk->queue_timeout > 0 ? lk->queue_timeout :
	    conf->timeouts.queue;
	h->request_timeout = lk->request_timeout > 0 ? lk->request_timeout :
	    conf->timeouts.request;
	h->pinned = lk->prewarm != 0;
}

static void	handle_upstream_event(struct handle *, struct upconn *);
static const struct stream_queue handle_queue;

/*
 * Whether ups differ in weight or priority: only then does balance read
 * them (balance_pick_weighted); otherwise the plain pick, which is what
 * equal weights on one level come to (balance.h) and what every request
 * paid before weights.
 */
static int
handle_is_weighted(const struct handle_up *ups, unsigned n)
{
	unsigned i;

	for (i = 1; i < n; i++) {
		if (ups[i].weight != ups[0].weight ||
		    ups[i].priority != ups[0].priority)
			return 1;
	}
	return 0;
}

/* Replica u is listed again with share s (two registered ids at one
 * address, say): registry_share_merge's rule, on balance's weights. */
static void
handle_merge(struct handle_up *u, const struct reg_share *s)
{
	uint64_t w = (uint64_t)u->weight + balance_weight(s->weight);

	if (s->priority < u->priority) {
		u->priority = s->priority;
		u->weight = balance_weight(s->weight);
	} else if (s->priority == u->priority)
		u->weight = w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
}

/* This worker's connections to the endpoints, each watched by h once
 * (an address listed twice is one replica), in ups (lk->neps zeroed
 * slots); how many. */
static unsigned
handle_connect(struct handle *h, const struct reg_lookup *lk,
    struct handle_up *ups)
{
	const struct upconn_ops *ops;
	struct upconn *up;
	unsigned i, j, n = 0;

	for (i = 0; i < lk->neps; i++) {
		/* An endpoint whose protocol has no edge is left out, as one
		 * that cannot be reached (the conf check refuses it first). */
		if ((ops = upconn_find(lk->eps[i]->protocol)) == NULL ||
		    (up = ops->get(h->w, lk->eps[i])) == NULL)
			continue;
		for (j = 0; j < n && ups[j].up != up; j++)
			continue;
		if (j < n) {
			handle_merge(&ups[j], &lk->shares[i]);
			continue;
		}
		ups[n].ops = ops;
		ups[n].up = up;
		ups[n].watch.h = h;
		ups[n].watch.event = handle_upstream_event;
		ups[n].weight = balance_weight(lk->shares[i].weight);
		ups[n].priority = lk->shares[i].priority;
		ops->watch(up, &ups[n].watch);
		n++;
	}
	return n;
}

/* Requests are queued (or no longer): hear when a full replica frees a
 * slot (or stop hearing it). */
static void
handle_set_waiting(struct handle *h, int waiting)
{
	unsigned i;

	for (i = 0; i < h->nups; i++)
		h->ups[i].ops->wait(h->ups[i].up, &h->ups[i].watch, waiting);
}

/* RESOLVING -> WARMING: ask the registry, then connect to each replica. */
static struct handle *
handle_resolve(struct wctx *w, const char *name)
{
	struct reg_lookup lk;
	struct handle *h;
	size_t len = strlen(name), size;

	if (registry_lookup(w->reg, name, &lk) == -1)
		return NULL;
	/* The replicas after the name; aligned_alloc wants a multiple of
	 * the alignment. */
	size = handle_ups_offset(len) + lk.neps * sizeof(struct handle_up);
	size = (size + HANDLE_LINE - 1) & ~(size_t)(HANDLE_LINE - 1);
	if ((h = aligned_alloc(HANDLE_LINE, size)) == NULL) {
		free(lk.eps);
		return NULL;
	}
	memset(h, 0, size);
	memcpy(h->name, name, len + 1);
	h->w = w;
	TAILQ_INIT(&h->queue);
	handle_settings(h, &lk);
	handle_set_state(h, REG_H_RESOLVING);
	h->ups = handle_ups_inline(h, len);
	h->nups = handle_connect(h, &lk, h->ups);
	h->weighted = handle_is_weighted(h->ups, h->nups);
	free(lk.eps);
	handle_update_state(h);
	log_debug("worker %u: resolved %s: %u replicas", w->id, name,
	    h->nups);
	return h;
}

static struct handle *
handle_find(struct handle_table *t, const char *name, uint32_t hv)
{
	struct handle *h;

	for (h = t->buckets[hv & (t->nbuckets - 1)]; h != NULL; h = h->hnext) {
		/* The name is on another cache line: ask for it early. */
		__builtin_prefetch(h->name);
		if (h->hv == hv && strcmp(h->name, name) == 0)
			return h;
	}
	return NULL;
}

struct handle *
handle_get(struct wctx *w, const char *name)
{
	struct handle_table *t = w->handles;
	struct handle *h;
	uint32_t hv = hash_name(name), k;

	if ((h = handle_find(t, name, hv)) != NULL) {
		/* handle_submit() reads the replicas next. */
		__builtin_prefetch(h->ups);
		h->used = monotime_coarse();
		return h;
	}
	if ((h = handle_resolve(w, name)) == NULL)
		return NULL;
	if (t->count >= t->nbuckets)
		handle_table_grow(t);
	h->hv = hv;
	k = hv & (t->nbuckets - 1);
	h->hnext = t->buckets[k];
	t->buckets[k] = h;
	t->count++;
	h->used = h->listed = monotime_coarse();
	TAILQ_INSERT_HEAD(&t->lru, h, lru);
	return h;
}

const char *
handle_name(const struct handle *h)
{
	return h->name;
}

int
handle_has_ready(const struct handle *h)
{
	unsigned i;

	for (i = 0; i < h->nups; i++)
		if (h->ups[i].ops->is_ready(h->ups[i].up))
			return 1;
	return 0;
}

double
handle_request_timeout(const struct handle *h)
{
	return h->request_timeout;
}

void
handle_hold(struct handle *h)
{
	h->refs++;
}

void
handle_drop(struct handle *h)
{
	h->refs--;
}

static int
handle_try_attach(struct handle *h, struct stream *s)
{
	struct balance_cand stack[64], *cand = stack;
	unsigned i, n = h->nups;
	int k;

	if (n == 0)
		return -1;
	/* Every replica is a candidate; only very large deployments pay
	 * for an allocation. */
	if (n > 64 && (cand = calloc(n, sizeof(*cand))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		const struct handle_up *u = &h->ups[i];

		cand[i].ready = u->ops->is_ready(u->up);
		cand[i].load = u->ops->in_flight(u->up);
		cand[i].cap = u->ops->capacity(u->up);
	}
	if (!h->weighted)
		k = balance_pick(cand, n, &h->w->rng);
	else {
		for (i = 0; i < n; i++) {
			cand[i].weight = h->ups[i].weight;
			cand[i].priority = h->ups[i].priority;
		}
		k = balance_pick_weighted(cand, n, &h->w->rng);
	}
	if (cand != stack)
		free(cand);
	if (k == -1)
		return -1;
	return h->ups[k].ops->attach(h->ups[k].up, s);
}

void
handle_submit(struct handle *h, struct stream *s)
{
	/* Retries come back here, and a queued stream leaves through it. */
	stream_set_queue(s, &handle_queue, h);
	if (h->qlen == 0 && handle_try_attach(h, s) == 0)
		return;
	if (h->qlen >= h->queue_max) {
		char why[320];

		snprintf(why, sizeof(why), "the wait queue of deployment "
		    "'%s' is full", h->name);
		stream_on_reject(s, REJECT_QUEUE_FULL, 503, why);
		return;
	}
	TAILQ_INSERT_TAIL(&h->queue, stream_qent(s), link);
	if (h->qlen++ == 0)
		handle_set_waiting(h, 1);
	handle_publish_queue(h);
	stream_queued(s, h->queue_timeout < h->request_timeout ?
	    h->queue_timeout : h->request_timeout);
}

static void
handle_dequeue(struct handle *h, struct stream *s)
{
	/* O(1): the stream says it is queued, and only here. */
	TAILQ_REMOVE(&h->queue, stream_qent(s), link);
	if (--h->qlen == 0)
		handle_set_waiting(h, 0);
	handle_publish_queue(h);
	stream_unqueued(s);
}

static void
handle_queue_requeue(void *q, struct stream *s)
{
	handle_submit(q, s);
}

static void
handle_queue_leave(void *q, struct stream *s)
{
	handle_dequeue(q, s);
}

/* A queued stream's queue_timeout passed: it leaves and gets a 503 that
 * says whether replicas were busy or none was ready. */
static void
handle_queue_expire(void *q, struct stream *s)
{
	struct handle *h = q;
	char why[320];
	int ready = handle_has_ready(h);

	handle_dequeue(h, s);
	if (ready)
		snprintf(why, sizeof(why), "every replica of deployment '%s' "
		    "stayed busy past the queue timeout", handle_name(h));
	else
		snprintf(why, sizeof(why), "no replica of deployment '%s' is "
		    "ready", handle_name(h));
	stream_on_reject(s, ready ? REJECT_QUEUE_TIMEOUT : REJECT_NO_REPLICA,
	    503, why);
}

/* What a stream submitted here calls to come back or leave (stream.h). */
static const struct stream_queue handle_queue = {
	.requeue = handle_queue_requeue,
	.leave = handle_queue_leave,
	.expire = handle_queue_expire,
};

/* Attach waiting streams, oldest first, while replicas have room.  A
 * failed try puts the stream back in front, so it keeps its place and its
 * deadline. */
static void
handle_dispatch(struct handle *h)
{
	struct stream_qent *e;
	unsigned before = h->qlen;

	while ((e = TAILQ_FIRST(&h->queue)) != NULL) {
		/* Out of the queue before the try: an attach may fail the
		 * stream, and a failed stream is freed by its owner at once.
		 * Nothing the attach calls looks at this queue (the stream
		 * is attached or done before any callback runs). */
		TAILQ_REMOVE(&h->queue, e, link);
		if (handle_try_attach(h, e->s) == -1) {
			TAILQ_INSERT_HEAD(&h->queue, e, link);
			break;
		}
		h->qlen--;
	}
	if (h->qlen == before)
		return;
	if (h->qlen == 0)
		handle_set_waiting(h, 0);
	handle_publish_queue(h);
}

/* An upstream it watches changed state or freed a slot (its watch's
 * event callback). */
static void
handle_upstream_event(struct handle *h, struct upconn *up)
{
	handle_update_state(h);
	if (!TAILQ_EMPTY(&h->queue))
		handle_dispatch(h);
}

/* Changes pushed by the registry ---------------------------------------- */

/*
 * The deployment changed in the registry: resolve again in place, so the
 * handle keeps its queue and the streams that point at it.  The new
 * watches are taken before the old ones are dropped, so a replica the
 * name keeps is never released and its connection stays warm; a replica
 * the name lost is released once no other name uses it (its open streams
 * finish first).  A new replica carries traffic only once its PONG came.
 */
int
handle_refresh(struct wctx *w, const char *name)
{
	struct reg_lookup lk;
	struct handle_up *ups, *old;
	struct handle *h;
	unsigned n, nold;

	if ((h = handle_find(w->handles, name, hash_name(name))) == NULL)
		return 0;
	if (registry_lookup(w->reg, name, &lk) == -1)
		return -1;
	if ((ups = calloc(lk.neps ? lk.neps : 1, sizeof(*ups))) == NULL) {
		free(lk.eps);
		return 1;	/* out of memory: keep the old set */
	}
	n = handle_connect(h, &lk, ups);
	free(lk.eps);
	old = h->ups;
	nold = h->nups;
	h->ups = ups;
	h->nups = n;
	h->weighted = handle_is_weighted(ups, n);
	if (h->qlen > 0)
		handle_set_waiting(h, 1);
	handle_unwatch_all(old, nold, 1);
	handle_ups_free(h, old);
	if (lk.dep != h->dep) {
		/* The name moved (the conf took it over from registration):
		 * the figures follow it. */
		registry_publish_hstate(h->dep, w->id, REG_H_IDLE);
		registry_publish_queued(h->dep, w->id, 0);
		h->state = REG_H_IDLE;
	}
	handle_settings(h, &lk);
	handle_publish_queue(h);
	log_debug("worker %u: resolved %s again: %u replicas (version %u)",
	    w->id, name, n, lk.version);
	handle_update_state(h);
	if (!TAILQ_EMPTY(&h->queue))
		handle_dispatch(h);
	return 1;
}

/* Out of the hash chain and the LRU list; nothing else changes. */
static void
handle_unlink(struct handle_table *t, struct handle *h)
{
	struct handle **pp;

	pp = &t->buckets[h->hv & (t->nbuckets - 1)];
	for (; *pp != NULL; pp = &(*pp)->hnext) {
		if (*pp == h) {
			*pp = h->hnext;
			break;
		}
	}
	h->hnext = NULL;
	TAILQ_REMOVE(&t->lru, h, lru);
	t->count--;
}

/* Take the handle out of the table (its deployment was removed): new
 * requests cannot find it; queued and running ones still use it. */
struct handle *
handle_detach(struct wctx *w, const char *name)
{
	struct handle_table *t = w->handles;
	struct handle *h;

	if ((h = handle_find(t, name, hash_name(name))) == NULL)
		return NULL;
	handle_unlink(t, h);
	registry_publish_hstate(h->dep, w->id, REG_H_IDLE);
	registry_publish_queued(h->dep, w->id, 0);
	h->detached = 1;
	return h;
}

/* No stream points at it any more. */
int
handle_is_idle(const struct handle *h)
{
	return h->refs == 0;
}

void
handle_release(struct handle *h)
{
	handle_free(h, 1);
}

/* Idle expiry ---------------------------------------------------------- */

static void
handle_evict(struct handle_table *t, struct handle *h)
{
	handle_unlink(t, h);
	registry_publish_hstate(h->dep, h->w->id, REG_H_IDLE);
	registry_count_eviction(h->dep);
	metrics_handle_evicted(h->w->metrics);
	handle_free(h, 1);
}

/*
 * From the LRU list's old end, while handles were listed longer than ttl
 * ago.  One used since goes to the front; one idle but in use (a stream
 * holds it, or prewarm pins it) counts as used now and goes to the front
 * too, so the walk sees each handle once.
 */
unsigned
handle_table_expire(struct wctx *w, double ttl)
{
	struct handle_table *t = w->handles;
	struct handle *h;
	double now, t0;
	unsigned n = 0;

	if (ttl <= 0)
		return 0;
	now = monotime_coarse();
	t0 = monotime_now();
	while ((h = TAILQ_LAST(&t->lru, handle_lru)) != NULL &&
	    now - h->listed >= ttl) {
		if (now - h->used < ttl) {
			handle_relist(t, h, now);
			continue;
		}
		if (h->refs > 0 || h->pinned) {
			h->used = now;
			handle_relist(t, h, now);
			continue;
		}
		handle_evict(t, h);
		n++;
	}
	if (n > 0)
		log_debug("worker %u: %u idle handle(s) freed in %.2f ms",
		    w->id, n, (monotime_now() - t0) * 1e3);
	return n;
}
