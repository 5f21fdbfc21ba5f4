/*
 * hup_conn.c -- one keep-alive connection to an HTTP upstream: one
 * exchange at a time (no pipelining), the stream's carrier, flow control
 * both ways (see hup_impl.h for where it sits).
 *
 * HTTP/1.1 has no per-request cancel and no credit of its own, so:
 * cancelling a stream closes its connection (the server sees the
 * disconnect); response credit is mapped to how much of the socket we
 * read (no credit: reading stops and TCP pushes back on the server);
 * request credit goes back to the stream as the socket's output drains.
 *
 * TLS (a deployment's "tls"): the same connection over sock.c's TLS mode,
 * ALPN http/1.1, the replica verified as the wire edge does it (tls.c's
 * client context for the endpoint, which also offers the last session so
 * a pool refill resumes); connected means the handshake is done, within
 * timeouts.connect.
 *
 * Lifetime: the pool owns a connection.  Closing it frees the socket
 * (deferred by sock.c when inside its callback) and hands the struct to
 * the pool's dead list, freed from a deferred event: a read loop that a
 * stream callback closed under it only sees c->dead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "conf.h"
#include "hup_impl.h"
#include "hup_parse.h"
#include "hup_req.h"
#include "log.h"
#include "monotime.h"
#include "net.h"
#include "registry_publish.h"
#include "sock.h"
#include "stream.h"
#include "tls.h"
#include "wire.h"
#include "wctx.h"

#define HUP_READ_MAX	(256 * 1024)	/* input read ahead of the parser */
#define HUP_WRITE_LOW	(64 * 1024)	/* credit the body back at this */
#define HUP_PEEK_AFTER	0.5		/* s idle before a look on reuse */

static void	hup_conn_read(struct hup_conn *);
static void	hup_conn_read_cb(void *);
static void	hup_conn_drained_cb(void *);
static void	hup_conn_connected_cb(void *);
static void	hup_conn_error_cb(void *, int);
static const struct stream_carrier hup_carrier;

static const struct sock_cbs hup_conn_cbs = {
	hup_conn_read_cb, hup_conn_drained_cb, hup_conn_connected_cb,
	hup_conn_error_cb,
};

const char *
hup_peer(const struct hup *h)
{
	return h->ep->id;
}

/*
 * A body piece, pointing into the input segment being parsed: the bytes
 * before it (chunk framing) are drained and the piece is moved to the
 * body, whole chains without a copy.  Safe under the parser: nothing is
 * freed (moved chains live on in c->body), and the parser never reads
 * behind a piece it reported.
 */
static void
hup_conn_on_body(void *arg, const char *p, size_t n)
{
	struct hup_conn *c = arg;
	struct evbuffer *in;
	size_t off;

	if (c->seg == NULL || p < c->seg || p + n > c->seg + c->seg_len ||
	    (size_t)(p - c->seg) < c->seg_done) {
		evbuffer_add(c->body, p, n);	/* not from the input */
		return;
	}
	in = sock_input(c->sock);
	off = (size_t)(p - c->seg);
	evbuffer_drain(in, off - c->seg_done);
	evbuffer_remove_buffer(in, c->body, n);
	c->seg_done = off + n;
}

/* A TLS endpoint's client SSL on c's sock, before it connects. */
static int
hup_conn_tls(struct hup_conn *c)
{
	struct tls_cli *cl = atomic_load(&c->pool->ep->tls);
	struct ssl_st *ssl;

	if (cl == NULL)
		return 0;
	if ((ssl = tls_cli_ssl(cl, "http/1.1")) == NULL)
		return -1;
	return sock_tls_connect(c->sock, ssl, 0);
}

struct hup_conn *
hup_conn_open(struct hup *h)
{
	struct hup_conn *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->pool = h;
	c->parse = hup_parse_new(hup_conn_on_body, c);
	c->body = evbuffer_new();
	c->sock = sock_new(h->w->base, -1, &hup_conn_cbs, c);
	if (c->parse == NULL || c->body == NULL || c->sock == NULL) {
		hup_conn_free(c);
		return NULL;
	}
	sock_set_limits(c->sock, HUP_READ_MAX, HUP_WRITE_LOW);
	if (hup_conn_tls(c) == -1 || sock_connect(c->sock,
	    (struct sockaddr *)&h->ep->addr.ss, (socklen_t)h->ep->addr.len) ==
	    -1) {
		hup_conn_free(c);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&h->busy, c, link);
	h->nconns++;
	h->nconnecting++;
	c->connect_by = monotime_now() + h->w->conf->timeouts.connect;
	return c;
}

void
hup_conn_free(struct hup_conn *c)
{
	if (c->sock != NULL)
		sock_free(c->sock);
	if (c->parse != NULL)
		hup_parse_free(c->parse);
	if (c->body != NULL)
		evbuffer_free(c->body);
	free(c);
}

/* Every byte for the server goes through here, counted, so that a failure
 * can tell whether the server can have seen the request. */
static void
hup_conn_queued(struct hup_conn *c, size_t before)
{
	c->out_added += evbuffer_get_length(sock_output(c->sock)) - before;
}

/* The stream's protocol-free request, as its REQUEST frame says it. */
static int
hup_conn_decode(struct evbuffer *tmp, struct wire_request *wr,
    struct wire_field *fields, int *end)
{
	struct wire_frame f;
	size_t len = evbuffer_get_length(tmp), need;
	const uint8_t *p = evbuffer_pullup(tmp, (ev_ssize_t)len);

	if (p == NULL || wire_decode_frame(p, len, &f, &need) != WIRE_OK ||
	    wire_decode_request(&f, wr, fields, WIRE_MAX_FIELDS) != WIRE_OK)
		return -1;
	*end = (f.flags & WIRE_FLAG_END) != 0;
	return 0;
}

int
hup_conn_request(struct hup_conn *c, struct stream *s)
{
	struct wire_field fields[WIRE_MAX_FIELDS];
	struct wire_request wr;
	struct evbuffer *out;
	size_t before;
	int end;

	if (c->dead || c->job != HJ_NONE)
		return -1;
	c->id = ++c->pool->next_id;
	c->idempotent = 0;
	if (stream_encode(s, c->id, c->body) == -1) {
		evbuffer_drain(c->body, evbuffer_get_length(c->body));
		stream_on_fail(s, 431, "request head too large to forward");
		return 0;
	}
	if (hup_conn_decode(c->body, &wr, fields, &end) == -1) {
		evbuffer_drain(c->body, evbuffer_get_length(c->body));
		stream_on_fail(s, 431, "request head too large to forward");
		return 0;
	}
	out = sock_output(c->sock);
	before = evbuffer_get_length(out);
	c->req_at = c->out_added;
	c->idempotent = hup_req_is_idempotent(&wr);
	hup_req_head(out, &wr, !end, c->pool->host, &c->chunked);
	hup_conn_queued(c, before);
	hup_parse_start(c->parse, hup_req_is_head(&wr));
	evbuffer_drain(c->body, evbuffer_get_length(c->body));
	c->job = HJ_REQUEST;
	c->s = s;
	c->responded = 0;
	c->status = 0;
	c->credit = WIRE_INITIAL_WINDOW;
	c->owed = 0;
	stream_attached(s, &hup_carrier, c, c->id);
	stream_flush_pending(s);
	return 0;
}

void
hup_conn_probe(struct hup_conn *c, const char *path)
{
	struct evbuffer *out = sock_output(c->sock);
	size_t before = evbuffer_get_length(out);

	hup_req_probe(out, path, c->pool->host);
	hup_conn_queued(c, before);
	hup_parse_start(c->parse, 0);
	c->job = HJ_PROBE;
	c->status = 0;
}

/* Out of service: no more I/O, the pool's dead list until the reap. */
static void
hup_conn_bury(struct hup_conn *c)
{
	struct hup *h = c->pool;

	if (c->dead)
		return;
	c->dead = 1;
	sock_free(c->sock);
	c->sock = NULL;
	if (!c->connected)
		h->nconnecting--;
	if (c->on_idle) {
		TAILQ_REMOVE(&h->idle, c, link);
		h->nidle--;
		c->on_idle = 0;
	} else
		TAILQ_REMOVE(&h->busy, c, link);
	h->nconns--;
	TAILQ_INSERT_TAIL(&h->dead, c, link);
	event_active(h->reap, EV_TIMEOUT, 0);
}

/*
 * The classic keep-alive race: the server closed a connection it had
 * idle just as our request went out.  Nothing of a response came, so
 * with retry_idempotent a request that may be repeated goes again (on
 * another connection; stream_retry bounds the tries and refuses a body
 * it can no longer replay).
 */
static int
hup_conn_raced(const struct hup_conn *c)
{
	return c->pool->ep->http.retry_idempotent && c->idempotent &&
	    c->exchanges > 0 && c->connected && hup_parse_idle(c->parse);
}

/*
 * The connection ends badly.  A stream on it whose request never left the
 * socket (the server cannot have seen it) goes back to its handle for
 * another replica, as does an idempotent one caught in the keep-alive
 * race (hup_conn_raced); any other gets status (502: it may have acted
 * on it).
 */
static void
hup_conn_fail(struct hup_conn *c, int status, const char *why,
    int replica_fault)
{
	struct stream *s = c->s;
	enum hup_job job = c->job;
	uint64_t written = c->out_added;
	int again;

	if (c->dead)
		return;
	if (c->sock != NULL)
		written -= sock_output_len(c->sock);
	again = s != NULL && status != 0 && (written <= c->req_at ||
	    hup_conn_raced(c));
	if (again && written > c->req_at)
		replica_fault = 0;	/* the race, not a broken replica */
	c->s = NULL;
	hup_conn_bury(c);
	c->job = HJ_NONE;
	c->pool->hooks->failed(c, job, why, replica_fault);
	if (s == NULL || status == 0)
		return;
	if (again && stream_retry(s) == 0) {
		if (written > c->req_at)
			log_info("replica %s (%s): %s before any response: "
			    "idempotent request sent again", hup_peer(c->pool),
			    c->pool->ep->addr.text, why);
		return;
	}
	stream_on_fail(s, status, why);
}

void
hup_conn_connect_timeout(struct hup_conn *c)
{
	hup_conn_fail(c, 502, "cannot connect: timed out", 1);
}

/* Discarded for what came while it sat idle: nobody's response. */
static void
hup_conn_stray(struct hup_conn *c, const char *what)
{
	log_warnx("replica %s (%s): %s on an idle connection: discarded",
	    hup_peer(c->pool), c->pool->ep->addr.text, what);
	hup_conn_close(c, 0, "stray bytes on an idle connection");
}

/*
 * The event loop reads idle connections, but bytes (or a close) that
 * came in the same pass as the request about to use one are not read
 * yet: look before the request goes, so that it never takes them for
 * its response.  Only after HUP_PEEK_AFTER idle: a server closes idle
 * connections after seconds (the race retry_idempotent is about), and
 * a look per request would be a fifth system call on the busy path.
 */
int
hup_conn_usable(struct hup_conn *c)
{
	int n;

	if (sock_input_len(c->sock) > 0) {
		hup_conn_stray(c, "bytes");
		return 0;
	}
	if (monotime_coarse() - c->idle_since < HUP_PEEK_AFTER)
		return 1;
	if ((n = sock_peek_idle(c->sock)) == 0)
		return 1;
	if (n > 0)
		hup_conn_stray(c, "bytes");
	else
		hup_conn_close(c, 0, errno == 0 ?
		    "connection closed by replica" : strerror(errno));
	return 0;
}

void
hup_conn_close(struct hup_conn *c, int status, const char *why)
{
	hup_conn_fail(c, status, why, 0);
}

/* A broken response: logged with the replica, the client gets 502 (or
 * a cut connection once the head went out), the connection is dropped. */
static void
hup_conn_fault(struct hup_conn *c, const char *why)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "bad response from replica: %s", why);
	log_warnx("replica %s (%s): %s", hup_peer(c->pool),
	    c->pool->ep->addr.text, msg);
	hup_conn_fail(c, 502, msg, 1);
}

/* The exchange is over.  The pool hears first, so a stream that ends can
 * find this connection idle again at once. */
static void
hup_conn_finish(struct hup_conn *c)
{
	struct stream *s = c->s;
	enum hup_job job = c->job;
	int keep = hup_parse_keep_alive(c->parse) &&
	    evbuffer_get_length(sock_input(c->sock)) == 0;

	if (hup_parse_keep_alive(c->parse) && !keep) {
		/* The response was whole: the stream ends well, the
		 * connection (with what follows) is dropped. */
		c->s = NULL;
		hup_conn_fault(c, "bytes after a complete response");
		if (s != NULL)
			stream_on_end(s);
		return;
	}
	c->s = NULL;
	c->job = HJ_NONE;
	c->exchanges++;
	if (!keep)
		hup_conn_bury(c);
	c->pool->hooks->finished(c, job, c->status, keep);
	if (s != NULL)
		stream_on_end(s);
}

/* The head is in: to the stream (or, for a check, kept for the end). */
static void
hup_conn_head(struct hup_conn *c)
{
	const struct hup_resp *r = hup_parse_resp(c->parse);
	struct stream *s = c->s;

	c->status = r->status;
	c->pool->hooks->status(c, r->status);
	if (c->job != HJ_REQUEST) {
		if (r->complete)
			hup_conn_finish(c);
		return;
	}
	c->responded = 1;
	if (!r->complete) {
		stream_on_response(s, r->status, r->fields, r->nfields, 0);
		return;
	}
	/* No body: the stream is done before it hears of the end. */
	c->s = NULL;
	stream_on_response(s, r->status, r->fields, r->nfields, 1);
	c->s = s;
	if (!c->dead)
		hup_conn_finish(c);
	else
		stream_on_end(s);
}

/* Parsed body to the stream, within its credit (the feed was cut to it). */
static void
hup_conn_deliver(struct hup_conn *c)
{
	size_t n = evbuffer_get_length(c->body);

	if (n == 0)
		return;
	if (c->job != HJ_REQUEST || c->s == NULL) {
		evbuffer_drain(c->body, n);
		return;
	}
	c->credit -= n < c->credit ? n : c->credit;
	(void)stream_on_data(c->s, c->body);	/* within credit: cut to it */
	evbuffer_drain(c->body, evbuffer_get_length(c->body));
}

/* How much of the input the parser may see now. */
static size_t
hup_conn_budget(const struct hup_conn *c, size_t len)
{
	if (c->job != HJ_REQUEST || !c->responded)
		return len;	/* heads and checks: bounded by the parser */
	return len < c->credit ? len : (size_t)c->credit;
}

static void
hup_conn_read(struct hup_conn *c)
{
	struct evbuffer *in;
	struct evbuffer_iovec v;
	enum hup_parse_rc rc;
	size_t len, n, used;

	c->in_read++;
	while (!c->dead && (len = evbuffer_get_length(in =
	    sock_input(c->sock))) > 0) {
		if (c->job == HJ_NONE) {
			hup_conn_stray(c, "bytes");
			break;
		}
		if ((n = hup_conn_budget(c, len)) == 0) {
			sock_read_enable(c->sock, 0);	/* credit brings it back */
			break;
		}
		if (evbuffer_peek(in, (ev_ssize_t)n, NULL, &v, 1) < 1)
			break;
		c->seg = v.iov_base;
		c->seg_len = v.iov_len < n ? v.iov_len : n;
		c->seg_done = 0;
		rc = hup_parse_feed(c->parse, c->seg, c->seg_len, &used);
		c->seg = NULL;
		if (used > c->seg_done)
			evbuffer_drain(in, used - c->seg_done);
		hup_conn_deliver(c);
		if (c->dead)
			break;
		if (rc == HUP_ERROR)
			hup_conn_fault(c, hup_parse_error(c->parse));
		else if (rc == HUP_HEAD)
			hup_conn_head(c);
		else if (rc == HUP_DONE)
			hup_conn_finish(c);
	}
	c->in_read--;
}

static void
hup_conn_read_cb(void *arg)
{
	hup_conn_read(arg);
}

/* The request body left for the server: the stream may send that much
 * more (its credit). */
static void
hup_conn_drained_cb(void *arg)
{
	struct hup_conn *c = arg;
	uint64_t n = c->owed;

	if (c->job != HJ_REQUEST || c->s == NULL || n == 0)
		return;
	c->owed = 0;
	stream_on_window(c->s, (uint32_t)n);
}

static void
hup_conn_connected_cb(void *arg)
{
	struct hup_conn *c = arg;

	c->connected = 1;
	c->pool->nconnecting--;
	if (c->pool->ep->addr.ss.ss_family != AF_UNIX)
		net_nodelay(sock_fd(c->sock));
	c->pool->hooks->connected(c);
}

static void
hup_conn_error_cb(void *arg, int eof)
{
	struct hup_conn *c = arg;
	const char *tls = sock_tls_error(c->sock);
	char why[200];

	if (eof && c->job != HJ_NONE && c->status != 0 &&
	    hup_parse_eof(c->parse) == HUP_DONE) {
		hup_conn_finish(c);	/* a body read until close */
		return;
	}
	/* A TLS failure says OpenSSL's reason: a handshake's (a replica
	 * certificate that does not verify), or an alert after it (TLS 1.3
	 * servers refuse a client certificate once our handshake is done). */
	if (tls[0] != '\0')
		snprintf(why, sizeof(why), "%sTLS: %s", c->connected ? "" :
		    "cannot connect: ", tls);
	else if (!c->connected)
		snprintf(why, sizeof(why), "cannot connect: %s",
		    eof ? "closed" : strerror(errno));
	else
		snprintf(why, sizeof(why), "%s", eof ?
		    "connection closed by replica" : strerror(errno));
	if (c->job == HJ_NONE && c->connected) {
		/* Idle: the server's choice (its keep-alive timeout). */
		log_debug("replica %s (%s): idle connection: %s",
		    hup_peer(c->pool), c->pool->ep->addr.text, why);
		hup_conn_close(c, 0, why);
		return;
	}
	if (c->job != HJ_NONE && c->connected)
		log_warnx("replica %s (%s): %s", hup_peer(c->pool),
		    c->pool->ep->addr.text, why);
	hup_conn_fail(c, 502, why, 1);
}

/* The carrier (stream.h) --------------------------------------------- */

static void
hup_carrier_data(void *arg, uint32_t id, const void *p, size_t n)
{
	struct hup_conn *c = arg;
	struct evbuffer *out;
	size_t before;

	if (c->dead || c->s == NULL || c->id != id)
		return;
	out = sock_output(c->sock);
	before = evbuffer_get_length(out);
	hup_req_body(out, c->chunked, p, n);
	hup_conn_queued(c, before);
	c->owed += n;
}

static void
hup_carrier_end(void *arg, uint32_t id)
{
	struct hup_conn *c = arg;
	struct evbuffer *out;
	size_t before;

	if (c->dead || c->s == NULL || c->id != id)
		return;
	out = sock_output(c->sock);
	before = evbuffer_get_length(out);
	hup_req_end(out, c->chunked);
	hup_conn_queued(c, before);
}

/* Credit: read on.  What already waits in the input is parsed from the
 * pool's loop (a carrier op never calls the stream back). */
static void
hup_carrier_window(void *arg, uint32_t id, uint32_t n)
{
	struct hup_conn *c = arg;

	if (c->dead || c->s == NULL || c->id != id)
		return;
	c->credit += n;
	sock_read_enable(c->sock, 1);
	if (!c->in_read && evbuffer_get_length(sock_input(c->sock)) > 0)
		event_active(c->pool->reap, EV_TIMEOUT, 0);
}

/* HTTP/1.1 cannot cancel one request: closing the connection does, and
 * the server sees it. */
static void
hup_carrier_cancel(void *arg, struct stream *s, uint32_t code)
{
	struct hup_conn *c = arg;

	if (c->dead || c->s != s)
		return;
	c->s = NULL;
	hup_conn_close(c, 0, code == WIRE_CODE_TIMEOUT ?
	    "request deadline passed" : "client went away");
}

static const char *
hup_carrier_peer(const void *arg)
{
	const struct hup_conn *c = arg;

	return hup_peer(c->pool);
}

static const struct stream_carrier hup_carrier = {
	.data = hup_carrier_data,
	.end = hup_carrier_end,
	.window = hup_carrier_window,
	.cancel = hup_carrier_cancel,
	.peer = hup_carrier_peer,
};

/* Connections whose input waits for credit that came (the pool's reap
 * event, fired with EV_READ by the carrier's window). */
void
hup_conn_resume_all(struct hup *h)
{
	struct hup_conn *c, *next;

	for (c = TAILQ_FIRST(&h->busy); c != NULL; c = next) {
		next = TAILQ_NEXT(c, link);
		if (!c->dead && c->job == HJ_REQUEST && c->credit > 0 &&
		    c->sock != NULL && evbuffer_get_length(sock_input(c->sock)))
			hup_conn_read(c);
	}
}
