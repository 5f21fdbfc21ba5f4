/*
 * worker.c -- one thread, one event_base (see worker.h).
 *
 * Snapshot lifetimes.  front.c keeps pointers into the snapshot a request
 * was routed with (its route prefix and deployment name) until the request
 * is logged, and nothing tells us when a request starts.  What we do see
 * is every client connection open and close, and a request never outlives
 * its connection.  So each worker keeps a list of generations: a snapshot
 * and a count of connections charged to it.  A new connection is charged
 * to the current generation; a closing one is taken off the newest
 * generation that still has connections (we cannot tell which it was).
 * That errs on the safe side: the count of every generation and all older
 * ones is never below the true number of their connections still open, so
 * when an old generation's count reaches zero none of its connections, and
 * none of its requests, remain.  Connections that stay open for long keep
 * an old snapshot (a few kilobytes) alive that long.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "accesslog.h"
#include "conf.h"
#include "handle.h"
#include "log.h"
#include "metrics.h"
#include "net.h"
#include "registry.h"
#include "route.h"
#include "upconn.h"
#include "wctx.h"
#include "worker.h"

#define WORKER_MAX_LISTENERS	16
#define WORKER_TICK_MS		250	/* access log flush, sweeps, idle
					 * handles */
#define WORKER_DRAIN_TICK_MS	50

struct worker_snap {
	_Atomic unsigned refs;
	struct conf	*conf;
	struct route_table *routes;
};

struct worker_gen {
	struct worker_snap *snap;
	unsigned	 nconns;	/* see the comment at the top */
};

struct worker_msg {
	void		(*fn)(struct worker *, void *);
	void		*arg;
	struct worker_msg *next;
};

struct worker_listener {
	struct worker	*w;
	struct evconnlistener *l;
	void		(*accept)(struct wctx *, int, const struct sockaddr *,
			    int, void *);
	void		*arg;
};

struct worker {
	struct wctx	 ctx;		/* what the modules below see */
	struct worker_hooks hooks;
	struct worker_snap *snap;	/* current: gens[ngens - 1].snap */
	struct worker_gen *gens;	/* oldest first */
	unsigned	 ngens;
	pthread_t	 thread;
	int		 started;
	struct worker_listener listeners[WORKER_MAX_LISTENERS];
	unsigned	 nlisteners;
	struct event	*paused;	/* accept paused after EMFILE */
	struct event	*tick;
	struct handle	**orphans;	/* detached, waiting to be idle */
	unsigned	 norphans;
	struct event	*drain_ev;
	_Atomic int	 busy;		/* -1: not draining */
	_Atomic unsigned beats;

	pthread_mutex_t	 inbox_lock;
	struct worker_msg *inbox;
	struct event	*inbox_ev;
	int		 inbox_fd;	/* eventfd: the only cross-thread door */
};

/* Client connections across all workers, against limits.max_connections. */
static _Atomic unsigned worker_nconns;

static void	worker_inbox_cb(evutil_socket_t, short, void *);
static void	worker_tick_cb(evutil_socket_t, short, void *);
static void	worker_drain_cb(evutil_socket_t, short, void *);

/* Snapshots ------------------------------------------------------------ */

struct worker_snap *
worker_snap_new(struct conf *conf, struct route_table *routes)
{
	struct worker_snap *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	atomic_init(&s->refs, 1);
	s->conf = conf;
	s->routes = routes;
	return s;
}

void
worker_snap_ref(struct worker_snap *s)
{
	atomic_fetch_add(&s->refs, 1);
}

void
worker_snap_unref(struct worker_snap *s)
{
	if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	route_table_free(s->routes);
	conf_free(s->conf);
	free(s);
}

const struct conf *
worker_snap_conf(const struct worker_snap *s)
{
	return s->conf;
}

/* Drop the oldest generations nobody can use any more. */
static void
worker_retire_gens(struct worker *w)
{
	unsigned n = 0, i;

	while (n + 1 < w->ngens && w->gens[n].nconns == 0)
		worker_snap_unref(w->gens[n++].snap);
	if (n == 0)
		return;
	for (i = n; i < w->ngens; i++)
		w->gens[i - n] = w->gens[i];
	w->ngens -= n;
}

/* Takes a reference; -1 only when out of memory. */
static int
worker_push_gen(struct worker *w, struct worker_snap *snap)
{
	struct worker_gen *g;

	if ((g = realloc(w->gens, (w->ngens + 1) * sizeof(*g))) == NULL)
		return -1;
	w->gens = g;
	worker_snap_ref(snap);
	g[w->ngens].snap = snap;
	g[w->ngens++].nconns = 0;
	w->snap = snap;
	w->ctx.conf = snap->conf;
	w->ctx.routes = snap->routes;
	return 0;
}

void
worker_switch(struct worker *w, struct worker_snap *snap)
{
	if (snap == w->snap)
		return;
	if (worker_push_gen(w, snap) == -1) {
		log_warnx("worker %u: out of memory: configuration not "
		    "switched", w->ctx.id);
		return;
	}
	worker_retire_gens(w);
}

/* Worker life ---------------------------------------------------------- */

/*
 * A worker's base is touched only by its own thread, so it needs no lock
 * (libevent would otherwise take a mutex on every event_add); other
 * threads reach the worker only through its inbox's eventfd.  Its clock
 * is the precise monotonic one: the default, CLOCK_MONOTONIC_COARSE,
 * moves in jiffies (4 ms), and request times and latency histograms
 * are read from the base's cached time.
 */
static struct event_base *
worker_base_new(void)
{
	struct event_config *cfg;
	struct event_base *base;

	if ((cfg = event_config_new()) == NULL)
		return NULL;
	event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK |
	    EVENT_BASE_FLAG_PRECISE_TIMER);
	base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	return base;
}

struct worker *
worker_new(unsigned id, struct worker_snap *snap, struct registry *reg,
    const struct worker_hooks *hooks)
{
	struct timeval tick = { 0, WORKER_TICK_MS * 1000 };
	struct worker *w;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->ctx.id = id;
	w->ctx.reg = reg;
	w->ctx.worker = w;
	w->ctx.metrics = metrics_slot(id);
	w->ctx.alog = accesslog_slot(id);
	if (hooks != NULL)
		w->hooks = *hooks;
	atomic_init(&w->busy, -1);
	if (worker_push_gen(w, snap) == -1) {
		free(w);
		return NULL;
	}
	pthread_mutex_init(&w->inbox_lock, NULL);
	if (getrandom(&w->ctx.rid_prefix, sizeof(w->ctx.rid_prefix), 0) !=
	    sizeof(w->ctx.rid_prefix))
		w->ctx.rid_prefix = (uint32_t)random();
	w->ctx.rng = w->ctx.rid_prefix | 1;
	w->inbox_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->ctx.base = worker_base_new();
	w->ctx.handles = handle_table_new();
	if (w->ctx.base != NULL && w->inbox_fd != -1) {
		w->inbox_ev = event_new(w->ctx.base, w->inbox_fd,
		    EV_READ | EV_PERSIST, worker_inbox_cb, w);
		w->tick = event_new(w->ctx.base, -1, EV_PERSIST,
		    worker_tick_cb, w);
	}
	if (w->inbox_ev != NULL)
		event_add(w->inbox_ev, NULL);
	if (w->ctx.base == NULL || w->ctx.handles == NULL ||
	    w->inbox_ev == NULL ||
	    w->tick == NULL) {
		worker_free(w);
		return NULL;
	}
	evtimer_add(w->tick, &tick);
	return w;
}

/* Messages nobody will run (the worker stopped first). */
static void
worker_free_inbox(struct worker *w)
{
	struct worker_msg *m, *next;

	for (m = w->inbox; m != NULL; m = next) {
		next = m->next;
		free(m);
	}
	w->inbox = NULL;
}

void
worker_free(struct worker *w)
{
	unsigned i;

	if (w == NULL)
		return;
	for (i = 0; i < w->nlisteners; i++)
		evconnlistener_free(w->listeners[i].l);
	/* Clients first (they cancel their streams), then handles (they
	 * unwatch upstreams), then the upstreams. */
	if (w->hooks.free_all != NULL)
		w->hooks.free_all(&w->ctx);
	accesslog_flush(w->ctx.alog);
	for (i = 0; i < w->norphans; i++)
		handle_release(w->orphans[i]);
	free(w->orphans);
	handle_table_free(w->ctx.handles);
	upconn_pool_free_all(&w->ctx);
	if (w->inbox_ev != NULL)
		event_free(w->inbox_ev);
	if (w->paused != NULL)
		event_free(w->paused);
	if (w->tick != NULL)
		event_free(w->tick);
	if (w->drain_ev != NULL)
		event_free(w->drain_ev);
	if (w->ctx.base != NULL)
		event_base_free(w->ctx.base);
	if (w->inbox_fd > 0)
		close(w->inbox_fd);
	worker_free_inbox(w);
	pthread_mutex_destroy(&w->inbox_lock);
	for (i = 0; i < w->ngens; i++)
		worker_snap_unref(w->gens[i].snap);
	free(w->gens);
	free(w);
}

static void
worker_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int socklen, void *arg)
{
	struct worker_listener *wl = arg;

	wl->accept(&wl->w->ctx, fd, sa, socklen, wl->arg);
}

static void
worker_resume_accept(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = arg;
	unsigned i;

	for (i = 0; i < w->nlisteners; i++)
		evconnlistener_enable(w->listeners[i].l);
}

/* Out of descriptors: stop accepting for a moment instead of spinning. */
static void
worker_accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct worker *w = ((struct worker_listener *)arg)->w;
	struct timeval tv = { 0, 100 * 1000 };
	unsigned i;

	log_warn("worker %u: accept", w->ctx.id);
	for (i = 0; i < w->nlisteners; i++)
		evconnlistener_disable(w->listeners[i].l);
	if (w->paused == NULL)
		w->paused = evtimer_new(w->ctx.base, worker_resume_accept, w);
	if (w->paused != NULL)
		evtimer_add(w->paused, &tv);
}

int
worker_add_listener(struct worker *w, int fd,
    void (*accept)(struct wctx *, int, const struct sockaddr *, int, void *),
    void *arg)
{
	struct worker_listener *wl;
	struct evconnlistener *l;

	if (w->nlisteners == WORKER_MAX_LISTENERS)
		return -1;
	wl = &w->listeners[w->nlisteners];
	/* Accepted sockets inherit TCP_NODELAY from the listener on Linux:
	 * set once here, not once per connection. */
	net_nodelay(fd);
	/* CLOSE_ON_EXEC: accepted sockets must not leak into replicas. */
	l = evconnlistener_new(w->ctx.base, worker_accept_cb, wl,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (l == NULL)
		return -1;
	evconnlistener_set_error_cb(l, worker_accept_error_cb);
	wl->w = w;
	wl->accept = accept;
	wl->arg = arg;
	wl->l = l;
	w->nlisteners++;
	return 0;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	event_base_dispatch(w->ctx.base);
	return NULL;
}

int
worker_start(struct worker *w)
{
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
		return -1;
	w->started = 1;
	return 0;
}

static void
worker_stop_cb(struct worker *w, void *arg)
{
	event_base_loopexit(w->ctx.base, NULL);
}

void
worker_stop(struct worker *w)
{
	worker_post(w, worker_stop_cb, NULL);
}

void
worker_join(struct worker *w)
{
	if (w->started)
		pthread_join(w->thread, NULL);
	w->started = 0;
}

void
worker_post(struct worker *w, void (*fn)(struct worker *, void *), void *arg)
{
	struct worker_msg *m, **pp;
	uint64_t one = 1;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return;
	m->fn = fn;
	m->arg = arg;
	pthread_mutex_lock(&w->inbox_lock);
	for (pp = &w->inbox; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = m;
	pthread_mutex_unlock(&w->inbox_lock);
	/* EAGAIN only when the counter is already non-zero: awake anyway. */
	(void)!write(w->inbox_fd, &one, sizeof(one));
}

static void
worker_inbox_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = arg;
	struct worker_msg *m, *next;
	uint64_t n;

	/* EAGAIN: an earlier wake-up took the count; the list decides. */
	(void)!read(w->inbox_fd, &n, sizeof(n));
	pthread_mutex_lock(&w->inbox_lock);
	m = w->inbox;
	w->inbox = NULL;
	pthread_mutex_unlock(&w->inbox_lock);
	for (; m != NULL; m = next) {
		next = m->next;
		m->fn(w, m->arg);
		free(m);
	}
}

struct wctx *
worker_ctx(struct worker *w)
{
	return &w->ctx;
}

const struct conf *
worker_conf(const struct worker *w)
{
	return w->snap->conf;
}

struct registry *
worker_registry(const struct worker *w)
{
	return w->ctx.reg;
}

void
worker_request_id(struct wctx *c, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t v = ((uint64_t)c->rid_prefix << 32) |
	    (++c->rid_counter & 0xffffffffULL);
	int i;

	/* 16 hex digits: a random per-worker prefix and a counter; no
	 * printf on the per-request path. */
	if (len < 17) {
		if (len > 0)
			buf[0] = '\0';
		return;
	}
	for (i = 15; i >= 0; i--, v >>= 4)
		buf[i] = hex[v & 15];
	buf[16] = '\0';
}

int
worker_conn_open(struct wctx *c)
{
	struct worker *w = c->worker;
	unsigned n = atomic_fetch_add_explicit(&worker_nconns, 1,
	    memory_order_relaxed);

	if (n >= w->snap->conf->limits.max_connections) {
		atomic_fetch_sub_explicit(&worker_nconns, 1,
		    memory_order_relaxed);
		return -1;
	}
	w->gens[w->ngens - 1].nconns++;
	metrics_conn_opened(c->metrics);
	return 0;
}

void
worker_conn_close(struct wctx *c)
{
	struct worker *w = c->worker;
	unsigned i = w->ngens;

	atomic_fetch_sub_explicit(&worker_nconns, 1, memory_order_relaxed);
	while (i > 0 && w->gens[i - 1].nconns == 0)
		i--;
	if (i > 0)
		w->gens[i - 1].nconns--;
	worker_retire_gens(w);
}

unsigned
worker_conns(void)
{
	return atomic_load_explicit(&worker_nconns, memory_order_relaxed);
}

/* Registry changes --------------------------------------------------- */

/*
 * A name's handle follows the registry: resolved again where it changed
 * (or came back), dropped where it went.  Names without a handle here
 * cost nothing: they are resolved on first use.
 */
void
worker_apply_changes(struct worker *w, const struct reg_change *ch,
    unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		if (ch[i].kind == REG_REMOVED ||
		    handle_refresh(&w->ctx, ch[i].name) == -1)
			worker_forget(w, ch[i].name);
	}
}

void
worker_forget(struct worker *w, const char *name)
{
	struct handle *h, **no;

	if ((h = handle_detach(&w->ctx, name)) == NULL)
		return;
	metrics_handle_evicted(w->ctx.metrics);
	if (handle_is_idle(h)) {
		handle_release(h);
		return;
	}
	if ((no = realloc(w->orphans, (w->norphans + 1) * sizeof(*no))) ==
	    NULL) {
		/* Leak it rather than free what streams still use. */
		log_warnx("worker %u: out of memory", w->ctx.id);
		return;
	}
	w->orphans = no;
	w->orphans[w->norphans++] = h;
}

static void
worker_sweep_orphans(struct worker *w)
{
	unsigned i = 0;

	while (i < w->norphans) {
		if (!handle_is_idle(w->orphans[i])) {
			i++;
			continue;
		}
		handle_release(w->orphans[i]);
		w->orphans[i] = w->orphans[--w->norphans];
	}
}

static void
worker_tick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = arg;

	accesslog_flush(w->ctx.alog);
	if (w->norphans > 0)
		worker_sweep_orphans(w);
	handle_table_expire(&w->ctx, w->snap->conf->handle_idle_ttl);
}

/* Graceful stop -------------------------------------------------------- */

/*
 * Connections still open on this worker.  Not the drain hook's count:
 * a connection that finished its last response is "closing" but may
 * still have bytes to flush, and stopping now would cut them off.
 */
static int
worker_open_conns(const struct worker *w)
{
	unsigned i, n = 0;

	for (i = 0; i < w->ngens; i++)
		n += w->gens[i].nconns;
	return (int)n;
}

static void
worker_drain_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = arg;

	if (w->hooks.drain_all != NULL)
		w->hooks.drain_all(&w->ctx);
	atomic_store(&w->busy, worker_open_conns(w));
}

void
worker_drain(struct worker *w)
{
	struct timeval tv = { 0, WORKER_DRAIN_TICK_MS * 1000 };
	unsigned i;

	/* Closing the sockets (not only disabling them) makes the kernel
	 * refuse new connections instead of queueing them for nobody. */
	for (i = 0; i < w->nlisteners; i++)
		evconnlistener_free(w->listeners[i].l);
	w->nlisteners = 0;
	if (w->paused != NULL)
		evtimer_del(w->paused);
	if (w->hooks.drain_all != NULL)
		w->hooks.drain_all(&w->ctx);
	atomic_store(&w->busy, worker_open_conns(w));
	if (w->drain_ev == NULL)
		w->drain_ev = event_new(w->ctx.base, -1, EV_PERSIST,
		    worker_drain_cb, w);
	if (w->drain_ev != NULL)
		evtimer_add(w->drain_ev, &tv);
}

int
worker_busy(const struct worker *w)
{
	return atomic_load_explicit(&w->busy, memory_order_relaxed);
}

static void
worker_beat_cb(struct worker *w, void *arg)
{
	atomic_fetch_add(&w->beats, 1);
}

void
worker_beat(struct worker *w)
{
	worker_post(w, worker_beat_cb, NULL);
}

unsigned
worker_beats(const struct worker *w)
{
	return atomic_load_explicit(&w->beats, memory_order_relaxed);
}
