/*
 * worker.c -- one thread, one event_base (see worker.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "conf.h"
#include "front.h"
#include "handle.h"
#include "log.h"
#include "upstream.h"
#include "worker.h"

#define WORKER_MAX_LISTENERS	16

struct worker_msg {
	void		(*fn)(struct worker *, void *);
	void		*arg;
	struct worker_msg *next;
};

struct worker {
	unsigned	 id;
	const struct conf *conf;
	struct registry	*reg;
	const struct route_table *routes;
	struct event_base *base;
	pthread_t	 thread;
	int		 started;
	struct evconnlistener *listeners[WORKER_MAX_LISTENERS];
	int		 admin[WORKER_MAX_LISTENERS];
	unsigned	 nlisteners;
	struct handle_table *handles;
	void		*upstreams;
	void		*fronts;
	uint32_t	 rng;
	uint32_t	 rid_prefix;
	uint64_t	 rid_counter;
	struct event	*paused;	/* accept paused after EMFILE */

	pthread_mutex_t	 inbox_lock;
	struct worker_msg *inbox;
	struct event	*inbox_ev;
};

/* Client connections across all workers, against limits.max_connections. */
static _Atomic unsigned worker_nconns;

static void	worker_inbox_cb(evutil_socket_t, short, void *);

struct worker *
worker_new(unsigned id, const struct conf *conf, struct registry *reg,
    const struct route_table *routes)
{
	struct worker *w;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->id = id;
	w->conf = conf;
	w->reg = reg;
	w->routes = routes;
	pthread_mutex_init(&w->inbox_lock, NULL);
	if (getrandom(&w->rid_prefix, sizeof(w->rid_prefix), 0) !=
	    sizeof(w->rid_prefix))
		w->rid_prefix = (uint32_t)random();
	w->rng = w->rid_prefix | 1;
	w->base = event_base_new();
	w->handles = handle_table_new();
	if (w->base != NULL)
		w->inbox_ev = event_new(w->base, -1, 0, worker_inbox_cb, w);
	if (w->base == NULL || w->handles == NULL || w->inbox_ev == NULL) {
		worker_free(w);
		return NULL;
	}
	return w;
}

void
worker_free(struct worker *w)
{
	unsigned i;

	if (w == NULL)
		return;
	for (i = 0; i < w->nlisteners; i++)
		evconnlistener_free(w->listeners[i]);
	/* Clients first (they cancel their streams), then handles (they
	 * unwatch upstreams), then the upstreams. */
	front_free_all(w);
	handle_table_free(w->handles);
	upstream_pool_free(w);
	if (w->inbox_ev != NULL)
		event_free(w->inbox_ev);
	if (w->paused != NULL)
		event_free(w->paused);
	if (w->base != NULL)
		event_base_free(w->base);
	pthread_mutex_destroy(&w->inbox_lock);
	free(w);
}

static void
worker_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int socklen, void *arg)
{
	struct worker *w = arg;
	unsigned i;
	int admin = 0;

	for (i = 0; i < w->nlisteners; i++) {
		if (w->listeners[i] == l)
			admin = w->admin[i];
	}
	front_accept(w, fd, sa, socklen, admin);
}

static void
worker_resume_accept(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = arg;
	unsigned i;

	for (i = 0; i < w->nlisteners; i++)
		evconnlistener_enable(w->listeners[i]);
}

/* Out of descriptors: stop accepting for a moment instead of spinning. */
static void
worker_accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct worker *w = arg;
	struct timeval tv = { 0, 100 * 1000 };
	unsigned i;

	log_warn("worker %u: accept", w->id);
	for (i = 0; i < w->nlisteners; i++)
		evconnlistener_disable(w->listeners[i]);
	if (w->paused == NULL)
		w->paused = evtimer_new(w->base, worker_resume_accept, w);
	if (w->paused != NULL)
		evtimer_add(w->paused, &tv);
}

int
worker_add_listener(struct worker *w, int fd, int admin)
{
	struct evconnlistener *l;

	if (w->nlisteners == WORKER_MAX_LISTENERS)
		return -1;
	l = evconnlistener_new(w->base, worker_accept_cb, w,
	    LEV_OPT_CLOSE_ON_FREE, -1, fd);
	if (l == NULL)
		return -1;
	evconnlistener_set_error_cb(l, worker_accept_error_cb);
	w->admin[w->nlisteners] = admin;
	w->listeners[w->nlisteners++] = l;
	return 0;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	event_base_dispatch(w->base);
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

void
worker_stop(struct worker *w)
{
	event_base_loopexit(w->base, NULL);
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

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return;
	m->fn = fn;
	m->arg = arg;
	pthread_mutex_lock(&w->inbox_lock);
	for (pp = &w->inbox; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = m;
	pthread_mutex_unlock(&w->inbox_lock);
	event_active(w->inbox_ev, EV_READ, 0);
}

static void
worker_inbox_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = arg;
	struct worker_msg *m, *next;

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

unsigned
worker_id(const struct worker *w)
{
	return w->id;
}

struct event_base *
worker_base(const struct worker *w)
{
	return w->base;
}

const struct conf *
worker_conf(const struct worker *w)
{
	return w->conf;
}

struct registry *
worker_registry(const struct worker *w)
{
	return w->reg;
}

const struct route_table *
worker_routes(const struct worker *w)
{
	return w->routes;
}

struct handle_table *
worker_handles(const struct worker *w)
{
	return w->handles;
}

void **
worker_upstream_pool(struct worker *w)
{
	return &w->upstreams;
}

void **
worker_front_list(struct worker *w)
{
	return &w->fronts;
}

uint32_t *
worker_rng(struct worker *w)
{
	return &w->rng;
}

void
worker_request_id(struct worker *w, char *buf, size_t len)
{
	snprintf(buf, len, "%08x%012llx", w->rid_prefix,
	    (unsigned long long)(++w->rid_counter & 0xffffffffffffULL));
}

int
worker_conn_open(struct worker *w)
{
	unsigned n = atomic_fetch_add_explicit(&worker_nconns, 1,
	    memory_order_relaxed);

	if (n >= w->conf->limits.max_connections) {
		atomic_fetch_sub_explicit(&worker_nconns, 1,
		    memory_order_relaxed);
		return -1;
	}
	return 0;
}

void
worker_conn_close(struct worker *w)
{
	atomic_fetch_sub_explicit(&worker_nconns, 1, memory_order_relaxed);
}
