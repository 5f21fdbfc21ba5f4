/*
 * h2up_conn.c -- one HTTP/2 connection to a replica (see h2up_impl.h).
 *
 * libnghttp2's client session does the framing, HPACK, flow-control
 * accounting and RFC 9113's checks on responses; we feed it the sock's
 * input with mem_recv and copy what mem_send gives into the sock's output,
 * which sock writes once per loop pass.
 *
 * Flow control is bridged: responses are not acknowledged by nghttp2 on
 * its own (no_auto_window_update).  The connection window is consumed as
 * bytes arrive (it is sized to cover every stream's window, so one slow
 * client cannot stall the others); a stream's window only as its bytes
 * leave for the client (the carrier's window, h2up_stream.c).
 *
 * TLS ("protocol": "h2"): the same session over sock.c's TLS mode, ALPN
 * h2 offered and required (RFC 9113 section 3.2: a server that picks
 * anything else would read our preface as garbage), the replica verified
 * with the endpoint's client context (tls.c), which also resumes.
 *
 * Lifetime: closing marks the connection dead, frees the socket, takes
 * every stream out of nghttp2's hands and tells the replica; the session
 * and the struct are freed from the deferred resume event, never inside
 * an nghttp2 call, whose remaining callbacks see c->dead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "conf.h"
#include "h2up_impl.h"
#include "log.h"
#include "net.h"
#include "registry_publish.h"
#include "sock.h"
#include "tls.h"
#include "wctx.h"
#include "wire.h"

#define H2UP_READ_MAX	(256 * 1024)
#define H2UP_OUT_HIGH	(128 * 1024)	/* pull frames from nghttp2 under */
#define H2UP_OUT_LOW	(32 * 1024)
#define H2UP_CONN_WINDOW (64u << 20)	/* covers many streams' windows */

static void	h2up_conn_pass(struct h2up_conn *);
static void	h2up_conn_read_cb(void *);
static void	h2up_conn_drained_cb(void *);
static void	h2up_conn_connected_cb(void *);
static void	h2up_conn_error_cb(void *, int);

static const struct sock_cbs h2up_conn_cbs = {
	h2up_conn_read_cb, h2up_conn_drained_cb, h2up_conn_connected_cb,
	h2up_conn_error_cb,
};

static struct h2ups *
h2up_conn_stream(struct h2up_conn *c, int32_t id)
{
	if (c->dead)
		return NULL;
	return nghttp2_session_get_stream_user_data(c->ss, id);
}

/* nghttp2 callbacks ----------------------------------------------------- */

static int
h2up_on_header(nghttp2_session *ss, const nghttp2_frame *fr,
    const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen,
    uint8_t flags, void *u)
{
	struct h2ups *s;

	if (fr->hd.type != NGHTTP2_HEADERS ||
	    (s = h2up_conn_stream(u, fr->hd.stream_id)) == NULL)
		return 0;
	return h2ups_header(s, name, nlen, value, vlen);
}

/* The server's SETTINGS and our PING's answer prove the connection. */
static void
h2up_conn_proof(struct h2up_conn *c)
{
	if (c->proven || !c->settings_rx || c->ping_out)
		return;
	c->proven = 1;
	c->pool->hooks->ready(c);
}

static int
h2up_on_control(struct h2up_conn *c, const nghttp2_frame *fr)
{
	switch (fr->hd.type) {
	case NGHTTP2_SETTINGS:
		if (!(fr->hd.flags & NGHTTP2_FLAG_ACK))
			c->settings_rx = 1;
		h2up_conn_proof(c);
		break;
	case NGHTTP2_PING:
		if ((fr->hd.flags & NGHTTP2_FLAG_ACK) && c->ping_out) {
			c->ping_out = 0;
			c->misses = 0;
			registry_count_pong(c->pool->st);
			h2up_conn_proof(c);
		}
		break;
	case NGHTTP2_GOAWAY:
		if (!c->goaway) {
			c->goaway = 1;
			c->pool->hooks->goaway(c);
		}
		break;
	default:
		break;
	}
	return 0;
}

static int
h2up_on_frame_recv(nghttp2_session *ss, const nghttp2_frame *fr, void *u)
{
	struct h2up_conn *c = u;
	struct h2ups *s;
	int end = (fr->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;

	if (c->dead)
		return 0;
	c->rx = 1;
	if (fr->hd.stream_id == 0)
		return h2up_on_control(c, fr);
	if ((s = h2up_conn_stream(c, fr->hd.stream_id)) == NULL)
		return 0;
	if (fr->hd.type == NGHTTP2_HEADERS)
		h2ups_headers_done(s, end);
	else if (fr->hd.type == NGHTTP2_DATA && end)
		h2ups_data_end(s);
	return 0;
}

static int
h2up_on_data_chunk(nghttp2_session *ss, uint8_t flags, int32_t id,
    const uint8_t *data, size_t len, void *u)
{
	struct h2up_conn *c = u;
	struct h2ups *s;

	/* The connection's window goes back at once: a stream's own
	 * window is what holds its server back. */
	nghttp2_session_consume_connection(ss, len);
	if ((s = h2up_conn_stream(c, id)) != NULL)
		h2ups_data(s, data, len);
	return 0;
}

static int
h2up_on_frame_send(nghttp2_session *ss, const nghttp2_frame *fr, void *u)
{
	struct h2ups *s;

	if (fr->hd.type == NGHTTP2_HEADERS &&
	    (s = h2up_conn_stream(u, fr->hd.stream_id)) != NULL)
		h2ups_head_sent(s);
	return 0;
}

static int
h2up_on_stream_close(nghttp2_session *ss, int32_t id, uint32_t error,
    void *u)
{
	struct h2ups *s;

	if ((s = h2up_conn_stream(u, id)) != NULL) {
		nghttp2_session_set_stream_user_data(ss, id, NULL);
		h2ups_closed(s, error);
	}
	return 0;
}

/* The session ------------------------------------------------------------ */

static nghttp2_session_callbacks *
h2up_callbacks(void)
{
	nghttp2_session_callbacks *cb;

	if (nghttp2_session_callbacks_new(&cb) != 0)
		return NULL;
	nghttp2_session_callbacks_set_on_header_callback(cb, h2up_on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb,
	    h2up_on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb,
	    h2up_on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb,
	    h2up_on_frame_send);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb,
	    h2up_on_stream_close);
	return cb;
}

/* A client session: no push, our stream window the wire credit (the
 * stream's own accounting), a connection window that covers many. */
static int
h2up_session(struct h2up_conn *c)
{
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	nghttp2_settings_entry iv[2];
	int rv;

	if ((cb = h2up_callbacks()) == NULL)
		return -1;
	if (nghttp2_option_new(&opt) != 0) {
		nghttp2_session_callbacks_del(cb);
		return -1;
	}
	nghttp2_option_set_no_auto_window_update(opt, 1);
	rv = nghttp2_session_client_new2(&c->ss, cb, c, opt);
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cb);
	if (rv != 0)
		return -1;
	iv[0].settings_id = NGHTTP2_SETTINGS_ENABLE_PUSH;
	iv[0].value = 0;
	iv[1].settings_id = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;
	iv[1].value = WIRE_INITIAL_WINDOW;
	if (nghttp2_submit_settings(c->ss, NGHTTP2_FLAG_NONE, iv, 2) != 0 ||
	    nghttp2_session_set_local_window_size(c->ss, NGHTTP2_FLAG_NONE, 0,
	    (int32_t)H2UP_CONN_WINDOW) != 0)
		return -1;
	return 0;
}

static void
h2up_conn_resume_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct h2up_conn *c = arg;

	if (c->dead) {
		LIST_REMOVE(c, link);
		h2up_conn_free(c);
		return;
	}
	h2up_conn_pass(c);
}

/* A TLS endpoint's client SSL on c's sock, before it connects. */
static int
h2up_conn_tls(struct h2up_conn *c)
{
	struct tls_cli *cl = atomic_load(&c->pool->ep->tls);
	struct ssl_st *ssl;

	if (cl == NULL)
		return 0;
	if ((ssl = tls_cli_ssl(cl, "h2")) == NULL)
		return -1;
	return sock_tls_connect(c->sock, ssl, 0);
}

struct h2up_conn *
h2up_conn_open(struct h2up *h)
{
	struct h2up_conn *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->pool = h;
	LIST_INIT(&c->streams);
	LIST_INIT(&c->lost);
	TAILQ_INIT(&c->credit);
	c->resume = event_new(h->w->base, -1, 0, h2up_conn_resume_cb, c);
	c->sock = sock_new(h->w->base, -1, &h2up_conn_cbs, c);
	if (c->resume == NULL || c->sock == NULL || h2up_session(c) == -1) {
		h2up_conn_free(c);
		return NULL;
	}
	sock_set_limits(c->sock, H2UP_READ_MAX, H2UP_OUT_LOW);
	if (h2up_conn_tls(c) == -1 || sock_connect(c->sock,
	    (struct sockaddr *)&h->ep->addr.ss, (socklen_t)h->ep->addr.len) ==
	    -1) {
		h2up_conn_free(c);
		return NULL;
	}
	LIST_INSERT_HEAD(&h->conns, c, link);
	h->nconns++;
	return c;
}

void
h2up_conn_free(struct h2up_conn *c)
{
	if (c->sock != NULL)
		sock_free(c->sock);
	if (c->ss != NULL)
		nghttp2_session_del(c->ss);
	if (c->resume != NULL)
		event_free(c->resume);
	free(c);
}

void
h2up_conn_close(struct h2up_conn *c, const char *why, int fault)
{
	uint64_t written = c->out_added;
	unsigned n = c->nstreams;

	if (c->dead)
		return;
	c->dead = 1;
	if (c->sock != NULL) {
		written -= sock_output_len(c->sock);
		sock_free(c->sock);
		c->sock = NULL;
	}
	/* Out of nghttp2's hands first: callbacks still to come in this
	 * mem_recv must not find them; the replica hears before the streams
	 * are retried, so that none comes back to this connection. */
	h2ups_unlink_all(c);
	c->nstreams = 0;
	c->pool->nconns--;
	h2up_schedule(c);
	c->pool->hooks->closed(c, why, fault, n);
	h2ups_lose_all(c, written, why);
}

void
h2up_conn_ping(struct h2up_conn *c)
{
	if (c->dead || c->ping_out)
		return;
	if (nghttp2_submit_ping(c->ss, NGHTTP2_FLAG_NONE, NULL) != 0)
		return;
	c->ping_out = 1;
	registry_count_ping(c->pool->st);
	h2up_schedule(c);
}

uint32_t
h2up_conn_max_streams(const struct h2up_conn *c)
{
	return nghttp2_session_get_remote_settings(c->ss,
	    NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

/* I/O --------------------------------------------------------------------- */

static void
h2up_conn_fatal(struct h2up_conn *c, int rv)
{
	char why[128];

	snprintf(why, sizeof(why), "HTTP/2 error: %s", nghttp2_strerror(rv));
	log_warnx("replica %s (%s): %s", c->pool->ep->id,
	    c->pool->ep->addr.text, why);
	h2up_conn_close(c, why, 1);
}

/* Frames nghttp2 has for the server, while the output has room. */
static void
h2up_conn_send(struct h2up_conn *c)
{
	struct evbuffer *out;
	const uint8_t *data;
	ssize_t n;

	while (!c->dead && sock_output_len(c->sock) < H2UP_OUT_HIGH) {
		if ((n = nghttp2_session_mem_send(c->ss, &data)) <= 0) {
			if (n < 0)
				h2up_conn_fatal(c, (int)n);
			break;
		}
		out = sock_output(c->sock);
		evbuffer_add(out, data, (size_t)n);
		c->out_added += (uint64_t)n;
	}
	if (!c->dead && !nghttp2_session_want_read(c->ss) &&
	    !nghttp2_session_want_write(c->ss))
		h2up_conn_close(c, "HTTP/2 session over", 0);
}

static void
h2up_conn_pass(struct h2up_conn *c)
{
	if (c->dead || !c->connected)
		return;
	h2ups_credit_all(c);
	if (!c->dead)
		h2up_conn_send(c);
}

static void
h2up_conn_read_cb(void *arg)
{
	struct h2up_conn *c = arg;
	struct evbuffer *in = sock_input(c->sock);
	struct evbuffer_iovec v;
	ssize_t n;

	while (!c->dead && evbuffer_peek(in, -1, NULL, &v, 1) == 1 &&
	    v.iov_len > 0) {
		n = nghttp2_session_mem_recv(c->ss, v.iov_base, v.iov_len);
		if (c->dead)
			return;
		if (n < 0) {
			h2up_conn_fatal(c, (int)n);
			return;
		}
		evbuffer_drain(in, (size_t)n);
	}
	h2up_conn_pass(c);
}

static void
h2up_conn_drained_cb(void *arg)
{
	h2up_schedule(arg);
}

/* Over TLS: 1 if the server selected h2, else 0 and why. */
static int
h2up_conn_alpn(struct h2up_conn *c, char *why, size_t len)
{
	struct ssl_st *ssl = sock_ssl(c->sock);
	const char *p;
	size_t n;

	if (ssl == NULL)
		return 1;
	if ((p = tls_alpn(ssl, &n)) != NULL && n == 2 && memcmp(p, "h2",
	    2) == 0)
		return 1;
	if (p == NULL)
		snprintf(why, len, "TLS: the server selected no ALPN protocol "
		    "(h2 needed)");
	else
		snprintf(why, len, "TLS: the server selected ALPN \"%.*s\" "
		    "(h2 needed)", (int)(n < 64 ? n : 64), p);
	return 0;
}

/* Connected: our preface, SETTINGS and the PING that proves the server. */
static void
h2up_conn_connected_cb(void *arg)
{
	struct h2up_conn *c = arg;
	char why[128];

	c->connected = 1;
	if (!h2up_conn_alpn(c, why, sizeof(why))) {
		h2up_conn_close(c, why, 1);	/* logged as not ready */
		return;
	}
	if (c->pool->ep->addr.ss.ss_family != AF_UNIX)
		net_nodelay(sock_fd(c->sock));
	h2up_conn_ping(c);
	h2up_conn_pass(c);
}

static void
h2up_conn_error_cb(void *arg, int eof)
{
	struct h2up_conn *c = arg;
	const char *tls = sock_tls_error(c->sock);
	char why[200];

	if (tls[0] != '\0')
		snprintf(why, sizeof(why), "%sTLS: %s", c->connected ? "" :
		    "cannot connect: ", tls);
	else if (!c->connected)
		snprintf(why, sizeof(why), "cannot connect: %s",
		    eof ? "closed" : strerror(errno));
	else
		snprintf(why, sizeof(why), "%s", eof ?
		    "connection closed by replica" : strerror(errno));
	/* A connection the server closed after its GOAWAY, with nothing
	 * on it, is no fault. */
	if (c->connected && (c->nstreams > 0 || !c->goaway))
		log_warnx("replica %s (%s): %s", c->pool->ep->id,
		    c->pool->ep->addr.text, why);
	h2up_conn_close(c, why, !(c->goaway && c->nstreams == 0));
}
