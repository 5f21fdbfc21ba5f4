/*
 * h2up.c -- the HTTP/2 upstream edge: a worker's replica, its connection
 * and its state (see h2up.h).
 *
 * The replica is what the core sees as a connection (struct upconn).  Its
 * states are the registry's:
 *   CONNECTING  the connection is being made
 *   WARMING     connected: our SETTINGS and PING are out, the server's
 *               SETTINGS and our PING's answer not both in yet
 *   READY       proven: carries streams
 *   DOWN        out of rotation until retry_at (backoff after a failure)
 *   IDLE        released: no handle uses it
 * GOAWAY from the server moves the current connection to draining (its
 * streams finish; it closes when the last one does) and a fresh one is
 * made and proven again.  One timer per replica wakes it for whatever is
 * due first: the warm deadline, the PING tick, the end of a backoff.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "conf.h"
#include "h2up.h"
#include "h2up_impl.h"
#include "log.h"
#include "monotime.h"
#include "registry_publish.h"
#include "upconn.h"
#include "wctx.h"

#define H2UP_BACKOFF_MIN_MS	20
#define H2UP_BACKOFF_MAX_MS	2000
#define H2UP_WARN_EVERY		10.0	/* s between "not ready" lines */

LIST_HEAD(h2up_list, h2up);

static int h2up_slot = -1;		/* ours in wctx.edge_pool */

static const char *h2up_state_names[] = {
	"idle", "connecting", "warming", "ready", "down",
};

static void	h2up_timer_cb(evutil_socket_t, short, void *);
static void	h2up_schedule_timer(struct h2up *);
static void	h2up_warm(struct h2up *);
static const struct h2up_hooks h2up_hooks;

/* The handles on one list hear of a change; the one told may move from
 * one list to the other meanwhile. */
static void
h2up_tell_list(struct h2up *h, struct upconn_watch *w)
{
	struct upconn_watch *next;

	for (; w != NULL; w = next) {
		next = LIST_NEXT(w, link);
		w->event(w->h, (struct upconn *)h);
	}
}

static void
h2up_tell(struct h2up *h)
{
	h2up_tell_list(h, LIST_FIRST(&h->watchers));
	h2up_tell_list(h, LIST_FIRST(&h->waiters));
}

static void
h2up_publish(struct h2up *h)
{
	registry_publish_conns(h->st, h->nconns,
	    h->cur != NULL && h->cur->nstreams == 0 ? 1 : 0);
	registry_publish_in_flight(h->st, h->in_flight);
}

static void
h2up_set_state(struct h2up *h, enum reg_estate st)
{
	if (h->state == st)
		return;
	log_debug("worker %u: replica %s: %s -> %s", h->w->id, h->ep->id,
	    h2up_state_names[h->state], h2up_state_names[st]);
	h->state = st;
	registry_publish_estate(h->st, st);
	h2up_publish(h);
	h2up_tell(h);
}

/*
 * Out of rotation for a backoff (20 ms doubling to 2 s, up to 25% jitter
 * so workers do not come back in lockstep).  Logged at warn when a ready
 * replica goes, and for failures to come back at most every 10 s.
 */
static void
h2up_down(struct h2up *h, const char *why)
{
	double now = monotime_now();
	unsigned jitter;

	if (h->state == REG_E_READY)
		log_warnx("replica %s (%s): out of rotation: %s", h->ep->id,
		    h->ep->addr.text, why);
	else if (h->warned_at == 0 || now - h->warned_at >= H2UP_WARN_EVERY) {
		log_warnx("replica %s (%s): not ready: %s", h->ep->id,
		    h->ep->addr.text, why);
		h->warned_at = now;
	} else
		log_debug("replica %s (%s): not ready: %s", h->ep->id,
		    h->ep->addr.text, why);
	h->backoff_ms = h->backoff_ms ? h->backoff_ms * 2 :
	    H2UP_BACKOFF_MIN_MS;
	if (h->backoff_ms > H2UP_BACKOFF_MAX_MS)
		h->backoff_ms = H2UP_BACKOFF_MAX_MS;
	jitter = h->backoff_ms / 4 ? (unsigned)random() % (h->backoff_ms / 4) :
	    0;
	h->retry_at = now + (h->backoff_ms + jitter) / 1000.0;
	h2up_set_state(h, REG_E_DOWN);
	h2up_schedule_timer(h);
}

/* Released and nothing runs: close everything, no timer. */
static void
h2up_park(struct h2up *h)
{
	struct h2up_conn *c, *next;

	for (c = LIST_FIRST(&h->conns); c != NULL; c = next) {
		next = LIST_NEXT(c, link);
		h2up_conn_close(c, "no longer used", 0);
	}
	h->cur = NULL;
	evtimer_del(h->timer);
	log_debug("worker %u: replica %s: released", h->w->id, h->ep->id);
	h2up_set_state(h, REG_E_IDLE);
}

/* Connection hooks (h2up_impl.h) -------------------------------------- */

static void
h2up_on_ready(struct h2up_conn *c)
{
	struct h2up *h = c->pool;

	if (c != h->cur || h->state == REG_E_IDLE)
		return;
	if (h->state != REG_E_READY)
		log_debug("replica %s (%s): HTTP/2 connection proven",
		    h->ep->id, h->ep->addr.text);
	h->backoff_ms = 0;
	h->retry_at = 0;
	h->warned_at = 0;
	h->next_tick = monotime_now() + h->w->conf->timeouts.ping_interval;
	h2up_set_state(h, REG_E_READY);
	h2up_schedule_timer(h);
}

/* The server goes away: what runs on it finishes; new streams go to a
 * fresh connection, proven again. */
static void
h2up_on_goaway(struct h2up_conn *c)
{
	struct h2up *h = c->pool;

	log_info("replica %s (%s): GOAWAY: draining %u stream(s), "
	    "reconnecting", h->ep->id, h->ep->addr.text, c->nstreams);
	if (c != h->cur)
		return;
	h->cur = NULL;
	if (c->nstreams == 0)
		h2up_conn_close(c, "GOAWAY", 0);
	if (h->state != REG_E_IDLE && !h->released) {
		h2up_set_state(h, REG_E_CONNECTING);
		h2up_warm(h);
	}
}

static void
h2up_on_stream_done(struct h2up_conn *c)
{
	struct h2up *h = c->pool;
	unsigned cap = atomic_load(&h->ep->max_ongoing);
	int was_full = h->in_flight >= cap;

	h->in_flight--;
	h2up_publish(h);
	if (c != h->cur && c->nstreams == 0 && !c->dead)
		h2up_conn_close(c, "drained", 0);
	if (h->released && h->in_flight == 0) {
		h2up_park(h);
		return;
	}
	if (h->state == REG_E_READY && (was_full || (h->cur != NULL &&
	    h->cur->nstreams + 1 >= h2up_conn_max_streams(h->cur))))
		h2up_tell_list(h, LIST_FIRST(&h->waiters));
}

static void
h2up_on_closed(struct h2up_conn *c, const char *why, int fault,
    unsigned lost)
{
	struct h2up *h = c->pool;

	h->in_flight -= lost;
	h2up_publish(h);
	if (c != h->cur)
		return;
	h->cur = NULL;
	if (h->state == REG_E_IDLE || h->released)
		return;
	h2up_down(h, why);
}

static const struct h2up_hooks h2up_hooks = {
	.ready = h2up_on_ready,
	.goaway = h2up_on_goaway,
	.stream_done = h2up_on_stream_done,
	.closed = h2up_on_closed,
};

/* Timer ---------------------------------------------------------------- */

static void
h2up_schedule_timer(struct h2up *h)
{
	double next = INFINITY, now = monotime_now(), t;
	struct timeval tv;

	switch (h->state) {
	case REG_E_DOWN:
		if (h->retry_at > 0)
			next = h->retry_at;
		break;
	case REG_E_CONNECTING:
	case REG_E_WARMING:
		next = h->warm_by;
		break;
	case REG_E_READY:
		next = h->next_tick;
		break;
	default:
		break;
	}
	if (isinf(next)) {
		evtimer_del(h->timer);
		return;
	}
	t = next > now ? next - now : 0;
	tv.tv_sec = (time_t)t;
	tv.tv_usec = (suseconds_t)((t - (double)tv.tv_sec) * 1e6);
	evtimer_add(h->timer, &tv);
}

/* The PING tick: a PING when nothing arrived for an interval; two ticks
 * that end with it unanswered take the replica out (as missed PONGs do
 * on the wire edge). */
static void
h2up_tick(struct h2up *h)
{
	struct h2up_conn *c = h->cur;

	h->next_tick = monotime_now() + h->w->conf->timeouts.ping_interval;
	if (c == NULL)
		return;
	if (c->ping_out) {
		registry_count_missed_pong(h->st);
		if (++c->misses >= 2) {
			h2up_conn_close(c, "missed PINGs", 1);
			return;
		}
	} else if (!c->rx)
		h2up_conn_ping(c);
	c->rx = 0;
}

static void
h2up_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct h2up *h = arg;
	double now = monotime_now();

	switch (h->state) {
	case REG_E_DOWN:
		if (h->retry_at > 0 && now >= h->retry_at) {
			h->retry_at = 0;
			h2up_set_state(h, REG_E_CONNECTING);
			h2up_warm(h);
			return;
		}
		break;
	case REG_E_CONNECTING:
	case REG_E_WARMING:
		if (now >= h->warm_by && h->cur != NULL) {
			h2up_conn_close(h->cur, "not proven in time "
			    "(SETTINGS and PING)", 1);
			return;
		}
		break;
	case REG_E_READY:
		if (now >= h->next_tick)
			h2up_tick(h);
		break;
	default:
		break;
	}
	h2up_schedule_timer(h);
}

/* A fresh connection, proven before it carries streams. */
static void
h2up_warm(struct h2up *h)
{
	if ((h->cur = h2up_conn_open(h)) == NULL) {
		h2up_down(h, "cannot open a connection");
		return;
	}
	h->warm_by = monotime_now() + h->w->conf->timeouts.connect;
	h2up_publish(h);
	h2up_schedule_timer(h);
}

/* The edge's ops (upconn.h) --------------------------------------------- */

static struct h2up_list *
h2up_list(struct wctx *w)
{
	struct h2up_list *l = w->edge_pool[h2up_slot];

	if (l == NULL && (l = calloc(1, sizeof(*l))) != NULL) {
		LIST_INIT(l);
		w->edge_pool[h2up_slot] = l;
	}
	return l;
}

static struct h2up *
h2up_new(struct wctx *w, struct reg_endpoint *ep)
{
	struct h2up *h;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->w = w;
	h->ep = ep;
	h->st = registry_ep_slot(ep, w->id);
	h->hooks = &h2up_hooks;
	LIST_INIT(&h->conns);
	LIST_INIT(&h->watchers);
	LIST_INIT(&h->waiters);
	/* :authority for requests that came without a Host. */
	snprintf(h->authority, sizeof(h->authority), "%s",
	    ep->addr.ss.ss_family == AF_UNIX ? "localhost" : ep->addr.text);
	if ((h->timer = evtimer_new(w->base, h2up_timer_cb, h)) == NULL) {
		free(h);
		return NULL;
	}
	return h;
}

static struct upconn *
h2up_get(struct wctx *w, struct reg_endpoint *ep)
{
	struct h2up_list *l;
	struct h2up *h;

	if ((l = h2up_list(w)) == NULL)
		return NULL;
	LIST_FOREACH(h, l, link) {
		if (h->ep == ep) {
			if (h->released) {
				h->released = 0;
				if (h->state == REG_E_IDLE) {
					h2up_set_state(h, REG_E_CONNECTING);
					h2up_warm(h);
				}
			}
			return (struct upconn *)h;
		}
	}
	if ((h = h2up_new(w, ep)) == NULL)
		return NULL;
	LIST_INSERT_HEAD(l, h, link);
	h2up_set_state(h, REG_E_CONNECTING);
	h2up_warm(h);
	return (struct upconn *)h;
}

static void
h2up_watch(struct upconn *u, struct upconn_watch *w)
{
	struct h2up *h = (struct h2up *)u;

	if (w->waiting)
		LIST_INSERT_HEAD(&h->waiters, w, link);
	else
		LIST_INSERT_HEAD(&h->watchers, w, link);
	h->nwatch++;
}

static void
h2up_unwatch(struct upconn *u, struct upconn_watch *w)
{
	LIST_REMOVE(w, link);
	((struct h2up *)u)->nwatch--;
}

static void
h2up_wait(struct upconn *u, struct upconn_watch *w, int waiting)
{
	struct h2up *h = (struct h2up *)u;

	if (w->waiting == waiting)
		return;
	LIST_REMOVE(w, link);
	w->waiting = waiting;
	if (waiting)
		LIST_INSERT_HEAD(&h->waiters, w, link);
	else
		LIST_INSERT_HEAD(&h->watchers, w, link);
}

static void
h2up_release(struct upconn *u)
{
	struct h2up *h = (struct h2up *)u;

	if (h->nwatch > 0 || h->released)
		return;
	h->released = 1;
	if (h->in_flight == 0)
		h2up_park(h);
}

static int
h2up_is_ready(const struct upconn *u)
{
	const struct h2up *h = (const struct h2up *)u;

	return h->state == REG_E_READY && !h->released && h->cur != NULL;
}

static unsigned
h2up_in_flight(const struct upconn *u)
{
	return ((const struct h2up *)u)->in_flight;
}

/* max_ongoing_requests, and no more streams on the current connection
 * than the server allows (those still draining on an old one count on
 * top). */
static unsigned
h2up_capacity(const struct upconn *u)
{
	const struct h2up *h = (const struct h2up *)u;
	unsigned cap = atomic_load(&h->ep->max_ongoing), cur = 0;
	uint32_t srv;

	if (h->cur == NULL || !h->cur->proven)
		return cap;
	srv = h2up_conn_max_streams(h->cur);
	cur = h->cur->nstreams;
	if (srv < cap)
		cap = srv;
	return cap + (h->in_flight - cur);
}

static int
h2up_attach(struct upconn *u, struct stream *s)
{
	struct h2up *h = (struct h2up *)u;
	int rv;

	if (!h2up_is_ready(u) || h->in_flight >= h2up_capacity(u) ||
	    h->cur->goaway)
		return -1;
	h->in_flight++;
	rv = h2ups_submit(h->cur, s);
	if (rv != 0) {
		h->in_flight--;		/* not taken, or answered (431) */
		return rv < 0 ? -1 : 0;
	}
	registry_count_request(h->st);
	h2up_publish(h);
	return 0;
}

static void
h2up_pool_free(struct wctx *w)
{
	struct h2up_list *l;
	struct h2up *h;
	struct h2up_conn *c;

	if (h2up_slot < 0 || (l = w->edge_pool[h2up_slot]) == NULL)
		return;
	while ((h = LIST_FIRST(l)) != NULL) {
		LIST_REMOVE(h, link);
		while ((c = LIST_FIRST(&h->conns)) != NULL) {
			LIST_REMOVE(c, link);
			h2up_conn_free(c);
		}
		event_free(h->timer);
		free(h);
	}
	free(l);
	w->edge_pool[h2up_slot] = NULL;
}

static const struct upconn_ops h2up_ops = {
	.protocol = "h2c",
	.alias = "h2",		/* the same edge; its endpoints have "tls" */
	.get = h2up_get,
	.watch = h2up_watch,
	.unwatch = h2up_unwatch,
	.wait = h2up_wait,
	.release = h2up_release,
	.is_ready = h2up_is_ready,
	.in_flight = h2up_in_flight,
	.capacity = h2up_capacity,
	.attach = h2up_attach,
	.pool_free = h2up_pool_free,
};

int
h2up_register(void)
{
	int slot = upconn_register(&h2up_ops);

	if (slot == -1)
		return -1;
	h2up_slot = slot;
	return 0;
}
