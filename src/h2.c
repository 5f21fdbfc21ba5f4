/*
 * h2.c -- an HTTP/2 client connection (see h2.h).
 *
 * libnghttp2 does the framing, HPACK, flow-control accounting and the
 * RFC 9113 checks (pseudo-headers, connection-specific fields, TE other
 * than "trailers", content-length against DATA, frames on closed streams,
 * window overflow); we feed it our sock's input with mem_recv and copy
 * what mem_send gives into the sock's output, which sock writes once per
 * loop pass.  Request windows are not updated by nghttp2 on its own
 * (no_auto_window_update): h2_stream.c consumes bytes only once they
 * moved on to the replica, so the client's window is the replica's
 * credit, never a buffer here.
 *
 * On top of nghttp2's own limits we count, per one-second window,
 * RST_STREAMs from the client (rapid reset) and PING/SETTINGS frames, and
 * CONTINUATIONs per header block; past a limit the connection ends with
 * GOAWAY(ENHANCE_YOUR_CALM).
 *
 * Nothing here frees the connection inside an nghttp2 call or a stream
 * callback: h2_close marks it and the deferred resume event frees it once
 * the output (a last GOAWAY) is flushed.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "clientlim.h"
#include "conf.h"
#include "h2.h"
#include "h2_impl.h"
#include "log.h"
#include "sock.h"
#include "wctx.h"
#include "worker.h"

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/* Output is pulled from nghttp2 only while under this, so response data
 * is credited back to the replica only as it leaves for the client. */
#define H2_OUT_HIGH	(128 * 1024)
#define H2_OUT_LOW	(32 * 1024)
#define H2_READ_HIGH	(256 * 1024)

static void	h2_close(struct h2conn *);
static void	h2_send(struct h2conn *);

/*
 * The request line of the preface is enough to decide: a client that
 * sends it speaks HTTP/2 (or nothing), and a bad rest of the preface is
 * then answered as HTTP/2 says (GOAWAY PROTOCOL_ERROR), not with a 400.
 */
int
h2_sniff(const void *p, size_t n)
{
	size_t k = n < 16 ? n : 16;

	if (memcmp(p, h2_preface, k) != 0)
		return 0;
	return n < 16 ? -1 : 1;
}

/* The idle or header-block timer, from the connection's state. */
static void
h2_rearm(struct h2conn *c)
{
	const struct conf_timeouts *t = &c->w->conf->timeouts;

	if (c->closing)
		return;
	if (c->in_block)
		deadline_set(&c->timer, t->header);
	else if (c->nstreams == 0)
		deadline_set(&c->timer, t->keepalive);
	else
		deadline_clear(&c->timer);
}

/* A graceful GOAWAY: streams already taken run to their end, then the
 * connection closes (h2_stream_gone). */
static void
h2_goaway(struct h2conn *c)
{
	if (c->draining)
		return;
	c->draining = 1;
	nghttp2_submit_goaway(c->ss, NGHTTP2_FLAG_NONE,
	    nghttp2_session_get_last_proc_stream_id(c->ss), NGHTTP2_NO_ERROR,
	    NULL, 0);
	if (c->nstreams == 0)
		h2_close(c);
	h2_schedule(c);
}

static void
h2_stream_gone(struct h2conn *c)
{
	c->nstreams--;
	if (c->draining && c->nstreams == 0)
		h2_close(c);
	h2_rearm(c);
}

/* Over a flood limit (RFC 9113 10.5: suspicious activity). */
static int
h2_calm(struct h2conn *c, const char *what)
{
	log_debug("client %s: HTTP/2 %s: ENHANCE_YOUR_CALM", c->peer, what);
	nghttp2_session_terminate_session(c->ss, NGHTTP2_ENHANCE_YOUR_CALM);
	return NGHTTP2_ERR_CALLBACK_FAILURE;
}

static int
h2_count(struct h2conn *c, unsigned *counter, unsigned limit)
{
	double now = h2_now(c);

	if (now - c->win_start >= 1) {
		c->win_start = now;
		c->resets = c->controls = 0;
	}
	return ++*counter > limit;
}

/* nghttp2 callbacks ----------------------------------------------------- */

static int
h2_on_begin_frame(nghttp2_session *ss, const nghttp2_frame_hd *hd, void *u)
{
	struct h2conn *c = u;
	const struct conf_http2 *cf = &c->w->conf->http2;

	switch (hd->type) {
	case NGHTTP2_HEADERS:
		c->conts = 0;
		c->in_block = !(hd->flags & NGHTTP2_FLAG_END_HEADERS);
		break;
	case NGHTTP2_CONTINUATION:
		if (++c->conts > cf->max_continuations)
			return h2_calm(c, "CONTINUATION flood");
		c->in_block = !(hd->flags & NGHTTP2_FLAG_END_HEADERS);
		break;
	case NGHTTP2_PING:
	case NGHTTP2_SETTINGS:
		if (!(hd->flags & NGHTTP2_FLAG_ACK) &&
		    h2_count(c, &c->controls, cf->max_control_per_second))
			return h2_calm(c, "PING/SETTINGS flood");
		break;
	case NGHTTP2_RST_STREAM:
		if (h2_count(c, &c->resets, cf->max_resets_per_second))
			return h2_calm(c, "rapid reset");
		break;
	default:
		break;
	}
	return 0;
}

static int
h2_on_begin_headers(nghttp2_session *ss, const nghttp2_frame *fr, void *u)
{
	struct h2conn *c = u;
	struct h2s *s;

	if (fr->hd.type != NGHTTP2_HEADERS ||
	    fr->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	if ((s = h2s_new(c, fr->hd.stream_id)) == NULL)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	c->nstreams++;
	nghttp2_session_set_stream_user_data(ss, fr->hd.stream_id, s);
	return 0;
}

static int
h2_on_header(nghttp2_session *ss, const nghttp2_frame *fr,
    const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen,
    uint8_t flags, void *u)
{
	struct h2s *s;

	if (fr->hd.type != NGHTTP2_HEADERS || (s =
	    nghttp2_session_get_stream_user_data(ss, fr->hd.stream_id)) == NULL)
		return 0;
	return h2s_header(s, name, nlen, value, vlen);
}

static int
h2_on_frame_recv(nghttp2_session *ss, const nghttp2_frame *fr, void *u)
{
	struct h2s *s;
	int end = (fr->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;

	if (fr->hd.type != NGHTTP2_HEADERS && fr->hd.type != NGHTTP2_DATA)
		return 0;
	if ((s = nghttp2_session_get_stream_user_data(ss,
	    fr->hd.stream_id)) == NULL)
		return 0;
	if (fr->hd.type == NGHTTP2_HEADERS && !h2s_head_seen(s))
		h2s_head_done(s, end);		/* may close it: re-read */
	else if (end)
		h2s_body_end(s);
	return 0;
}

static int
h2_on_data_chunk(nghttp2_session *ss, uint8_t flags, int32_t id,
    const uint8_t *data, size_t len, void *u)
{
	struct h2s *s = nghttp2_session_get_stream_user_data(ss, id);

	if (s == NULL) {
		nghttp2_session_consume(ss, id, len);
		return 0;
	}
	h2s_body(s, data, len);
	return 0;
}

static int
h2_on_frame_send(nghttp2_session *ss, const nghttp2_frame *fr, void *u)
{
	struct h2s *s;

	if ((fr->hd.type == NGHTTP2_HEADERS || fr->hd.type == NGHTTP2_DATA) &&
	    (fr->hd.flags & NGHTTP2_FLAG_END_STREAM) && (s =
	    nghttp2_session_get_stream_user_data(ss, fr->hd.stream_id)) != NULL)
		h2s_sent_end(s);
	return 0;
}

/*
 * A DATA frame the stream's data provider flagged NO_COPY: the header,
 * then the payload moved from the stream's buffer into our output, not
 * copied through nghttp2's frame buffer on the way.  Past the output's
 * high-water mark the frame waits: nghttp2 offers it again, unchanged, on
 * the next h2_send (mem_send returns 0 meanwhile).
 */
static int
h2_send_data(nghttp2_session *ss, nghttp2_frame *fr, const uint8_t *hd,
    size_t len, nghttp2_data_source *src, void *u)
{
	struct h2conn *c = u;
	struct h2s *s = nghttp2_session_get_stream_user_data(ss,
	    fr->hd.stream_id);

	if (s == NULL)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	if (sock_output_len(c->sock) >= H2_OUT_HIGH)
		return NGHTTP2_ERR_WOULDBLOCK;
	return h2s_send_data(s, sock_output(c->sock), hd, len,
	    fr->data.padlen);
}

static int
h2_on_stream_close(nghttp2_session *ss, int32_t id, uint32_t error, void *u)
{
	struct h2s *s = nghttp2_session_get_stream_user_data(ss, id);

	if (s != NULL) {
		nghttp2_session_set_stream_user_data(ss, id, NULL);
		h2s_closed(s, error);
	}
	return 0;
}

/* The session ------------------------------------------------------------ */

static nghttp2_session_callbacks *
h2_callbacks(void)
{
	nghttp2_session_callbacks *cb;

	if (nghttp2_session_callbacks_new(&cb) != 0)
		return NULL;
	nghttp2_session_callbacks_set_on_begin_frame_callback(cb,
	    h2_on_begin_frame);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb,
	    h2_on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2_on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb,
	    h2_on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb,
	    h2_on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb,
	    h2_on_frame_send);
	nghttp2_session_callbacks_set_send_data_callback(cb, h2_send_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb,
	    h2_on_stream_close);
	return cb;
}

static int
h2_session(struct h2conn *c)
{
	const struct conf_http2 *cf = &c->w->conf->http2;
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	nghttp2_settings_entry iv[3];
	uint64_t conn_window;
	int rv;

	if ((cb = h2_callbacks()) == NULL)
		return -1;
	if (nghttp2_option_new(&opt) != 0) {
		nghttp2_session_callbacks_del(cb);
		return -1;
	}
	nghttp2_option_set_no_auto_window_update(opt, 1);
	nghttp2_option_set_max_continuations(opt, cf->max_continuations);
	/* A backstop behind our own per-second count. */
	nghttp2_option_set_stream_reset_rate_limit(opt,
	    2 * (uint64_t)cf->max_resets_per_second, cf->max_resets_per_second);
	rv = nghttp2_session_server_new2(&c->ss, cb, c, opt);
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cb);
	if (rv != 0)
		return -1;
	iv[0].settings_id = NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS;
	iv[0].value = cf->max_concurrent_streams;
	iv[1].settings_id = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;
	iv[1].value = cf->initial_window_size;
	iv[2].settings_id = NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE;
	iv[2].value = (uint32_t)cf->max_header_list_size;
	if (nghttp2_submit_settings(c->ss, NGHTTP2_FLAG_NONE, iv, 3) != 0)
		return -1;
	/* The connection window covers every stream's window, so one slow
	 * stream cannot stall the others. */
	conn_window = (uint64_t)cf->initial_window_size *
	    cf->max_concurrent_streams;
	if (conn_window > NGHTTP2_MAX_WINDOW_SIZE)
		conn_window = NGHTTP2_MAX_WINDOW_SIZE;
	if (conn_window > NGHTTP2_INITIAL_CONNECTION_WINDOW_SIZE)
		nghttp2_session_set_local_window_size(c->ss, NGHTTP2_FLAG_NONE,
		    0, (int32_t)conn_window);
	return 0;
}

/* I/O --------------------------------------------------------------------- */

/*
 * A fatal error: tell the client why (a GOAWAY with the code RFC 9113
 * asks for) if the session can still send, then close.
 */
static void
h2_fatal(struct h2conn *c, int rv)
{
	uint32_t code = NGHTTP2_PROTOCOL_ERROR;

	log_debug("client %s: HTTP/2: %s", c->peer, nghttp2_strerror(rv));
	if (rv == NGHTTP2_ERR_FLOODED || rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS)
		code = NGHTTP2_ENHANCE_YOUR_CALM;
	if (rv != NGHTTP2_ERR_CALLBACK_FAILURE)
		nghttp2_session_terminate_session(c->ss, code);
	h2_close(c);
	h2_send(c);
}

/* Frames nghttp2 has for the client, while the output has room. */
static void
h2_send(struct h2conn *c)
{
	struct evbuffer *out = sock_output(c->sock);
	const uint8_t *data;
	ssize_t n;

	while (sock_output_len(c->sock) < H2_OUT_HIGH) {
		if ((n = nghttp2_session_mem_send(c->ss, &data)) <= 0) {
			if (n < 0 && !c->closing)
				h2_fatal(c, (int)n);
			break;
		}
		evbuffer_add(out, data, (size_t)n);
	}
	if (!c->closing && !nghttp2_session_want_read(c->ss) &&
	    !nghttp2_session_want_write(c->ss))
		h2_close(c);
}

static void
h2_recv(struct h2conn *c)
{
	struct evbuffer *in = sock_input(c->sock);
	struct evbuffer_iovec v;
	ssize_t n;

	while (!c->closing && evbuffer_peek(in, -1, NULL, &v, 1) == 1 &&
	    v.iov_len > 0) {
		n = nghttp2_session_mem_recv(c->ss, v.iov_base, v.iov_len);
		if (n < 0) {
			h2_fatal(c, (int)n);
			return;
		}
		evbuffer_drain(in, (size_t)n);
	}
}

/* Stop reading; free once what we wrote has gone out (bounded). */
static void
h2_close(struct h2conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	sock_read_enable(c->sock, 0);
	deadline_set(&c->timer, c->w->conf->timeouts.header);
	h2_schedule(c);
}

static void
h2_free(struct h2conn *c)
{
	struct h2s *s;

	LIST_REMOVE(c, link);
	/* nghttp2_session_del calls no stream-close callback. */
	while ((s = LIST_FIRST(&c->streams)) != NULL)
		h2s_abandon(s);
	nghttp2_session_del(c->ss);
	sock_free(c->sock);
	deadline_del(&c->timer);
	event_free(c->resume);
	clientlim_close(c->client_key);
	worker_conn_close(c->w);
	free(c->subject);
	free(c);
}

/* Every loop pass with work: credit, flush, and see a reload. */
static void
h2_pass(struct h2conn *c)
{
	if (c->closing) {
		if (sock_output_len(c->sock) == 0)
			h2_free(c);
		else
			h2_send(c);
		return;
	}
	h2s_credit_all(c);
	/* A reload: finish what runs under the old conf, then let the
	 * client reconnect to the new one. */
	if (c->conf != c->w->conf)
		h2_goaway(c);
	h2_send(c);
}

static void
h2_resume_cb(evutil_socket_t fd, short ev, void *arg)
{
	h2_pass(arg);
}

static void
h2_read_cb(void *arg)
{
	struct h2conn *c = arg;

	h2_recv(c);
	if (c->closing) {
		h2_schedule(c);
		return;
	}
	h2_rearm(c);
	h2_pass(c);
	/* A client that does not read what it asks for (PINGs, SETTINGS)
	 * is not read either. */
	sock_read_enable(c->sock, sock_output_len(c->sock) < 4 * H2_OUT_HIGH);
}

static void
h2_drained_cb(void *arg)
{
	struct h2conn *c = arg;

	if (!c->closing)
		sock_read_enable(c->sock, 1);
	h2_schedule(c);
}

static void
h2_error_cb(void *arg, int eof)
{
	h2_free(arg);
}

static void
h2_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct h2conn *c = arg;

	if (!deadline_expired(&c->timer))
		return;
	if (c->closing) {
		h2_free(c);		/* the client stopped reading */
		return;
	}
	if (c->in_block) {
		log_debug("client %s: HTTP/2 header block not received in "
		    "time", c->peer);
		nghttp2_session_terminate_session(c->ss,
		    NGHTTP2_PROTOCOL_ERROR);
		h2_close(c);
		h2_send(c);
	} else if (c->nstreams == 0)
		h2_goaway(c);		/* idle */
}

static const struct sock_cbs h2_sock_cbs = {
	h2_read_cb, h2_drained_cb, NULL, h2_error_cb,
};

int
h2_accept(struct wctx *w, struct sock *sock, const char *peer, int admin,
    uint64_t client_key)
{
	struct h2conn *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -1;
	c->w = w;
	c->conf = w->conf;
	c->sock = sock;
	c->admin = admin;
	c->client_key = client_key;
	c->stream_gone = h2_stream_gone;
	LIST_INIT(&c->streams);
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	if ((c->resume = event_new(w->base, -1, 0, h2_resume_cb, c)) == NULL ||
	    h2_session(c) == -1) {
		if (c->resume != NULL)
			event_free(c->resume);
		if (c->ss != NULL)
			nghttp2_session_del(c->ss);
		free(c);
		return -1;
	}
	deadline_init(&c->timer, w->base, h2_timer_cb, c);
	LIST_INSERT_HEAD(&w->h2conns, c, link);
	sock_set_cbs(sock, &h2_sock_cbs, c);
	sock_set_limits(sock, H2_READ_HIGH, H2_OUT_LOW);
	sock_read_enable(sock, 1);
	/* The preface (and maybe more) is in the input already. */
	h2_read_cb(c);
	return 0;
}

void
h2_free_all(struct wctx *w)
{
	while (!LIST_EMPTY(&w->h2conns))
		h2_free(LIST_FIRST(&w->h2conns));
}

unsigned
h2_drain_all(struct wctx *w)
{
	struct h2conn *c;
	unsigned busy = 0;

	LIST_FOREACH(c, &w->h2conns, link) {
		if (c->closing)
			continue;
		h2_goaway(c);
		if (c->nstreams > 0)
			busy++;
	}
	return busy;
}
