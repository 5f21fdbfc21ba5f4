/*
 * upstream_conn.c -- the wire edge's connection state machine: connect,
 * warm (HELLO + PING), fail with backoff, the one timer, lingering after a
 * protocol error, and taking streams off the table (see upstream_impl.h).
 *
 * The lowest part of the wire edge: it calls neither upstream.c (the edge's
 * ops) nor upstream_read.c (frame dispatch); the socket callbacks reach the
 * latter through the table upstream.c stores in each connection.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
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
#include "upstream_impl.h"
#include "wire.h"
#include "wctx.h"

static const char *state_names[] = {
	"idle", "connecting", "warming", "ready", "down",
};

/* The handles on one list hear of a change; the one told may leave the
 * waiters' list for the watchers' meanwhile. */
void
upstream_tell_list(struct upstream *up, struct upconn_watch *w)
{
	struct upconn_watch *next;

	for (; w != NULL; w = next) {
		next = LIST_NEXT(w, link);
		w->event(w->h, (struct upconn *)up);
	}
}

/* A state change: every handle using up hears of it. */
void
upstream_tell(struct upstream *up)
{
	upstream_tell_list(up, LIST_FIRST(&up->watchers));
	upstream_tell_list(up, LIST_FIRST(&up->waiters));
}

void
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

void
upstream_arm(struct upstream *up, double seconds)
{
	struct timeval tv;

	tv.tv_sec = (time_t)seconds;
	tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
	evtimer_add(up->timer, &tv);
}

/* Every byte queued to the replica goes through here, counted, so that a
 * failure can tell which requests never reached the socket. */
void
upstream_write(struct upstream *up, const void *p, size_t n)
{
	evbuffer_add(sock_output(up->sock), p, n);
	up->out_added += n;
}


void
upstream_close(struct upstream *up)
{
	if (up->sock != NULL) {
		sock_free(up->sock);
		up->sock = NULL;
	}
}

/* We are going away: say so, best effort, with what is already queued. */
void
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


/* Connection life ------------------------------------------------------ */

/* A TLS endpoint: the handshake runs under the connect deadline. */
static int
upstream_tls(struct upstream *up)
{
	struct tls_cli *cl = atomic_load(&up->ep->tls);
	struct ssl_st *ssl;

	if (cl == NULL)
		return 0;
	if ((ssl = tls_cli_ssl(cl, NULL)) == NULL)
		return -1;
	return sock_tls_connect(up->sock, ssl, 0);
}

void
upstream_connect(struct upstream *up)
{
	const struct conf *conf = up->w->conf;

	upstream_close(up);
	up->hello_seen = 0;
	up->version = 0;
	up->goaway = 0;
	up->ping_out = 0;
	up->next_id = 1;
	up->sock = sock_new(up->w->base, -1, up->cbs, up);
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

void
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

void
upstream_connected_cb(void *arg)
{
	upstream_warm(arg);
}

void
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
void
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

struct stream *
upstream_lookup(struct upstream *up, uint32_t id)
{
	return idtab_get(&up->streams, id);
}

void
upstream_count_in_flight(struct upstream *up)
{
	registry_publish_in_flight(up->st, up->in_flight);
}
/* The stream leaves the table; a full connection that frees a slot tells
 * its handles, which may have requests waiting for exactly that. */
void
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

void
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

/* Closed until upstream_get() wants it again: no timer, no reconnect. */
void
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

