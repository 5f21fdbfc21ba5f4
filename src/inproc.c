/*
 * inproc.c -- the in-process upstream edge (see inproc.h): a worker's
 * instances of replica modules, as the core sees them (upconn ops), and
 * the run queue through which their handlers hear of requests.
 *
 * Why a run queue and not a call from attach or from the carrier: the
 * core's contracts forbid calling back into a stream from inside attach
 * (other than answering it) and from inside the carrier's ops, and a
 * handler answers by calling the stream.  So attach and the carrier only
 * record what happened and queue the req; the instance's one event, made
 * active by hand (no system call), delivers every queued req's events in
 * the same loop pass, from the top of the loop, where a handler may call
 * anything -- as the wire edge's read loop does with frames.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "conf.h"
#include "inproc.h"
#include "inproc_impl.h"
#include "inproc_mod.h"
#include "log.h"
#include "registry.h"
#include "registry_publish.h"
#include "stream.h"
#include "wctx.h"

LIST_HEAD(inproc_list, inproc);

static int inproc_slot = -1;		/* ours in wctx.edge_pool */

/* The stall watchdog's view of each worker: inside a module call? */
struct inproc_busy {
	_Atomic int	 in;
	const struct inproc *last;	/* the worker's own: whose name */
	char		 name[400];
};
static struct inproc_busy inproc_busy[CONF_MAX_WORKERS];

static void
inproc_enter(struct inproc *ip)
{
	struct inproc_busy *b = &inproc_busy[ip->w->id % CONF_MAX_WORKERS];

	if (b->last != ip) {
		b->last = ip;
		snprintf(b->name, sizeof(b->name), "%s (replica %s)",
		    ip->ep->inproc.module, ip->ep->id);
	}
	atomic_store_explicit(&b->in, 1, memory_order_release);
}

static void
inproc_leave(struct inproc *ip)
{
	atomic_store_explicit(&inproc_busy[ip->w->id % CONF_MAX_WORKERS].in,
	    0, memory_order_release);
}

int
inproc_running(unsigned worker, char *buf, size_t len)
{
	struct inproc_busy *b = &inproc_busy[worker % CONF_MAX_WORKERS];

	if (!atomic_load_explicit(&b->in, memory_order_acquire))
		return 0;
	snprintf(buf, len, "%s", b->name);
	return 1;
}

/* The handles on one list hear of a change. */
static void
inproc_tell_list(struct inproc *ip, struct upconn_watch *w)
{
	struct upconn_watch *next;

	for (; w != NULL; w = next) {
		next = LIST_NEXT(w, link);
		w->event(w->h, (struct upconn *)ip);
	}
}

static void
inproc_publish(struct inproc *ip)
{
	registry_publish_in_flight(ip->st, ip->in_flight);
}

static void	inproc_park(struct inproc *);

/* The run queue ---------------------------------------------------------- */

static void
inproc_sched(struct inproc_req *q)
{
	struct inproc *ip = q->ip;

	if (q->queued)
		return;
	q->queued = 1;
	TAILQ_INSERT_TAIL(&ip->runq, q, run);
	event_active(ip->kick, EV_READ, 0);
}

static void
inproc_unsched(struct inproc_req *q)
{
	if (!q->queued)
		return;
	TAILQ_REMOVE(&q->ip->runq, q, run);
	q->queued = 0;
}

static void
inproc_kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct inproc *ip = arg;
	struct inproc_req *q;

	while ((q = TAILQ_FIRST(&ip->runq)) != NULL) {
		inproc_unsched(q);
		inproc_req_run(q);	/* may free q */
	}
	if (ip->released && ip->nreqs == 0)
		inproc_park(ip);
}

/*
 * Parked only from the run queue's event, never where it became due: the
 * last request may end inside the module's own code (a timer of its that
 * answered), and closing the module there would return into unmapped
 * code.
 */
static void
inproc_park_later(struct inproc *ip)
{
	event_active(ip->kick, EV_READ, 0);
}

/* Instances: start, park, free ----------------------------------------- */

/* The module's args as an argv (pointers into ep->inproc.args). */
static unsigned
inproc_argv(struct inproc *ip, char **argv, unsigned max)
{
	const struct reg_inproc *ri = &ip->ep->inproc;
	const char *p = ri->args;
	unsigned n;

	for (n = 0; n < ri->nargs && n < max - 1; n++) {
		argv[n] = (char *)p;
		p += strlen(p) + 1;
	}
	argv[n] = NULL;
	return n;
}

/* Load the module (once per process) and run its init for this worker. */
static void
inproc_start(struct inproc *ip)
{
	const struct reg_inproc *ri = &ip->ep->inproc;
	char err[512], *argv[65];
	unsigned argc;
	int rc = 0;

	if ((ip->mod = inproc_mod_get(ri->module, ri->file, &inproc_api, err,
	    sizeof(err))) == NULL) {
		log_warnx("replica %s: cannot load module: %s", ip->ep->id,
		    err);
		registry_publish_estate(ip->st, REG_E_DOWN);
		return;
	}
	ip->desc = inproc_mod_desc(ip->mod);
	argc = inproc_argv(ip, argv, 65);
	err[0] = '\0';
	ip->arg = NULL;
	if (ip->desc->init != NULL) {
		inproc_enter(ip);
		rc = ip->desc->init((struct replica *)ip, (int)argc, argv,
		    &ip->arg, err, sizeof(err));
		inproc_leave(ip);
	}
	if (rc != 0) {
		log_warnx("replica %s: module %s: init failed: %s", ip->ep->id,
		    ri->module, err);
		inproc_mod_put(ip->mod);
		ip->mod = NULL;
		registry_publish_estate(ip->st, REG_E_DOWN);
		return;
	}
	log_debug("worker %u: replica %s: module %s (%s) started", ip->w->id,
	    ip->ep->id, ri->module, ip->desc->name);
	ip->ready = 1;
	registry_publish_estate(ip->st, REG_E_READY);
}

/* No handle and no request: the module's instance goes, and the module
 * with its last instance. */
static void
inproc_park(struct inproc *ip)
{
	if (ip->mod == NULL)
		return;
	if (ip->desc->fini != NULL) {
		inproc_enter(ip);
		ip->desc->fini(ip->arg);
		inproc_leave(ip);
	}
	log_debug("worker %u: replica %s: module %s released", ip->w->id,
	    ip->ep->id, ip->ep->inproc.module);
	inproc_mod_put(ip->mod);
	ip->mod = NULL;
	ip->desc = NULL;
	ip->ready = 0;
	registry_publish_estate(ip->st, REG_E_IDLE);
}

static void
inproc_detached(struct inproc *ip)
{
	int was_full = ip->in_flight >= atomic_load(&ip->ep->max_ongoing);

	ip->in_flight--;
	inproc_publish(ip);
	if (was_full && ip->ready && !ip->released)
		inproc_tell_list(ip, LIST_FIRST(&ip->waiters));
}

static void
inproc_req_gone(struct inproc *ip, struct inproc_req *q)
{
	inproc_unsched(q);
	LIST_REMOVE(q, link);
	ip->nreqs--;
	if (ip->released && ip->nreqs == 0)
		inproc_park_later(ip);
}

static const struct inproc_hooks inproc_hooks = {
	.sched = inproc_sched,
	.detached = inproc_detached,
	.req_gone = inproc_req_gone,
	.enter = inproc_enter,
	.leave = inproc_leave,
};

static struct inproc_list *
inproc_list(struct wctx *w)
{
	struct inproc_list *l = w->edge_pool[inproc_slot];

	if (l == NULL && (l = calloc(1, sizeof(*l))) != NULL) {
		LIST_INIT(l);
		w->edge_pool[inproc_slot] = l;
	}
	return l;
}

static struct inproc *
inproc_new(struct wctx *w, struct reg_endpoint *ep)
{
	struct inproc *ip;

	if ((ip = calloc(1, sizeof(*ip))) == NULL)
		return NULL;
	ip->w = w;
	ip->hooks = &inproc_hooks;
	ip->ep = ep;
	ip->st = registry_ep_slot(ep, w->id);
	LIST_INIT(&ip->watchers);
	LIST_INIT(&ip->waiters);
	LIST_INIT(&ip->reqs);
	TAILQ_INIT(&ip->runq);
	ip->kick = event_new(w->base, -1, 0, inproc_kick_cb, ip);
	ip->scratch = evbuffer_new();
	if (ip->kick == NULL || ip->scratch == NULL) {
		if (ip->kick != NULL)
			event_free(ip->kick);
		if (ip->scratch != NULL)
			evbuffer_free(ip->scratch);
		free(ip);
		return NULL;
	}
	return ip;
}

/* The edge's ops (upconn.h) --------------------------------------------- */

static struct upconn *
inproc_get(struct wctx *w, struct reg_endpoint *ep)
{
	struct inproc_list *l;
	struct inproc *ip;

	if ((l = inproc_list(w)) == NULL)
		return NULL;
	LIST_FOREACH(ip, l, link) {
		if (ip->ep == ep) {
			ip->released = 0;
			if (ip->mod == NULL)
				inproc_start(ip);
			return (struct upconn *)ip;
		}
	}
	if ((ip = inproc_new(w, ep)) == NULL)
		return NULL;
	LIST_INSERT_HEAD(l, ip, link);
	inproc_start(ip);
	return (struct upconn *)ip;
}

static void
inproc_watch(struct upconn *u, struct upconn_watch *w)
{
	struct inproc *ip = (struct inproc *)u;

	if (w->waiting)
		LIST_INSERT_HEAD(&ip->waiters, w, link);
	else
		LIST_INSERT_HEAD(&ip->watchers, w, link);
	ip->nwatch++;
}

static void
inproc_unwatch(struct upconn *u, struct upconn_watch *w)
{
	LIST_REMOVE(w, link);
	((struct inproc *)u)->nwatch--;
}

static void
inproc_wait(struct upconn *u, struct upconn_watch *w, int waiting)
{
	struct inproc *ip = (struct inproc *)u;

	if (w->waiting == waiting)
		return;
	LIST_REMOVE(w, link);
	w->waiting = waiting;
	if (waiting)
		LIST_INSERT_HEAD(&ip->waiters, w, link);
	else
		LIST_INSERT_HEAD(&ip->watchers, w, link);
}

static void
inproc_release(struct upconn *u)
{
	struct inproc *ip = (struct inproc *)u;

	if (ip->nwatch > 0 || ip->released)
		return;
	ip->released = 1;
	if (ip->nreqs == 0)
		inproc_park_later(ip);
}

static int
inproc_is_ready(const struct upconn *u)
{
	const struct inproc *ip = (const struct inproc *)u;

	return ip->ready && !ip->released;
}

static unsigned
inproc_in_flight(const struct upconn *u)
{
	return ((const struct inproc *)u)->in_flight;
}

static unsigned
inproc_capacity(const struct upconn *u)
{
	return atomic_load(&((const struct inproc *)u)->ep->max_ongoing);
}

/* The stream becomes a req; its events go to the handler from the run
 * queue (see the top). */
static int
inproc_attach(struct upconn *u, struct stream *s)
{
	struct inproc *ip = (struct inproc *)u;
	struct inproc_req *q;
	int end;

	if (!inproc_is_ready(u) || ip->in_flight >= inproc_capacity(u))
		return -1;
	if ((q = inproc_req_new(ip, s, ++ip->next_id, &end)) == NULL) {
		stream_on_fail(s, 502, "out of memory");
		return 0;
	}
	LIST_INSERT_HEAD(&ip->reqs, q, link);
	ip->nreqs++;
	ip->in_flight++;
	inproc_publish(ip);
	registry_count_request(ip->st);
	inproc_sched(q);
	stream_attached(s, &inproc_carrier, q, q->id);
	stream_flush_pending(s);
	return 0;
}

static void
inproc_pool_free(struct wctx *w)
{
	struct inproc_list *l;
	struct inproc *ip;

	if (inproc_slot < 0 || (l = w->edge_pool[inproc_slot]) == NULL)
		return;
	while ((ip = LIST_FIRST(l)) != NULL) {
		LIST_REMOVE(ip, link);
		ip->released = 0;	/* parked below, once */
		while (LIST_FIRST(&ip->reqs) != NULL)
			inproc_req_kill(LIST_FIRST(&ip->reqs));
		inproc_park(ip);
		event_free(ip->kick);
		evbuffer_free(ip->scratch);
		free(ip);
	}
	free(l);
	w->edge_pool[inproc_slot] = NULL;
}

static const struct upconn_ops inproc_ops = {
	.protocol = "inproc",
	.get = inproc_get,
	.watch = inproc_watch,
	.unwatch = inproc_unwatch,
	.wait = inproc_wait,
	.release = inproc_release,
	.is_ready = inproc_is_ready,
	.in_flight = inproc_in_flight,
	.capacity = inproc_capacity,
	.attach = inproc_attach,
	.pool_free = inproc_pool_free,
};

int
inproc_register(void)
{
	int slot = upconn_register(&inproc_ops);

	if (slot == -1)
		return -1;
	inproc_slot = slot;
	return 0;
}
