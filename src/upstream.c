/*
 * upstream.c -- a worker's connection to one replica (see upstream.h).
 *
 * Stream ids increase on a connection and are never reused (the protocol
 * says so: a late frame for a cancelled stream can never be mistaken for a
 * new one).  The stream table is an idtab (O(1) lookup, see idtab.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "conf.h"
#include "idtab.h"
#include "log.h"
#include "monotime.h"
#include "net.h"
#include "registry.h"
#include "registry_publish.h"
#include "sock.h"
#include "stream.h"
#include "tls.h"
#include "upstream.h"
#include "wire.h"
#include "wctx.h"

#define UPSTREAM_IO_CHUNK	(256 * 1024)
#define UPSTREAM_LAST_ID	0x7fff0000u	/* then drain and reconnect */
#define BACKOFF_MIN_MS		20
#define BACKOFF_MAX_MS		2000
#define UPSTREAM_WARN_EVERY	10.0	/* s between "cannot connect" lines */

/* Published as the registry's enum reg_estate, so the values are its. */
enum upstream_state {
	UPSTREAM_IDLE = REG_E_IDLE,
	UPSTREAM_CONNECTING = REG_E_CONNECTING,
	UPSTREAM_WARMING = REG_E_WARMING,
	UPSTREAM_READY = REG_E_READY,
	UPSTREAM_DOWN = REG_E_DOWN,
};

struct upstream {
	struct wctx	*w;		/* the worker's context */
	struct reg_endpoint *ep;
	struct ep_stats	*st;		/* this worker's slot in ep */
	enum upstream_state state;
	struct sock	*sock;
	struct event	*timer;		/* connect, ping or backoff */
	unsigned	 backoff_ms;
	int		 hello_seen;
	int		 goaway;	/* no new streams on this connection */
	int		 released;	/* no handle watches it: stay closed */
	uint64_t	 ping_seq;
	int		 ping_out;	/* PINGs sent and not answered */
	uint8_t		 ping_opaque[8];
	int		 rx;		/* a frame arrived since the last tick */

	struct idtab	 streams;	/* id -> struct stream */
	uint32_t	 next_id;
	unsigned	 in_flight;
	unsigned	 cap;		/* min(conf, HELLO) */

	LIST_HEAD(, upstream_watch) watchers;	/* handles using it */
	LIST_HEAD(, upstream_watch) waiters;	/* ... with requests queued */
	unsigned	 nwatch;			/* on both lists */
	struct evbuffer	*scratch;	/* DATA payloads on their way out */
	uint64_t	 out_added;	/* bytes ever queued on this connection */
	uint64_t	 written_at_close; /* of those, in the socket at a linger */
	double		 warned_at;	/* last failure logged at warn */
	unsigned	 warn_quiet;	/* failures since, logged at debug */
	LIST_ENTRY(upstream) link;	/* the worker's pool */
};

static void	upstream_connect(struct upstream *);
static void	upstream_fail(struct upstream *, const char *);
static void	upstream_read_cb(void *);
static void	upstream_connected_cb(void *);
static void	upstream_error_cb(void *, int);
static void	upstream_timer_cb(evutil_socket_t, short, void *);
static void	upstream_revive(struct upstream *);
static void	upstream_park(struct upstream *);


static const struct sock_cbs upstream_sock_cbs = {
	upstream_read_cb, NULL, upstream_connected_cb, upstream_error_cb,
};

static const char *state_names[] = {
	"idle", "connecting", "warming", "ready", "down",
};

/* The handles on one list hear of a change; the one told may leave the
 * waiters' list for the watchers' meanwhile. */
static void
upstream_tell_list(struct upstream *up, struct upstream_watch *w)
{
	struct upstream_watch *next;

	for (; w != NULL; w = next) {
		next = LIST_NEXT(w, link);
		w->event(w->h, up);
	}
}

/* A state change: every handle using up hears of it. */
static void
upstream_tell(struct upstream *up)
{
	upstream_tell_list(up, LIST_FIRST(&up->watchers));
	upstream_tell_list(up, LIST_FIRST(&up->waiters));
}

static void
upstream_set_state(struct upstream *up, enum upstream_state st)
{
	if (up->state == st)
		return;
	log_debug("worker %u: replica %s: %s -> %s", up->w->id,
	    up->ep->id, state_names[up->state], state_names[st]);
	up->state = st;
	registry_publish_estate(up->st, (enum reg_estate)st);
	upstream_tell(up);
}

static void
upstream_arm(struct upstream *up, double seconds)
{
	struct timeval tv;

	tv.tv_sec = (time_t)seconds;
	tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
	evtimer_add(up->timer, &tv);
}

/* Every byte queued to the replica goes through here, counted, so that a
 * failure can tell which requests never reached the socket. */
static void
upstream_write(struct upstream *up, const void *p, size_t n)
{
	evbuffer_add(sock_output(up->sock), p, n);
	up->out_added += n;
}

struct upstream *
upstream_get(struct wctx *w, struct reg_endpoint *ep)
{
	struct upstream *up;

	LIST_FOREACH(up, &w->upstreams, link) {
		if (up->ep == ep) {
			if (up->released)
				upstream_revive(up);
			return up;
		}
	}
	if ((up = calloc(1, sizeof(*up))) == NULL)
		return NULL;
	up->w = w;
	up->ep = ep;
	up->st = registry_ep_slot(ep, w->id);
	up->cap = ep->max_ongoing;
	up->timer = evtimer_new(w->base, upstream_timer_cb, up);
	up->scratch = evbuffer_new();
	if (up->timer == NULL || up->scratch == NULL) {
		if (up->timer != NULL)
			event_free(up->timer);
		if (up->scratch != NULL)
			evbuffer_free(up->scratch);
		free(up);
		return NULL;
	}
	LIST_INSERT_HEAD(&w->upstreams, up, link);
	upstream_connect(up);
	return up;
}

static void
upstream_close(struct upstream *up)
{
	if (up->sock != NULL) {
		sock_free(up->sock);
		up->sock = NULL;
	}
}

/* We are going away: say so, best effort, with what is already queued. */
static void
upstream_goodbye(struct upstream *up, const char *text)
{
	struct wire_goaway g;
	uint8_t buf[WIRE_HEADER_SIZE + 10 + 64];
	size_t n;

	if (up->sock == NULL || up->state != UPSTREAM_READY)
		return;
	memset(&g, 0, sizeof(g));
	g.last_stream = up->next_id - 1;
	g.code = WIRE_CODE_SHUTDOWN;
	g.text.p = text;
	g.text.len = strlen(text);
	if (wire_goaway_size(&g) > sizeof(buf) ||
	    (n = wire_encode_goaway(buf, &g)) == 0)
		return;
	upstream_write(up, buf, n);
	sock_write_now(up->sock);
}

void
upstream_pool_free(struct wctx *w)
{
	struct upstream *up, *next;

	for (up = LIST_FIRST(&w->upstreams); up != NULL; up = next) {
		next = LIST_NEXT(up, link);
		upstream_goodbye(up, "ingressd stopping");
		upstream_close(up);
		event_free(up->timer);
		evbuffer_free(up->scratch);
		idtab_clear(&up->streams);
		free(up);
	}
	LIST_INIT(&w->upstreams);
}

static void
upstream_link(struct upstream *up, struct upstream_watch *w)
{
	if (w->waiting)
		LIST_INSERT_HEAD(&up->waiters, w, link);
	else
		LIST_INSERT_HEAD(&up->watchers, w, link);
}

static void
upstream_unlink(struct upstream *up, struct upstream_watch *w)
{
	LIST_REMOVE(w, link);
}

void
upstream_watch(struct upstream *up, struct upstream_watch *w)
{
	upstream_link(up, w);
	up->nwatch++;
}

void
upstream_unwatch(struct upstream *up, struct upstream_watch *w)
{
	upstream_unlink(up, w);
	up->nwatch--;
}

void
upstream_wait(struct upstream *up, struct upstream_watch *w, int waiting)
{
	if (w->waiting == waiting)
		return;
	upstream_unlink(up, w);
	w->waiting = waiting;
	upstream_link(up, w);
}

int
upstream_is_ready(const struct upstream *up)
{
	return up->state == UPSTREAM_READY && !up->goaway;
}

unsigned
upstream_in_flight(const struct upstream *up)
{
	return up->in_flight;
}

unsigned
upstream_capacity(const struct upstream *up)
{
	return up->cap;
}

const char *
upstream_id(const struct upstream *up)
{
	return up->ep->id;
}

/* Connection life ------------------------------------------------------ */

/* A TLS endpoint: the handshake runs under the connect deadline. */
static int
upstream_tls(struct upstream *up)
{
	struct tls_cli *cl = atomic_load(&up->ep->tls);
	struct ssl_st *ssl;

	if (cl == NULL)
		return 0;
	if ((ssl = tls_cli_ssl(cl)) == NULL)
		return -1;
	return sock_tls_connect(up->sock, ssl, 0);
}

static void
upstream_connect(struct upstream *up)
{
	const struct conf *conf = up->w->conf;

	upstream_close(up);
	up->hello_seen = 0;
	up->goaway = 0;
	up->ping_out = 0;
	up->next_id = 1;
	up->sock = sock_new(up->w->base, -1, &upstream_sock_cbs, up);
	if (up->sock == NULL) {
		upstream_fail(up, "out of memory");
		return;
	}
	/* Read ahead past the largest frame, which must be whole to go on. */
	sock_set_limits(up->sock, WIRE_HEADER_SIZE + WIRE_MAX_PAYLOAD +
	    UPSTREAM_IO_CHUNK, 0);
	up->out_added = 0;
	upstream_set_state(up, UPSTREAM_CONNECTING);
	upstream_arm(up, conf->timeouts.connect);
	if (upstream_tls(up) == -1) {
		upstream_fail(up, "TLS: out of memory");
		return;
	}
	if (sock_connect(up->sock, (struct sockaddr *)&up->ep->addr.ss,
	    (socklen_t)up->ep->addr.len) == -1)
		upstream_fail(up, strerror(errno));
}

static void
upstream_send_ping(struct upstream *up)
{
	uint8_t frame[WIRE_HEADER_SIZE + 8];
	uint64_t v = ++up->ping_seq;

	memcpy(up->ping_opaque, &v, 8);
	wire_encode_ping(frame, WIRE_PING, up->ping_opaque);
	upstream_write(up, frame, sizeof(frame));
	up->ping_out++;
	registry_count_ping(up->st);
}

/* Connected: our HELLO and a PING go out together. */
static void
upstream_warm(struct upstream *up)
{
	struct wire_hello hello;
	uint8_t buf[WIRE_HEADER_SIZE + 8 + 2 * 256];
	size_t n;
	int fd = sock_fd(up->sock);

	if (up->ep->addr.ss.ss_family != AF_UNIX)
		net_nodelay(fd);
	memset(&hello, 0, sizeof(hello));
	hello.version = WIRE_VERSION;
	hello.replica_id.p = "ingressd";
	hello.replica_id.len = 8;
	n = wire_encode_hello(buf, &hello);
	upstream_write(up, buf, n);
	upstream_send_ping(up);
	upstream_set_state(up, UPSTREAM_WARMING);
}

/*
 * The connection is gone.  A stream whose REQUEST had not left our output
 * buffer was never seen by the replica: it goes back to its handle for
 * another replica (if its body can be replayed).  The others fail with 502:
 * the replica may have acted on them.
 */
static void
upstream_fail_streams(struct upstream *up, uint64_t written, const char *why)
{
	struct stream *s;

	while ((s = idtab_pop(&up->streams, NULL)) != NULL) {
		up->in_flight--;
		if (stream_sent_at(s) >= written && stream_retry(s) == 0)
			continue;
		stream_on_fail(s, 502, why);
	}
	registry_publish_in_flight(up->st, 0);
}

/*
 * A replica that cannot be reached (refused, timed out, not answering the
 * handshake) is logged at warn, at most once per UPSTREAM_WARN_EVERY
 * seconds per connection, with a count of the failures in between: the
 * backoff retries far more often than an operator wants to read.
 */
static void
upstream_warn_down(struct upstream *up, const char *why)
{
	double now = monotime_coarse();
	const char *what = up->state == UPSTREAM_CONNECTING ?
	    "cannot connect" : "handshake failed";

	if (up->warned_at > 0 && now - up->warned_at < UPSTREAM_WARN_EVERY) {
		up->warn_quiet++;
		log_debug("replica %s (%s): %s: %s", up->ep->id,
		    up->ep->addr.text, what, why);
		return;
	}
	if (up->warn_quiet > 0)
		log_warnx("replica %s (%s): %s: %s (%u more failures in the "
		    "last %.0fs)", up->ep->id, up->ep->addr.text, what, why,
		    up->warn_quiet, now - up->warned_at);
	else
		log_warnx("replica %s (%s): %s: %s", up->ep->id,
		    up->ep->addr.text, what, why);
	up->warned_at = now;
	up->warn_quiet = 0;
}

static void
upstream_fail(struct upstream *up, const char *why)
{
	uint64_t written = 0;
	unsigned jitter;

	if (up->goaway && up->in_flight == 0)
		log_info("replica %s (%s): %s (after GOAWAY)", up->ep->id,
		    up->ep->addr.text, why);
	else if (up->state == UPSTREAM_READY || up->in_flight > 0)
		log_warnx("replica %s (%s): %s", up->ep->id, up->ep->addr.text,
		    why);
	else
		upstream_warn_down(up, why);
	if (up->sock != NULL)
		written = up->out_added - sock_output_len(up->sock);
	else
		written = up->written_at_close;
	upstream_close(up);
	/* DOWN before the streams are retried, so none comes back here. */
	up->state = UPSTREAM_DOWN;
	registry_publish_estate(up->st, REG_E_DOWN);
	upstream_fail_streams(up, written, why);
	/* Exponential backoff with jitter, so replicas that come back are
	 * not hit by every worker at the same instant. */
	up->backoff_ms = up->backoff_ms ? up->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (up->backoff_ms > BACKOFF_MAX_MS)
		up->backoff_ms = BACKOFF_MAX_MS;
	jitter = up->backoff_ms / 4 ? (unsigned)random() % (up->backoff_ms / 4) : 0;
	upstream_arm(up, (up->backoff_ms + jitter) / 1000.0);
	upstream_tell(up);
}

static void
upstream_connected_cb(void *arg)
{
	upstream_warm(arg);
}

static void
upstream_error_cb(void *arg, int eof)
{
	struct upstream *up = arg;
	char why[192];

	if (!eof && sock_tls_error(up->sock)[0] != '\0') {
		snprintf(why, sizeof(why), "TLS: %s", sock_tls_error(up->sock));
		upstream_fail(up, why);
		return;
	}
	upstream_fail(up, eof ? "connection closed by replica" :
	    strerror(errno));
}

/*
 * One timer per connection, three roles: while connecting or warming it is
 * the connect deadline; while down, the backoff; while ready, the idle ping
 * tick (a PING when nothing arrived in an interval; two unanswered PINGs
 * take the replica out of rotation).
 */
static void
upstream_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct upstream *up = arg;
	const struct conf *conf = up->w->conf;

	switch (up->state) {
	case UPSTREAM_CONNECTING:
	case UPSTREAM_WARMING:
		upstream_fail(up, "no HELLO and PONG in time");
		break;
	case UPSTREAM_DOWN:
	case UPSTREAM_IDLE:
		if (up->released)
			upstream_park(up);
		else
			upstream_connect(up);
		break;
	case UPSTREAM_READY:
		if (up->goaway && up->in_flight == 0) {
			if (up->released)
				upstream_park(up);
			else
				upstream_connect(up);
			break;
		}
		if (up->ping_out > 0)
			registry_count_missed_pong(up->st);
		if (up->ping_out >= 2) {
			upstream_fail(up, "missed PONGs");
			break;
		}
		if (!up->rx || up->ping_out > 0)
			upstream_send_ping(up);
		up->rx = 0;
		upstream_arm(up, conf->timeouts.ping_interval);
		break;
	}
}

/* Streams ---------------------------------------------------------------- */

static struct stream *
upstream_lookup(struct upstream *up, uint32_t id)
{
	return idtab_get(&up->streams, id);
}

static void
upstream_count_in_flight(struct upstream *up)
{
	registry_publish_in_flight(up->st, up->in_flight);
}

static const struct stream_carrier upstream_carrier;

int
upstream_attach(struct upstream *up, struct stream *s)
{
	struct evbuffer *out;
	size_t before;
	uint32_t id;

	if (!upstream_is_ready(up) || up->in_flight >= up->cap)
		return -1;
	if (idtab_reserve(&up->streams, up->in_flight + 1) == -1)
		return -1;
	id = up->next_id++;
	out = sock_output(up->sock);
	before = evbuffer_get_length(out);
	stream_set_sent_at(s, up->out_added);
	if (stream_encode(s, id, out) == -1) {
		/* Nothing was queued.  A head that cannot be encoded will not
		 * fit any replica: the request is answered, not retried. */
		stream_on_fail(s, 431, "request head too large to forward");
		return 0;
	}
	up->out_added += evbuffer_get_length(out) - before;
	(void)idtab_put(&up->streams, id, s);	/* reserved: cannot fail */
	up->in_flight++;
	upstream_count_in_flight(up);
	registry_count_request(up->st);
	stream_attached(s, &upstream_carrier, up, id);
	stream_flush_pending(s);
	/* Ids run out: drain, then start afresh.  Not upstream_on_goaway():
	 * we may be inside a handle's dispatch loop, which must not be
	 * re-entered. */
	if (up->next_id >= UPSTREAM_LAST_ID)
		up->goaway = 1;
	return 0;
}

/* The stream leaves the table; a full connection that frees a slot tells
 * its handles, which may have requests waiting for exactly that. */
static void
upstream_detach(struct upstream *up, uint32_t id)
{
	int was_full = up->in_flight >= up->cap;

	(void)idtab_del(&up->streams, id);
	up->in_flight--;
	upstream_count_in_flight(up);
	if (up->goaway && up->in_flight == 0) {
		/* Drained after GOAWAY: a fresh connection, warmed again. */
		event_active(up->timer, EV_TIMEOUT, 0);
		return;
	}
	if (was_full)
		upstream_tell_list(up, LIST_FIRST(&up->waiters));
}

static void
upstream_send_data(struct upstream *up, uint32_t id, const void *p, size_t n)
{
	uint8_t hdr[WIRE_HEADER_SIZE];
	size_t piece;

	while (n > 0) {
		piece = n < WIRE_MAX_DATA ? n : WIRE_MAX_DATA;
		wire_encode_header(hdr, (uint32_t)piece, WIRE_DATA, 0, id);
		upstream_write(up, hdr, sizeof(hdr));
		upstream_write(up, p, piece);
		p = (const char *)p + piece;
		n -= piece;
	}
}

static void
upstream_send_end(struct upstream *up, uint32_t id)
{
	uint8_t hdr[WIRE_HEADER_SIZE];

	wire_encode_header(hdr, 0, WIRE_END, 0, id);
	upstream_write(up, hdr, sizeof(hdr));
}

static void
upstream_send_window(struct upstream *up, uint32_t id, uint32_t n)
{
	uint8_t frame[WIRE_HEADER_SIZE + 4];

	wire_encode_window(frame, id, n);
	upstream_write(up, frame, sizeof(frame));
}

static void
upstream_cancel(struct upstream *up, struct stream *s, uint32_t code)
{
	uint8_t frame[WIRE_HEADER_SIZE + 4];
	uint32_t id = stream_id(s);

	if (upstream_lookup(up, id) != s)
		return;
	upstream_detach(up, id);
	if (up->sock != NULL) {
		wire_encode_cancel(frame, id, code);
		upstream_write(up, frame, sizeof(frame));
	}
}

static void
upstream_carrier_data(void *c, uint32_t id, const void *p, size_t n)
{
	upstream_send_data(c, id, p, n);
}

static void
upstream_carrier_end(void *c, uint32_t id)
{
	upstream_send_end(c, id);
}

static void
upstream_carrier_window(void *c, uint32_t id, uint32_t n)
{
	upstream_send_window(c, id, n);
}

static void
upstream_carrier_cancel(void *c, struct stream *s, uint32_t code)
{
	upstream_cancel(c, s, code);
}

static const char *
upstream_carrier_peer(const void *c)
{
	return upstream_id(c);
}

/* What a stream attached here sends through (stream.h). */
static const struct stream_carrier upstream_carrier = {
	.data = upstream_carrier_data,
	.end = upstream_carrier_end,
	.window = upstream_carrier_window,
	.cancel = upstream_carrier_cancel,
	.peer = upstream_carrier_peer,
};

/* Frames from the replica ---------------------------------------------- */

/*
 * The ERROR we just queued must reach the replica before the close, but the
 * upstream reconnects at once: the old connection gets a short life of its
 * own, freed when its output has drained, on any event, or after a second.
 */
struct upstream_linger {
	struct sock	*sock;
	struct event	*timer;
};

static void
upstream_linger_done(struct upstream_linger *l)
{
	event_free(l->timer);
	sock_free(l->sock);
	free(l);
}

static void
upstream_linger_drained_cb(void *arg)
{
	struct upstream_linger *l = arg;

	if (sock_output_len(l->sock) == 0)
		upstream_linger_done(l);
}

static void
upstream_linger_error_cb(void *arg, int eof)
{
	upstream_linger_done(arg);
}

static void
upstream_linger_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	upstream_linger_done(arg);
}

static const struct sock_cbs upstream_linger_cbs = {
	NULL, upstream_linger_drained_cb, NULL, upstream_linger_error_cb,
};

static void
upstream_linger(struct upstream *up)
{
	struct timeval tv = { 1, 0 };
	struct upstream_linger *l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return;		/* upstream_fail() frees it the plain way */
	l->timer = evtimer_new(up->w->base, upstream_linger_timer_cb, l);
	if (l->timer == NULL) {
		free(l);
		return;
	}
	l->sock = up->sock;
	up->written_at_close = up->out_added - sock_output_len(up->sock);
	up->sock = NULL;
	sock_read_enable(l->sock, 0);
	sock_set_cbs(l->sock, &upstream_linger_cbs, l);
	evtimer_add(l->timer, &tv);
}

static void
upstream_protocol_error(struct upstream *up, const char *what, int rc)
{
	struct wire_error e;
	uint8_t buf[WIRE_HEADER_SIZE + 8 + 128];
	char text[128];
	size_t n;

	snprintf(text, sizeof(text), "protocol error: %s: %s", what,
	    wire_result_str(rc));
	e.code = WIRE_CODE_PROTOCOL;
	e.text.p = text;
	e.text.len = strlen(text);
	/*
	 * The ERROR goes out only when nothing else is waiting to: frames
	 * still queued belong to requests that upstream_fail() will retry
	 * elsewhere, and flushing them as well could run a request twice.
	 */
	if (up->sock != NULL && sock_output_len(up->sock) == 0 &&
	    (n = wire_encode_error(buf, 0, &e)) > 0) {
		upstream_write(up, buf, n);
		upstream_linger(up);
	}
	upstream_fail(up, text);
}

static void
upstream_on_hello(struct upstream *up, const struct wire_frame *f)
{
	struct wire_hello h;
	int rc;

	if ((rc = wire_decode_hello(f, &h)) != WIRE_OK || up->hello_seen) {
		upstream_protocol_error(up, "bad HELLO", rc ? rc : WIRE_E_VALUE);
		return;
	}
	up->hello_seen = 1;
	up->cap = up->ep->max_ongoing;
	if (h.max_concurrency > 0 && h.max_concurrency < up->cap)
		up->cap = h.max_concurrency;
}

static void
upstream_on_pong(struct upstream *up, const struct wire_frame *f)
{
	const struct conf *conf = up->w->conf;
	uint8_t opaque[8];

	if (wire_decode_ping(f, opaque) != WIRE_OK ||
	    memcmp(opaque, up->ping_opaque, 8) != 0)
		return;		/* an older PING's answer: harmless */
	up->ping_out = 0;
	registry_count_pong(up->st);
	if (up->state == UPSTREAM_WARMING) {
		if (!up->hello_seen) {
			upstream_protocol_error(up, "PONG before HELLO",
			    WIRE_E_VALUE);
			return;
		}
		up->backoff_ms = 0;
		upstream_arm(up, conf->timeouts.ping_interval);
		upstream_set_state(up, UPSTREAM_READY);
	}
}

static void
upstream_on_ping(struct upstream *up, const struct wire_frame *f)
{
	uint8_t opaque[8], frame[WIRE_HEADER_SIZE + 8];

	if (wire_decode_ping(f, opaque) != WIRE_OK)
		return;
	wire_encode_ping(frame, WIRE_PONG, opaque);
	upstream_write(up, frame, sizeof(frame));
}

static void
upstream_on_response(struct upstream *up, const struct wire_frame *f,
    struct stream *s)
{
	struct wire_field fields[WIRE_MAX_FIELDS];
	struct wire_response r;
	int rc, end = f->flags & WIRE_FLAG_END;

	if ((rc = wire_decode_response(f, &r, fields, WIRE_MAX_FIELDS)) != 0) {
		upstream_protocol_error(up, "bad RESPONSE", rc);
		return;
	}
	if (end)
		upstream_detach(up, f->stream);
	stream_on_response(s, r.status, r.fields, r.nfields, end);
	if (end)
		stream_on_end(s);
}

static void
upstream_on_stream_error(struct upstream *up, const struct wire_frame *f,
    struct stream *s)
{
	struct wire_error e;
	char why[160];

	if (wire_decode_error(f, &e) != WIRE_OK) {
		upstream_protocol_error(up, "bad ERROR", WIRE_E_SHORT);
		return;
	}
	snprintf(why, sizeof(why), "replica failed the request: %.*s",
	    (int)(e.text.len > 120 ? 120 : e.text.len), e.text.p);
	upstream_detach(up, f->stream);
	/* REFUSED: the replica did no work; another may take it. */
	if (e.code == WIRE_CODE_REFUSED && stream_retry(s) == 0)
		return;
	stream_on_fail(s, 502, why);
}

static void
upstream_on_conn_error(struct upstream *up, const struct wire_frame *f)
{
	struct wire_error e;
	char why[200];

	if (wire_decode_error(f, &e) != WIRE_OK)
		e.text.len = 0;
	snprintf(why, sizeof(why), "replica closed the connection: %s: %.*s",
	    wire_code_str(e.code), (int)(e.text.len > 150 ? 150 : e.text.len),
	    e.text.p);
	upstream_fail(up, why);
}

static void
upstream_on_goaway(struct upstream *up)
{
	up->goaway = 1;
	upstream_tell(up);
}

/* A frame that is not DATA: pulled up whole, decoded, dispatched. */
static void
upstream_on_frame(struct upstream *up, const struct wire_frame *f)
{
	struct stream *s = NULL;
	uint32_t incr;

	up->rx = 1;
	switch (f->type) {
	case WIRE_HELLO:
		upstream_on_hello(up, f);
		return;
	case WIRE_PING:
		upstream_on_ping(up, f);
		return;
	case WIRE_PONG:
		upstream_on_pong(up, f);
		return;
	case WIRE_GOAWAY:
		upstream_on_goaway(up);
		return;
	case WIRE_WINDOW:
		if (f->stream != 0 && (s = upstream_lookup(up, f->stream)) != NULL &&
		    wire_decode_window(f, &incr) == WIRE_OK)
			stream_on_window(s, incr);
		return;		/* stream 0: reserved in v1 */
	case WIRE_ERROR:
		if (f->stream == 0) {
			upstream_on_conn_error(up, f);
			return;
		}
		break;
	case WIRE_RESPONSE:
	case WIRE_END:
		break;
	default:
		upstream_protocol_error(up, wire_type_str(f->type),
		    WIRE_E_TYPE);
		return;
	}
	if (!up->hello_seen) {
		upstream_protocol_error(up, "stream frame before HELLO",
		    WIRE_E_STREAM);
		return;
	}
	if ((s = upstream_lookup(up, f->stream)) == NULL)
		return;		/* cancelled or finished: ignore */
	if (f->type == WIRE_RESPONSE) {
		upstream_on_response(up, f, s);
	} else if (f->type == WIRE_END) {
		upstream_detach(up, f->stream);
		stream_on_end(s);
	} else {
		upstream_on_stream_error(up, f, s);
	}
}

/* DATA: the payload moves to the stream without being pulled up. */
static void
upstream_on_data(struct upstream *up, const struct wire_frame *f,
    struct evbuffer *in)
{
	struct stream *s;

	up->rx = 1;
	evbuffer_drain(in, WIRE_HEADER_SIZE);
	if ((s = upstream_lookup(up, f->stream)) == NULL) {
		evbuffer_drain(in, f->length);
		return;
	}
	if (!stream_responded(s)) {
		upstream_protocol_error(up, "DATA before RESPONSE", WIRE_E_STREAM);
		return;
	}
	evbuffer_remove_buffer(in, up->scratch, f->length);
	if (stream_on_data(s, up->scratch) == -1) {
		evbuffer_drain(up->scratch, evbuffer_get_length(up->scratch));
		upstream_protocol_error(up, "DATA beyond the stream's credit",
		    WIRE_E_LIMIT);
		return;
	}
	evbuffer_drain(up->scratch, evbuffer_get_length(up->scratch));
	if (f->flags & WIRE_FLAG_END && upstream_lookup(up, f->stream) == s) {
		upstream_detach(up, f->stream);
		stream_on_end(s);
	}
}

static void
upstream_peek_header(const uint8_t *p, struct wire_frame *f)
{
	f->length = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
	f->type = p[4];
	f->flags = p[5];
	f->stream = (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 |
	    (uint32_t)p[10] << 8 | p[11];
	f->payload = NULL;
}

static void
upstream_read_cb(void *arg)
{
	struct upstream *up = arg;
	struct sock *sk = up->sock;
	struct evbuffer *in = sock_input(sk);
	struct wire_frame f;
	const uint8_t *p;
	size_t len, need;
	int rc;

	while (up->sock == sk && (len = evbuffer_get_length(in)) >=
	    WIRE_HEADER_SIZE) {
		p = evbuffer_pullup(in, WIRE_HEADER_SIZE);
		rc = wire_decode_frame(p, WIRE_HEADER_SIZE, &f, &need);
		if (rc != WIRE_OK && rc != WIRE_NEED_MORE) {
			upstream_protocol_error(up, "bad frame", rc);
			return;
		}
		if (rc == WIRE_NEED_MORE) {
			if (len < need)
				return;
			/* The header was validated; DATA needs no more. */
			upstream_peek_header(p, &f);
			if (f.type != WIRE_DATA) {
				p = evbuffer_pullup(in, (ev_ssize_t)need);
				rc = wire_decode_frame(p, need, &f, &need);
				if (rc != WIRE_OK) {
					upstream_protocol_error(up, "bad frame",
					    rc);
					return;
				}
			}
		}
		if (f.type == WIRE_DATA) {
			if (f.stream == 0 || !up->hello_seen) {
				upstream_protocol_error(up, "bad DATA",
				    WIRE_E_STREAM);
				return;
			}
			upstream_on_data(up, &f, in);
			continue;
		}
		upstream_on_frame(up, &f);
		if (up->sock == sk)
			evbuffer_drain(in, need);
	}
}

/* Released connections (issue 3: names come and go) -------------------- */

/* Closed until upstream_get() wants it again: no timer, no reconnect. */
static void
upstream_park(struct upstream *up)
{
	upstream_goodbye(up, "no longer used");
	upstream_close(up);
	evtimer_del(up->timer);
	up->backoff_ms = 0;
	log_debug("worker %u: replica %s: released", up->w->id,
	    up->ep->id);
	upstream_set_state(up, UPSTREAM_IDLE);
}

void
upstream_release(struct upstream *up)
{
	uint8_t buf[WIRE_HEADER_SIZE + 16 + 16];
	struct wire_goaway g;
	size_t n;

	if (up->nwatch > 0 || up->released)
		return;
	up->released = 1;
	if (up->in_flight == 0 || up->sock == NULL) {
		upstream_park(up);
		return;
	}
	/* Streams still run: no new ones; parked when the last is done
	 * (upstream_detach wakes the timer). */
	memset(&g, 0, sizeof(g));
	g.last_stream = up->next_id - 1;
	g.code = WIRE_CODE_NONE;
	g.text.p = "no longer used";
	g.text.len = 14;
	if ((n = wire_encode_goaway(buf, &g)) > 0)
		upstream_write(up, buf, n);
	up->goaway = 1;
}

/* Wanted again.  While it still drains, the drain ends in a fresh
 * connection as after any GOAWAY. */
static void
upstream_revive(struct upstream *up)
{
	up->released = 0;
	if (up->state == UPSTREAM_IDLE)
		upstream_connect(up);
}
