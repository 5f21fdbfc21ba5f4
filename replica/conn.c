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

static void	conn_want_flush(struct conn *);

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
	if (evbuffer_reserve_space(c->out, (ev_ssize_t)size, v, 1) != 1 ||
	    v->iov_len < size)
		return NULL;
	return v->iov_base;
}

int
out_commit(struct conn *c, struct evbuffer_iovec *v, size_t size)
{
	v->iov_len = size;
	if (evbuffer_commit_space(c->out, v, 1) != 0)
		return -1;
	conn_want_flush(c);
	return 0;
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
	if (evbuffer_add(c->out, frame, n) != 0)
		return -1;
	conn_want_flush(c);
	return 0;
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
	 * We speak only version 1 and the peer's is at least 1 (0 does not
	 * decode), so min(ours, theirs) is always one we speak.
	 */
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
	case WIRE_REQUEST:
		return frame_request(c, f, why);
	case WIRE_DATA:
	case WIRE_END:
		return frame_body(c, f, why);
	case WIRE_CANCEL:
		return frame_cancel(c, f, why);
	case WIRE_ERROR:
		if (f->stream != 0)
			return frame_cancel(c, f, why);
		/* Fatal from the peer: it closes, so do we, silently. */
		if (wire_decode_error(f, &e) == WIRE_OK)
			replica_log(c->r, "peer error %s: %.*s",
			    wire_code_str(e.code), (int)e.text.len, e.text.p);
		c->dead = 1;
		return 0;
	default:
		return frame_other(c, f, why);
	}
}

/* Connections. */

static void
conn_free(struct conn *c)
{
	LIST_REMOVE(c, entry);
	event_free(c->rev);
	event_free(c->wev);
	close(c->fd);
	evbuffer_free(c->out);
	free(c->in);
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
		req_cancel(q);
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

/* Close once the last frames (an ERROR, a GOAWAY) are out, or time out. */
static void
conn_close_after_flush(struct conn *c)
{
	struct timeval	tv = { CLOSE_TIMEOUT, 0 };

	c->state = CONN_CLOSING;
	if (c->reading) {
		event_del(c->rev);
		c->reading = 0;
	}
	conn_cancel_all(c);
	if (c->writing)
		event_add(c->wev, &tv);	/* a peer that never reads */
	else
		conn_want_flush(c);
}

static void
conn_protocol_error(struct conn *c, const char *why)
{
	replica_log(c->r, "protocol error: %s", why);
	send_error(c, 0, WIRE_CODE_PROTOCOL, why);
	conn_close_after_flush(c);
}

static void
conn_want_flush(struct conn *c)
{
	if (c->flushing || c->writing)
		return;
	c->flushing = 1;
	event_active(c->wev, EV_WRITE, 1);
}

static void
conn_read_pause(struct conn *c, int pause)
{
	if (pause && c->reading) {
		event_del(c->rev);
		c->reading = 0;
	} else if (!pause && !c->reading && c->state != CONN_CLOSING) {
		event_add(c->rev, NULL);
		c->reading = 1;
	}
}

static void
conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn	*c = arg;
	struct timeval	 tv = { CLOSE_TIMEOUT, 0 };
	size_t		 left;

	c->flushing = 0;
	if ((what & EV_TIMEOUT) && c->state == CONN_CLOSING) {
		conn_free(c);
		return;
	}
	if (evbuffer_write(c->out, fd) < 0 && errno != EAGAIN &&
	    errno != EINTR) {
		conn_close(c);
		return;
	}
	if ((left = evbuffer_get_length(c->out)) == 0) {
		if (c->writing) {
			event_del(c->wev);
			c->writing = 0;
		}
		if (c->state == CONN_CLOSING) {
			conn_free(c);
			return;
		}
	} else if (!c->writing) {
		event_add(c->wev, c->state == CONN_CLOSING ? &tv : NULL);
		c->writing = 1;
	}
	if (left < OUT_LOW)
		conn_read_pause(c, 0);
}

/* Decode and dispatch every whole frame in the input buffer. */
static void
conn_process(struct conn *c)
{
	struct wire_frame f;
	const char	 *why = NULL;
	size_t		  off = 0, need = 0;
	uint8_t		 *p;
	int		  rc = WIRE_OK;

	c->busy = 1;
	while (!c->dead && c->state != CONN_CLOSING) {
		rc = wire_decode_frame(c->in + off, c->inlen - off, &f, &need);
		if (rc == WIRE_NEED_MORE)
			break;
		if (rc != WIRE_OK) {
			why = wire_result_str(rc);
			break;
		}
		if (conn_frame(c, &f, &why) != 0) {
			if (why == NULL)
				why = "bad frame";
			break;
		}
		why = NULL;
		off += need;
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
	if (c->state == CONN_CLOSING)
		return;
	if (off != 0) {
		memmove(c->in, c->in + off, c->inlen - off);
		c->inlen -= off;
	}
	if (rc == WIRE_NEED_MORE && need > c->incap) {
		/* A frame bigger than the buffer; decode_frame bounded need. */
		if ((p = realloc(c->in, need)) == NULL) {
			conn_protocol_error(c, "out of memory");
			return;
		}
		c->in = p;
		c->incap = need;
	} else if (c->inlen == 0 && c->incap > IN_DEFAULT &&
	    (p = realloc(c->in, IN_DEFAULT)) != NULL) {
		c->in = p;
		c->incap = IN_DEFAULT;
	}
	if (evbuffer_get_length(c->out) > OUT_HIGH)
		conn_read_pause(c, 1);
}

static void
conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn	*c = arg;
	ssize_t		 n;

	/* conn_process() leaves room for the rest of any partial frame. */
	if (c->inlen == c->incap) {
		conn_protocol_error(c, "input buffer full");
		return;
	}
	n = read(fd, c->in + c->inlen, c->incap - c->inlen);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	c->inlen += (size_t)n;
	conn_process(c);
}

struct conn *
conn_new(struct replica *r, int fd)
{
	struct conn	*c;

	if ((c = calloc(1, sizeof *c)) == NULL)
		return NULL;
	c->r = r;
	c->fd = fd;
	c->incap = IN_DEFAULT;
	c->in = malloc(c->incap);
	c->out = evbuffer_new();
	c->rev = event_new(r->base, fd, EV_READ | EV_PERSIST, conn_read_cb, c);
	c->wev = event_new(r->base, fd, EV_WRITE | EV_PERSIST, conn_write_cb,
	    c);
	if (c->in == NULL || c->out == NULL ||
	    c->rev == NULL || c->wev == NULL || event_add(c->rev, NULL) != 0) {
		if (c->rev != NULL)
			event_free(c->rev);
		if (c->wev != NULL)
			event_free(c->wev);
		if (c->out != NULL)
			evbuffer_free(c->out);
		free(c->in);
		free(c);
		return NULL;
	}
	c->reading = 1;
	LIST_INSERT_HEAD(&r->conns, c, entry);
	return c;
}

