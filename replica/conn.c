/*
 * conn.c -- one ingressd connection of the replica library.
 *
 * One struct conn per accepted ingressd connection.  Input goes into one
 * flat buffer per connection so the pure decoder in wire.c can look at whole
 * frames in place; a request head is copied once, into the req's own
 * allocation, and body pieces are handed to the handler straight from that
 * buffer.  Output frames are encoded into the connection's evbuffer with
 * reserve/commit and written by one writev when the loop next turns, so a
 * batch of pipelined requests costs one read and one write.
 *
 * Read and write are raw events rather than a bufferevent: a bufferevent
 * would add an ioctl(FIONREAD) per read and an epoll_ctl pair per write.
 * The write event is only added to the base when a write falls short; the
 * usual path activates it by hand (no syscall) after the read callback.
 *
 * Callbacks may free: a req can be freed inside replica_end() and friends,
 * so every callback into the handler is bracketed by req->busy, and a req is
 * only freed once busy drops to zero.  A connection found broken while its
 * input is being processed is closed after the loop, not inside it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replica_impl.h"
#include "tls.h"

static void	conn_read_cb(void *);
static void	conn_drained_cb(void *);
static void	conn_error_cb(void *, int);

static const struct sock_cbs conn_sock_cbs = {
	conn_read_cb, conn_drained_cb, NULL, conn_error_cb,
};

void
replica_log(struct replica *r, const char *fmt, ...)
{
	char	buf[512];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "replica %s: %s\n", r->id, buf);
}

/* Output: every frame is encoded straight into the evbuffer. */

uint8_t *
out_reserve(struct conn *c, size_t size, struct evbuffer_iovec *v)
{
	if (evbuffer_reserve_space(sock_output(c->sock), (ev_ssize_t)size, v,
	    1) != 1 ||
	    v->iov_len < size)
		return NULL;
	return v->iov_base;
}

int
out_commit(struct conn *c, struct evbuffer_iovec *v, size_t size)
{
	v->iov_len = size;
	return evbuffer_commit_space(sock_output(c->sock), v, 1);
}

int
send_hello(struct conn *c)
{
	struct replica	     *r = c->r;
	struct wire_hello     h;
	struct evbuffer_iovec v;
	uint8_t		     *p;
	size_t		      size;

	h.version = WIRE_VERSION;
	h.max_concurrency = r->max_concurrency;
	h.deployment.p = r->deployment;
	h.deployment.len = strlen(r->deployment);
	h.replica_id.p = r->id;
	h.replica_id.len = strlen(r->id);
	if ((size = wire_hello_size(&h)) == 0 ||
	    (p = out_reserve(c, size, &v)) == NULL)
		return -1;
	wire_encode_hello(p, &h);
	return out_commit(c, &v, size);
}

int
send_error(struct conn *c, uint32_t stream, uint32_t code, const char *text)
{
	struct wire_error     e;
	struct evbuffer_iovec v;
	uint8_t		     *p;
	size_t		      size;

	e.code = code;
	e.text.p = text;
	e.text.len = strlen(text);
	if (e.text.len > WIRE_MAX_TEXT)
		e.text.len = WIRE_MAX_TEXT;
	if ((size = wire_error_size(&e)) == 0 ||
	    (p = out_reserve(c, size, &v)) == NULL)
		return -1;
	wire_encode_error(p, stream, &e);
	return out_commit(c, &v, size);
}

int
send_small(struct conn *c, const uint8_t *frame, size_t n)
{
	return evbuffer_add(sock_output(c->sock), frame, n);
}

int
send_goaway(struct conn *c)
{
	struct wire_goaway    g = { c->last_stream, WIRE_CODE_SHUTDOWN,
	    { "shutting down", 13 } };
	struct evbuffer_iovec v;
	uint8_t		     *p;
	size_t		      size;

	if ((size = wire_goaway_size(&g)) == 0 ||
	    (p = out_reserve(c, size, &v)) == NULL)
		return -1;
	wire_encode_goaway(p, &g);
	c->goaway = 1;
	return out_commit(c, &v, size);
}

int
frame_hello(struct conn *c, const struct wire_frame *f, const char **why)
{
	struct wire_hello h;

	if (c->state != CONN_HELLO) {
		*why = "second HELLO";
		return -1;
	}
	if (wire_decode_hello(f, &h) != WIRE_OK) {
		*why = "bad HELLO";
		return -1;
	}
	/*
	 * The peer's version is at least 1 (0 does not decode), so
	 * min(ours, theirs) is always one we speak.  Below 2 the response
	 * trailers are dropped (trailers.c).
	 */
	c->version = wire_version_agree(h.version);
	c->state = CONN_READY;
	return 0;
}

int
frame_ping(struct conn *c, const struct wire_frame *f, const char **why)
{
	uint8_t	opaque[8], pong[WIRE_HEADER_SIZE + 8];

	if (wire_decode_ping(f, opaque) != WIRE_OK) {
		*why = "bad PING";
		return -1;
	}
	c->pings++;
	wire_encode_ping(pong, WIRE_PONG, opaque);
	if (send_small(c, pong, sizeof pong) != 0) {
		*why = "out of memory";
		return -1;
	}
	return 0;
}

static int
conn_frame(struct conn *c, const struct wire_frame *f, const char **why)
{
	struct wire_error e;

	if (c->state == CONN_HELLO && f->type != WIRE_HELLO) {
		*why = "expected HELLO";
		return -1;
	}
	switch (f->type) {
	case WIRE_HELLO:
		return frame_hello(c, f, why);
	case WIRE_PING:
		return frame_ping(c, f, why);
	case WIRE_ERROR:
		if (f->stream != 0)
			break;
		/* Fatal from the peer: it closes, so do we, silently. */
		if (wire_decode_error(f, &e) == WIRE_OK)
			replica_log(c->r, "peer error %s: %.*s",
			    wire_code_str(e.code), (int)e.text.len, e.text.p);
		c->dead = 1;
		return 0;
	default:
		break;
	}
	/* Streams, and what is left, are the layer above's. */
	return c->r->ops->stream_frame(c, f, why);
}

/* Connections. */

static void
conn_free(struct conn *c)
{
	LIST_REMOVE(c, entry);
	sock_free(c->sock);	/* deferred when inside its callback */
	if (c->closer != NULL)
		event_free(c->closer);
	idtab_clear(&c->streams);
	free(c);
}

/* Cancel every stream (the handler hears on_cancel for each). */
static void
conn_cancel_all(struct conn *c)
{
	struct replica_req *q;

	/* Popped first: a req the handler holds (busy) is freed later, and
	 * its idtab_del() then finds nothing. */
	while ((q = idtab_pop(&c->streams, NULL)) != NULL)
		c->r->ops->cancel(q);
}

/* Close now: output not yet written is dropped. */
void
conn_close(struct conn *c)
{
	if (c->busy) {
		c->dead = 1;
		return;
	}
	c->state = CONN_CLOSING;
	conn_cancel_all(c);
	conn_free(c);
}

static void
conn_closer_cb(evutil_socket_t fd, short what, void *arg)
{
	conn_free(arg);		/* a peer that never reads */
}

/*
 * Close once the last frames (an ERROR, a GOAWAY) are out, or time out:
 * reading stops and the drained callback, now at zero bytes, frees.
 */
static void
conn_close_after_flush(struct conn *c)
{
	struct timeval	tv = { CLOSE_TIMEOUT, 0 };

	c->state = CONN_CLOSING;
	sock_read_enable(c->sock, 0);
	conn_cancel_all(c);
	if (sock_output_len(c->sock) == 0 || (c->closer = evtimer_new(
	    c->r->base, conn_closer_cb, c)) == NULL ||
	    evtimer_add(c->closer, &tv) != 0) {
		conn_close(c);
		return;
	}
	sock_set_limits(c->sock, IN_MAX, 0);
}

static void
conn_protocol_error(struct conn *c, const char *why)
{
	replica_log(c->r, "protocol error: %s", why);
	send_error(c, 0, WIRE_CODE_PROTOCOL, why);
	conn_close_after_flush(c);
}

static void
conn_drained_cb(void *arg)
{
	struct conn	*c = arg;

	if (c->state == CONN_CLOSING) {
		if (sock_output_len(c->sock) == 0)
			conn_free(c);
		return;
	}
	sock_read_enable(c->sock, 1);
}

static void
conn_error_cb(void *arg, int eof)
{
	conn_close(arg);
}

/*
 * The next whole frame at the front of the input, contiguous: the first
 * chain usually holds it (no copy).  A DATA frame across chains stays where
 * it lies (*split: its payload goes up in pieces); any other frame, small,
 * is pulled up.
 */
static int
conn_next_frame(struct evbuffer *in, struct wire_frame *f, size_t *need,
    int *split)
{
	size_t	 len = evbuffer_get_length(in);
	size_t	 have = evbuffer_get_contiguous_space(in);
	uint8_t	*p;
	int	 rc;

	*split = 0;
	*need = WIRE_HEADER_SIZE;
	if (len < WIRE_HEADER_SIZE)
		return WIRE_NEED_MORE;
	/* At most three rounds: the header, then the whole frame. */
	for (;;) {
		if ((p = evbuffer_pullup(in, (ev_ssize_t)have)) == NULL)
			return WIRE_NEED_MORE;	/* no memory: retried later */
		rc = wire_decode_frame(p, have, f, need);
		if (rc != WIRE_NEED_MORE || *need > len)
			return rc;
		if (have >= WIRE_HEADER_SIZE && f->type == WIRE_DATA) {
			*split = 1;
			return WIRE_OK;
		}
		have = *need;
	}
}

#define CONN_PIECES	8	/* chains one DATA frame may span */

/*
 * A DATA frame across chains (need bytes at the front of in), handed up as
 * one DATA frame per chain, read in place (conn_frame checks each, as it
 * would the whole): only the last piece carries the frame's END flag.  The layer above checks credit piece by piece, which
 * sums to the frame's check.  A frame over more chains than CONN_PIECES
 * (not seen: reads are up to 256 KiB) is pulled up instead.
 */
static int
conn_data_split(struct conn *c, struct evbuffer *in, struct wire_frame *f,
    size_t need, const char **why)
{
	struct evbuffer_iovec v[CONN_PIECES];
	struct wire_frame piece = *f;
	size_t	 skip = WIRE_HEADER_SIZE, left = f->length, take;
	int	 i, n;

	n = evbuffer_peek(in, (ev_ssize_t)need, NULL, v, CONN_PIECES);
	if (n > CONN_PIECES) {
		if ((f->payload = evbuffer_pullup(in, (ev_ssize_t)need)) ==
		    NULL) {
			*why = "out of memory";
			return -1;
		}
		f->payload += WIRE_HEADER_SIZE;
		return conn_frame(c, f, why);
	}
	for (i = 0; i < n && left > 0 && !c->dead; i++) {
		if (v[i].iov_len <= skip) {
			skip -= v[i].iov_len;
			continue;
		}
		take = v[i].iov_len - skip < left ? v[i].iov_len - skip : left;
		piece.payload = (const uint8_t *)v[i].iov_base + skip;
		piece.length = (uint32_t)take;
		skip = 0;
		left -= take;
		piece.flags = left == 0 ? f->flags :
		    f->flags & ~WIRE_FLAG_END;
		if (conn_frame(c, &piece, why) != 0)
			return -1;
	}
	return 0;
}

/* Decode and dispatch every whole frame in the input. */
static void
conn_process(struct conn *c)
{
	struct evbuffer	 *in = sock_input(c->sock);
	struct wire_frame f;
	const char	 *why = NULL;
	size_t		  need = 0;
	int		  rc, split;

	c->busy = 1;
	while (!c->dead && c->state != CONN_CLOSING) {
		rc = conn_next_frame(in, &f, &need, &split);
		if (rc == WIRE_NEED_MORE)
			break;
		if (rc != WIRE_OK) {
			why = wire_result_str(rc);
			break;
		}
		if ((split ? conn_data_split(c, in, &f, need, &why) :
		    conn_frame(c, &f, &why)) != 0) {
			if (why == NULL)
				why = "bad frame";
			break;
		}
		why = NULL;
		evbuffer_drain(in, need);
	}
	c->busy = 0;
	if (c->dead) {
		conn_close(c);
		return;
	}
	if (why != NULL) {
		conn_protocol_error(c, why);
		return;
	}
	if (c->state != CONN_CLOSING && sock_output_len(c->sock) > OUT_HIGH)
		sock_read_enable(c->sock, 0);
}

static void
conn_read_cb(void *arg)
{
	conn_process(arg);
}

/* The connection owns fd from here on, unless this fails. */
struct conn *
conn_new(struct replica *r, int fd)
{
	struct ssl_st	*ssl;
	struct conn	*c;

	if ((c = calloc(1, sizeof *c)) == NULL)
		return NULL;
	c->r = r;
	if ((c->sock = sock_new(r->base, fd, &conn_sock_cbs, c)) == NULL) {
		free(c);
		return NULL;
	}
	/* TLS: the handshake first; our HELLO waits in the output. */
	if (r->tls != NULL && ((ssl = tls_srv_ssl(r->tls)) == NULL ||
	    sock_tls_accept(c->sock, ssl, tls_srv_handshake_timeout(r->tls)) ==
	    -1)) {
		sock_free(c->sock);
		free(c);
		return NULL;
	}
	/* A whole frame fits (decode_frame bounds it); pause above OUT_HIGH
	 * until the output is back at OUT_LOW. */
	sock_set_limits(c->sock, IN_MAX, OUT_LOW);
	LIST_INSERT_HEAD(&r->conns, c, entry);
	return c;
}
