/*
 * hup.c -- the HTTP/1.1 upstream edge: a worker's pool of keep-alive
 * connections to one replica, its state and its health (see hup.h).
 *
 * The pool is what the core sees as a connection (struct upconn): ready
 * or not, how many requests it carries (busy connections), how many it
 * may (max_ongoing_requests).  Its states are the registry's:
 *   CONNECTING  nothing proven yet: the first connection is being made
 *   WARMING     connected, the first health check is out
 *   READY       proven: carries requests
 *   DOWN        out of rotation until retry_at (backoff after a failure,
 *               or the next check after two missed ones)
 *   IDLE        released: no handle uses it
 * One timer per pool wakes it for whatever is due first: the next check,
 * a check's deadline, the end of a backoff, an idle connection's expiry.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "conf.h"
#include "hup.h"
#include "hup_impl.h"
#include "log.h"
#include "monotime.h"
#include "registry_publish.h"
#include "upconn.h"
#include "wctx.h"

#define HUP_BACKOFF_MIN_MS	20
#define HUP_BACKOFF_MAX_MS	2000
#define HUP_WARN_EVERY		10.0	/* s between "cannot connect" lines */

LIST_HEAD(hup_list, hup);

static int hup_slot = -1;		/* ours in wctx.edge_pool */

static const char *hup_state_names[] = {
	"idle", "connecting", "warming", "ready", "down",
};

static void	hup_timer_cb(evutil_socket_t, short, void *);
static void	hup_reap_cb(evutil_socket_t, short, void *);
static void	hup_schedule(struct hup *);
static void	hup_probe(struct hup *);
static void	hup_warm(struct hup *);
static const struct hup_hooks hup_hooks;

static int
hup_has_health(const struct hup *h)
{
	return h->ep->http.health_path[0] != '\0';
}

/* The handles on one list hear of a change; the one told may move from
 * one list to the other meanwhile. */
static void
hup_tell_list(struct hup *h, struct upconn_watch *w)
{
	struct upconn_watch *next;

	for (; w != NULL; w = next) {
		next = LIST_NEXT(w, link);
		w->event(w->h, (struct upconn *)h);
	}
}

static void
hup_tell(struct hup *h)
{
	hup_tell_list(h, LIST_FIRST(&h->watchers));
	hup_tell_list(h, LIST_FIRST(&h->waiters));
}

static void
hup_publish(struct hup *h)
{
	registry_publish_conns(h->st, h->nconns, h->nidle);
	registry_publish_in_flight(h->st, h->in_flight);
}

static void
hup_set_state(struct hup *h, enum reg_estate st)
{
	if (h->state == st)
		return;
	log_debug("worker %u: replica %s: %s -> %s", h->w->id, h->ep->id,
	    hup_state_names[h->state], hup_state_names[st]);
	h->state = st;
	registry_publish_estate(h->st, st);
	hup_tell(h);
}

static void
hup_to_idle(struct hup_conn *c)
{
	struct hup *h = c->pool;

	TAILQ_REMOVE(&h->busy, c, link);
	TAILQ_INSERT_HEAD(&h->idle, c, link);
	c->on_idle = 1;
	c->idle_since = monotime_coarse();	/* no clock read per request */
	h->nidle++;
}

static void
hup_to_busy(struct hup_conn *c)
{
	struct hup *h = c->pool;

	TAILQ_REMOVE(&h->idle, c, link);
	TAILQ_INSERT_TAIL(&h->busy, c, link);
	c->on_idle = 0;
	h->nidle--;
}

static void
hup_close_idle(struct hup *h, const char *why)
{
	while (TAILQ_FIRST(&h->idle) != NULL)
		hup_conn_close(TAILQ_FIRST(&h->idle), 0, why);
}

/*
 * Out of rotation for a backoff (20 ms doubling to 2 s, up to 25% jitter
 * so workers do not come back in lockstep).  Logged at warn when a ready
 * replica goes, and for failures to come back at most every 10 s.
 */
static void
hup_down(struct hup *h, const char *why)
{
	double now = monotime_now();
	unsigned jitter;

	if (h->state == REG_E_READY)
		log_warnx("replica %s (%s): out of rotation: %s", h->ep->id,
		    h->ep->addr.text, why);
	else if (h->warned_at == 0 || now - h->warned_at >= HUP_WARN_EVERY) {
		log_warnx("replica %s (%s): not ready: %s", h->ep->id,
		    h->ep->addr.text, why);
		h->warned_at = now;
	} else
		log_debug("replica %s (%s): not ready: %s", h->ep->id,
		    h->ep->addr.text, why);
	h->backoff_ms = h->backoff_ms ? h->backoff_ms * 2 : HUP_BACKOFF_MIN_MS;
	if (h->backoff_ms > HUP_BACKOFF_MAX_MS)
		h->backoff_ms = HUP_BACKOFF_MAX_MS;
	jitter = h->backoff_ms / 4 ? (unsigned)random() % (h->backoff_ms / 4) :
	    0;
	h->retry_at = now + (h->backoff_ms + jitter) / 1000.0;
	h->run_5xx = 0;
	hup_close_idle(h, why);
	hup_set_state(h, REG_E_DOWN);
	hup_schedule(h);
}

static void
hup_ready(struct hup *h)
{
	h->backoff_ms = 0;
	h->misses = 0;
	h->retry_at = 0;
	h->warned_at = 0;
	hup_set_state(h, REG_E_READY);
	hup_schedule(h);
}

/* Released and nothing runs: close everything, no timer. */
static void
hup_park(struct hup *h)
{
	struct hup_conn *c;

	h->probe = NULL;	/* closing it is no failed check */
	while ((c = TAILQ_FIRST(&h->busy)) != NULL)
		hup_conn_close(c, 0, "no longer used");
	hup_close_idle(h, "no longer used");
	evtimer_del(h->timer);
	log_debug("worker %u: replica %s: released", h->w->id, h->ep->id);
	hup_set_state(h, REG_E_IDLE);
	hup_publish(h);
}

/* A slot came free: handles with requests queued may use it. */
static void
hup_slot_freed(struct hup *h, int was_full)
{
	hup_publish(h);
	if (h->released && h->in_flight == 0) {
		hup_park(h);
		return;
	}
	if (was_full && h->state == REG_E_READY)
		hup_tell_list(h, LIST_FIRST(&h->waiters));
}

/* Health ------------------------------------------------------------- */

static void
hup_probe_done(struct hup *h, int ok, const char *why)
{
	double now = monotime_now();
	int was_ready;

	h->probe = NULL;
	registry_count_health(h->st, ok);
	h->next_probe = now + h->ep->http.health_interval;
	if (ok) {
		if (h->state != REG_E_READY)
			log_info("replica %s (%s): health check passed",
			    h->ep->id, h->ep->addr.text);
		hup_ready(h);
		return;
	}
	h->misses++;
	was_ready = h->state == REG_E_READY;
	if (was_ready && h->misses < 2) {
		log_info("replica %s (%s): health check missed: %s",
		    h->ep->id, h->ep->addr.text, why);
		hup_schedule(h);
		return;
	}
	hup_down(h, why);
	/* Out after two misses: back only after a pass, checked every
	 * interval; not yet proven: sooner, on the backoff. */
	if (was_ready || h->retry_at > h->next_probe)
		h->retry_at = h->next_probe;
	hup_schedule(h);
}

/* A check on an idle connection, or a new one (not counted in capacity:
 * it carries no request). */
static void
hup_probe(struct hup *h)
{
	const struct conf *conf = h->w->conf;
	struct hup_conn *c;
	double extra = 0;

	if (h->probe != NULL)
		return;
	if ((c = TAILQ_FIRST(&h->idle)) != NULL)
		hup_to_busy(c);
	else if ((c = hup_conn_open(h)) != NULL)
		extra = conf->timeouts.connect;
	else {
		hup_down(h, "cannot open a connection");
		return;
	}
	h->probe = c;
	h->probe_deadline = monotime_now() + h->ep->http.health_timeout +
	    extra;
	hup_conn_probe(c, h->ep->http.health_path);
	hup_publish(h);
	if (h->state == REG_E_CONNECTING)
		hup_set_state(h, REG_E_WARMING);
	hup_schedule(h);
}

/* Connection hooks (hup_impl.h) -------------------------------------- */

static void
hup_on_connected(struct hup_conn *c)
{
	struct hup *h = c->pool;

	if (c->job != HJ_NONE)
		return;
	hup_to_idle(c);
	hup_publish(h);
	/* Without an active check, a connection is the proof. */
	if (!hup_has_health(h) && h->state != REG_E_READY &&
	    h->state != REG_E_IDLE)
		hup_ready(h);
	else
		hup_schedule(h);
}

static void
hup_on_finished(struct hup_conn *c, enum hup_job job, int status, int keep)
{
	struct hup *h = c->pool;
	int was_full = h->in_flight >= atomic_load(&h->ep->max_ongoing);

	if (keep)
		hup_to_idle(c);
	if (job == HJ_PROBE) {
		hup_publish(h);
		hup_probe_done(h, status >= 200 && status <= 299,
		    "health check answered with an error status");
		return;
	}
	if (job == HJ_REQUEST) {
		h->in_flight--;
		hup_slot_freed(h, was_full);
	}
	hup_schedule(h);
}

/* Passive health: a run of 5xx takes the replica out for a backoff. */
static void
hup_on_status(struct hup_conn *c, int status)
{
	struct hup *h = c->pool;
	unsigned max = h->ep->http.max_5xx;
	char why[96];

	if (c->job != HJ_REQUEST)
		return;
	if (status < 500) {
		h->run_5xx = 0;
		return;
	}
	if (max == 0 || ++h->run_5xx < max || h->state != REG_E_READY)
		return;
	snprintf(why, sizeof(why), "%u 5xx responses in a row", h->run_5xx);
	hup_down(h, why);
}

static void
hup_on_failed(struct hup_conn *c, enum hup_job job, const char *why,
    int replica_fault)
{
	struct hup *h = c->pool;
	int was_full = h->in_flight >= atomic_load(&h->ep->max_ongoing);

	if (job == HJ_REQUEST)
		h->in_flight--;
	/* A connect that fails (refused, timed out) is a failed check, the
	 * probe's own aside: the proof a replica without one relies on. */
	if (!c->connected && job != HJ_PROBE)
		registry_count_health(h->st, 0);
	if (job == HJ_PROBE && h->probe == c) {
		hup_publish(h);
		hup_probe_done(h, 0, why);
	} else if (replica_fault && h->state != REG_E_IDLE)
		hup_down(h, why);
	if (job == HJ_REQUEST)
		hup_slot_freed(h, was_full);
	else
		hup_publish(h);
}

static const struct hup_hooks hup_hooks = {
	.connected = hup_on_connected,
	.finished = hup_on_finished,
	.status = hup_on_status,
	.failed = hup_on_failed,
};

/* Timer ---------------------------------------------------------------- */

static int
hup_keep_one(const struct hup *h)
{
	return h->ep->http.prewarm && h->nconns <= 1;
}

/* The earliest connect deadline (INFINITY: none connecting). */
static double
hup_connect_due(const struct hup *h)
{
	const struct hup_conn *c;
	double next = INFINITY;

	if (h->nconnecting == 0)
		return next;
	TAILQ_FOREACH(c, &h->busy, link)
		if (!c->connected)
			next = fmin(next, c->connect_by);
	return next;
}

/* Connects past timeouts.connect fail (each may change the lists:
 * start over after one). */
static void
hup_expire_connects(struct hup *h, double now)
{
	struct hup_conn *c;

again:
	if (h->nconnecting == 0)
		return;
	TAILQ_FOREACH(c, &h->busy, link) {
		if (!c->connected && !c->dead && now >= c->connect_by) {
			hup_conn_connect_timeout(c);
			goto again;
		}
	}
}

/* Arm the one timer for whatever is due first. */
static void
hup_schedule(struct hup *h)
{
	double next = INFINITY, now = monotime_now(), t;
	struct hup_conn *c;
	struct timeval tv;

	if (h->state == REG_E_IDLE)
		return;
	if (h->state == REG_E_DOWN && h->retry_at > 0)
		next = h->retry_at;
	next = fmin(next, hup_connect_due(h));
	if (h->probe != NULL)
		next = fmin(next, h->probe_deadline);
	else if (hup_has_health(h) && h->state == REG_E_READY)
		next = fmin(next, h->next_probe);
	if ((c = TAILQ_LAST(&h->idle, hup_conn_q)) != NULL &&
	    !hup_keep_one(h))
		next = fmin(next, c->idle_since + h->ep->http.idle_timeout);
	if (h->ep->http.prewarm && h->nconns == 0 &&
	    h->state == REG_E_READY)
		next = now;
	if (isinf(next)) {
		evtimer_del(h->timer);
		return;
	}
	t = next > now ? next - now : 0;
	tv.tv_sec = (time_t)t;
	tv.tv_usec = (suseconds_t)((t - (double)tv.tv_sec) * 1e6);
	evtimer_add(h->timer, &tv);
}

static void
hup_expire_idle(struct hup *h, double now)
{
	struct hup_conn *c;

	while ((c = TAILQ_LAST(&h->idle, hup_conn_q)) != NULL &&
	    !hup_keep_one(h) &&
	    now >= c->idle_since + h->ep->http.idle_timeout)
		hup_conn_close(c, 0, "idle");
}

static void
hup_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hup *h = arg;
	double now = monotime_now();

	hup_expire_connects(h, now);
	if (h->probe != NULL && now >= h->probe_deadline)
		hup_conn_close(h->probe, 0, "health check timed out");
	else if (h->probe == NULL && h->state == REG_E_DOWN &&
	    h->retry_at > 0 && now >= h->retry_at) {
		h->retry_at = 0;
		hup_warm(h);
	} else if (h->probe == NULL && h->state == REG_E_READY &&
	    hup_has_health(h) && now >= h->next_probe)
		hup_probe(h);
	hup_expire_idle(h, now);
	if (h->ep->http.prewarm && h->nconns == 0 &&
	    h->state == REG_E_READY)
		(void)hup_conn_open(h);		/* idle once connected */
	hup_publish(h);
	hup_schedule(h);
}

/* Dead connections are freed here, after the callbacks that closed them;
 * input that waited for credit is parsed here too. */
static void
hup_reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hup *h = arg;
	struct hup_conn *c;

	hup_conn_resume_all(h);
	while ((c = TAILQ_FIRST(&h->dead)) != NULL) {
		TAILQ_REMOVE(&h->dead, c, link);
		hup_conn_free(c);
	}
}

/* Prove the replica: a check, or (without one) a connection. */
static void
hup_warm(struct hup *h)
{
	struct hup_conn *c;

	if (hup_has_health(h)) {
		hup_probe(h);
		return;
	}
	if ((c = TAILQ_FIRST(&h->idle)) != NULL) {
		hup_ready(h);
		return;
	}
	if (hup_conn_open(h) == NULL) {
		hup_down(h, "cannot open a connection");
		return;
	}
	if (h->state == REG_E_IDLE)
		hup_set_state(h, REG_E_CONNECTING);
	hup_publish(h);
	hup_schedule(h);
}

/* The edge's ops (upconn.h) --------------------------------------------- */

static struct hup_list *
hup_list(struct wctx *w)
{
	struct hup_list *l = w->edge_pool[hup_slot];

	if (l == NULL && (l = calloc(1, sizeof(*l))) != NULL) {
		LIST_INIT(l);
		w->edge_pool[hup_slot] = l;
	}
	return l;
}

static struct hup *
hup_new(struct wctx *w, struct reg_endpoint *ep)
{
	struct hup *h;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->w = w;
	h->ep = ep;
	h->st = registry_ep_slot(ep, w->id);
	h->hooks = &hup_hooks;
	TAILQ_INIT(&h->idle);
	TAILQ_INIT(&h->busy);
	TAILQ_INIT(&h->dead);
	LIST_INIT(&h->watchers);
	LIST_INIT(&h->waiters);
	/* Host for checks and for HTTP/1.0 clients that sent none. */
	snprintf(h->host, sizeof(h->host), "%s",
	    ep->addr.ss.ss_family == AF_UNIX ? "localhost" : ep->addr.text);
	h->timer = evtimer_new(w->base, hup_timer_cb, h);
	h->reap = event_new(w->base, -1, 0, hup_reap_cb, h);
	if (h->timer == NULL || h->reap == NULL) {
		if (h->timer != NULL)
			event_free(h->timer);
		if (h->reap != NULL)
			event_free(h->reap);
		free(h);
		return NULL;
	}
	return h;
}

static struct upconn *
hup_get(struct wctx *w, struct reg_endpoint *ep)
{
	struct hup_list *l;
	struct hup *h;

	if ((l = hup_list(w)) == NULL)
		return NULL;
	LIST_FOREACH(h, l, link) {
		if (h->ep == ep) {
			if (h->released) {
				h->released = 0;
				if (h->state == REG_E_IDLE)
					hup_warm(h);
			}
			return (struct upconn *)h;
		}
	}
	if ((h = hup_new(w, ep)) == NULL)
		return NULL;
	LIST_INSERT_HEAD(l, h, link);
	hup_set_state(h, REG_E_CONNECTING);
	hup_warm(h);
	return (struct upconn *)h;
}

static void
hup_watch(struct upconn *u, struct upconn_watch *w)
{
	struct hup *h = (struct hup *)u;

	if (w->waiting)
		LIST_INSERT_HEAD(&h->waiters, w, link);
	else
		LIST_INSERT_HEAD(&h->watchers, w, link);
	h->nwatch++;
}

static void
hup_unwatch(struct upconn *u, struct upconn_watch *w)
{
	LIST_REMOVE(w, link);
	((struct hup *)u)->nwatch--;
}

static void
hup_wait(struct upconn *u, struct upconn_watch *w, int waiting)
{
	struct hup *h = (struct hup *)u;

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
hup_release(struct upconn *u)
{
	struct hup *h = (struct hup *)u;

	if (h->nwatch > 0 || h->released)
		return;
	h->released = 1;
	hup_close_idle(h, "no longer used");
	if (h->in_flight == 0)
		hup_park(h);
}

static int
hup_is_ready(const struct upconn *u)
{
	const struct hup *h = (const struct hup *)u;

	return h->state == REG_E_READY && !h->released;
}

static unsigned
hup_in_flight(const struct upconn *u)
{
	return ((const struct hup *)u)->in_flight;
}

static unsigned
hup_capacity(const struct upconn *u)
{
	return atomic_load(&((const struct hup *)u)->ep->max_ongoing);
}

/* The stream gets an idle connection, most recently used first (the
 * warmest), or a new one. */
static int
hup_attach(struct upconn *u, struct stream *s)
{
	struct hup *h = (struct hup *)u;
	struct hup_conn *c;
	int rv;

	if (!hup_is_ready(u) || h->in_flight >= hup_capacity(u))
		return -1;
	while ((c = TAILQ_FIRST(&h->idle)) != NULL && !hup_conn_usable(c))
		continue;
	if (c != NULL)
		hup_to_busy(c);
	else if ((c = hup_conn_open(h)) == NULL)
		return -1;
	else
		hup_schedule(h);	/* its connect deadline */
	h->in_flight++;
	rv = hup_conn_request(c, s);
	if (rv != 0 || c->job != HJ_REQUEST) {
		/* Not taken, or answered at once (431): the connection
		 * stays for the next one. */
		if (rv != 0 || (!c->dead && c->s == NULL))
			h->in_flight--;
		if (!c->dead && c->job == HJ_NONE && c->connected &&
		    !c->on_idle)
			hup_to_idle(c);
		hup_publish(h);
		return rv;
	}
	registry_count_request(h->st);
	hup_publish(h);
	return 0;
}

static void
hup_pool_free(struct wctx *w)
{
	struct hup_list *l;
	struct hup *h;
	struct hup_conn *c;

	if (hup_slot < 0 || (l = w->edge_pool[hup_slot]) == NULL)
		return;
	while ((h = LIST_FIRST(l)) != NULL) {
		LIST_REMOVE(h, link);
		while ((c = TAILQ_FIRST(&h->idle)) != NULL) {
			TAILQ_REMOVE(&h->idle, c, link);
			hup_conn_free(c);
		}
		while ((c = TAILQ_FIRST(&h->busy)) != NULL) {
			TAILQ_REMOVE(&h->busy, c, link);
			hup_conn_free(c);
		}
		while ((c = TAILQ_FIRST(&h->dead)) != NULL) {
			TAILQ_REMOVE(&h->dead, c, link);
			hup_conn_free(c);
		}
		event_free(h->timer);
		event_free(h->reap);
		free(h);
	}
	free(l);
	w->edge_pool[hup_slot] = NULL;
}

static const struct upconn_ops hup_ops = {
	.protocol = "http",
	.get = hup_get,
	.watch = hup_watch,
	.unwatch = hup_unwatch,
	.wait = hup_wait,
	.release = hup_release,
	.is_ready = hup_is_ready,
	.in_flight = hup_in_flight,
	.capacity = hup_capacity,
	.attach = hup_attach,
	.pool_free = hup_pool_free,
};

int
hup_register(void)
{
	int slot = upconn_register(&hup_ops);

	if (slot == -1)
		return -1;
	hup_slot = slot;
	return 0;
}
