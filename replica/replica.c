/*
 * replica.c -- libingressd-replica: the replica side of wire protocol v1.
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
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "replica.h"
#include "wire.h"

/* The input buffer holds a whole DATA frame as ingressd splits them
 * (WIRE_MAX_DATA): a smaller one was grown and shrunk again for every
 * frame of an upload, an mmap, page faults and a munmap each time. */
#define IN_DEFAULT	(WIRE_HEADER_SIZE + WIRE_MAX_DATA)
#define OUT_HIGH	(8u << 20)	/* stop reading above this much output */
#define OUT_LOW		(1u << 20)	/* and resume below this */
#define TAB_MIN		16		/* stream table buckets */
#define CLOSE_TIMEOUT	5		/* seconds to flush a last ERROR */

struct conn;

struct req_hdr {
	const char	*name;
	const char	*value;
};

struct replica_req {
	struct conn	*c;
	struct replica_req *hnext;	/* stream table chain */
	uint32_t	 stream;
	uint32_t	 deadline_ms;
	unsigned	 conn_pings;
	int		 busy;		/* inside a handler callback */
	unsigned	 in_done:1;	/* request body complete */
	unsigned	 out_head:1;	/* RESPONSE sent */
	unsigned	 out_done:1;	/* the handler ended the response */
	unsigned	 end_pending:1;	/* END waits behind pending */
	unsigned	 cancelled:1;
	unsigned	 failed:1;	/* replica_fail(): no more callbacks */
	unsigned	 paused:1;	/* replica_req_pause(): no credit given */
	unsigned	 want_writable:1; /* on_writable once pending drains */
	int64_t		 cancel_code;	/* CANCEL/ERROR code, -1: not a frame */
	void		*user;
	struct evbuffer	*body;
	size_t		 body_len;
	uint64_t	 send_credit;	/* response DATA bytes we may send */
	uint64_t	 recv_credit;	/* request DATA bytes ingressd may send */
	size_t		 unacked;	/* consumed, not yet credited back */
	struct evbuffer	*pending;	/* response body waiting for credit */
	const char	*method;
	const char	*target;
	const char	*path;
	const char	*query;
	const char	*deployment;
	const char	*request_id;
	unsigned	 nhdr;
	struct req_hdr	 hdr[];		/* then the strings */
};

enum conn_state {
	CONN_HELLO,		/* waiting for the proxy's HELLO */
	CONN_READY,
	CONN_CLOSING,		/* flushing a last frame, then free */
};

struct conn {
	struct replica	*r;
	LIST_ENTRY(conn) entry;
	int		 fd;
	enum conn_state	 state;
	struct event	*rev;
	struct event	*wev;
	uint8_t		*in;
	size_t		 inlen;
	size_t		 incap;
	struct evbuffer	*out;
	struct replica_req **tab;
	size_t		 tabsize;	/* power of two */
	size_t		 nreqs;
	uint32_t	 last_stream;	/* highest REQUEST stream seen */
	unsigned	 pings;
	int		 busy;		/* processing input */
	unsigned	 dead:1;	/* close once not busy */
	unsigned	 reading:1;	/* rev added */
	unsigned	 writing:1;	/* wev added */
	unsigned	 flushing:1;	/* wev activated by hand */
	unsigned	 goaway:1;	/* we sent GOAWAY */
};

struct replica {
	struct event_base *base;
	struct replica_handler h;
	void		*arg;
	char		 id[WIRE_MAX_NAME + 1];
	char		 deployment[WIRE_MAX_NAME + 1];
	char		 address[256];
	char		 unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint32_t	 max_concurrency;
	unsigned	 drain_ms;
	unsigned	 active;	/* live reqs, all connections */
	struct evconnlistener *lev;
	struct event	*sigterm;
	struct event	*sigint;
	struct event	*drain_ev;
	struct event	*accept_ev;	/* re-enables accept after EMFILE */
	int		 stopping;
	LIST_HEAD(, conn) conns;
	struct wire_field fields[WIRE_MAX_FIELDS];	/* decode scratch */
};

static void	conn_close(struct conn *);
static void	conn_want_flush(struct conn *);
static void	req_maybe_free(struct replica_req *);
static void	req_grant(struct replica_req *);
static int	req_on_window(struct replica_req *, uint32_t);
static void	replica_drained(struct replica *);

static void
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

static uint8_t *
out_reserve(struct conn *c, size_t size, struct evbuffer_iovec *v)
{
	if (evbuffer_reserve_space(c->out, (ev_ssize_t)size, v, 1) != 1 ||
	    v->iov_len < size)
		return NULL;
	return v->iov_base;
}

static int
out_commit(struct conn *c, struct evbuffer_iovec *v, size_t size)
{
	v->iov_len = size;
	if (evbuffer_commit_space(c->out, v, 1) != 0)
		return -1;
	conn_want_flush(c);
	return 0;
}

static int
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

static int
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

static int
send_small(struct conn *c, const uint8_t *frame, size_t n)
{
	if (evbuffer_add(c->out, frame, n) != 0)
		return -1;
	conn_want_flush(c);
	return 0;
}

static int
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

/* The stream table: chained buckets, ids are sequential so a mask does. */

static struct replica_req *
tab_find(struct conn *c, uint32_t stream)
{
	struct replica_req *q;

	for (q = c->tab[stream & (c->tabsize - 1)]; q != NULL; q = q->hnext)
		if (q->stream == stream)
			return q;
	return NULL;
}

static int
tab_grow(struct conn *c)
{
	struct replica_req **tab, *q, *next;
	size_t		     size = c->tabsize * 2, i;

	if ((tab = calloc(size, sizeof *tab)) == NULL)
		return -1;
	for (i = 0; i < c->tabsize; i++) {
		for (q = c->tab[i]; q != NULL; q = next) {
			next = q->hnext;
			q->hnext = tab[q->stream & (size - 1)];
			tab[q->stream & (size - 1)] = q;
		}
	}
	free(c->tab);
	c->tab = tab;
	c->tabsize = size;
	return 0;
}

static int
tab_insert(struct conn *c, struct replica_req *q)
{
	size_t	b;

	if (c->nreqs >= c->tabsize && tab_grow(c) != 0)
		return -1;
	b = q->stream & (c->tabsize - 1);
	q->hnext = c->tab[b];
	c->tab[b] = q;
	c->nreqs++;
	return 0;
}

static void
tab_remove(struct conn *c, struct replica_req *q)
{
	struct replica_req **pp;

	for (pp = &c->tab[q->stream & (c->tabsize - 1)]; *pp != NULL;
	    pp = &(*pp)->hnext) {
		if (*pp == q) {
			*pp = q->hnext;
			c->nreqs--;
			return;
		}
	}
}

/* Requests. */

static char *
copy_str(char **pp, const char *s, size_t n)
{
	char	*p = *pp;

	if (n != 0)
		memcpy(p, s, n);
	p[n] = '\0';
	*pp = p + n + 1;
	return p;
}

/* One allocation: the struct, the header array, then every string. */
static struct replica_req *
req_new(struct conn *c, uint32_t stream, const struct wire_request *w)
{
	struct replica_req *q;
	const char	   *qm;
	size_t		    strs, pathlen, i;
	char		   *p;

	qm = memchr(w->target.p, '?', w->target.len);
	pathlen = qm != NULL ? (size_t)(qm - w->target.p) : w->target.len;
	strs = w->method.len + w->target.len + pathlen + w->deployment.len +
	    w->request_id.len + 5;
	for (i = 0; i < w->nfields; i++)
		strs += w->fields[i].name.len + w->fields[i].value.len + 2;
	q = malloc(sizeof *q + w->nfields * sizeof q->hdr[0] + strs);
	if (q == NULL)
		return NULL;
	memset(q, 0, sizeof *q);
	q->c = c;
	q->stream = stream;
	q->send_credit = WIRE_INITIAL_WINDOW;
	q->recv_credit = WIRE_INITIAL_WINDOW;
	q->deadline_ms = w->deadline_ms;
	q->cancel_code = -1;
	q->conn_pings = c->pings;
	q->nhdr = w->nfields;
	p = (char *)&q->hdr[w->nfields];
	q->method = copy_str(&p, w->method.p, w->method.len);
	q->target = copy_str(&p, w->target.p, w->target.len);
	q->path = copy_str(&p, w->target.p, pathlen);
	q->query = qm != NULL ? q->target + pathlen + 1 : q->target +
	    w->target.len;
	q->deployment = copy_str(&p, w->deployment.p, w->deployment.len);
	q->request_id = copy_str(&p, w->request_id.p, w->request_id.len);
	for (i = 0; i < w->nfields; i++) {
		q->hdr[i].name = copy_str(&p, w->fields[i].name.p,
		    w->fields[i].name.len);
		q->hdr[i].value = copy_str(&p, w->fields[i].value.p,
		    w->fields[i].value.len);
	}
	return q;
}

static void
req_free(struct replica_req *q)
{
	struct conn	*c = q->c;
	struct replica	*r = c->r;

	tab_remove(c, q);
	if (q->body != NULL)
		evbuffer_free(q->body);
	if (q->pending != NULL)
		evbuffer_free(q->pending);
	free(q);
	r->active--;
	if (r->stopping && r->active == 0)
		replica_drained(r);
}

static size_t
req_pending(const struct replica_req *q)
{
	return q->pending != NULL ? evbuffer_get_length(q->pending) : 0;
}

/*
 * The stream is over for us once the response is out (ingressd sends
 * nothing more on it then, and what still arrives is ignored), or when it
 * was cancelled or failed.
 */
static void
req_maybe_free(struct replica_req *q)
{
	if (q->busy != 0)
		return;
	if (q->cancelled || q->failed || (q->out_done && !q->end_pending &&
	    req_pending(q) == 0))
		req_free(q);
}

static void
req_cancel(struct replica_req *q)
{
	struct replica	*r = q->c->r;

	if (q->cancelled)
		return;
	q->cancelled = 1;
	if (!q->failed && r->h.on_cancel != NULL) {
		q->busy++;
		r->h.on_cancel(q, r->arg);
		q->busy--;
	}
	req_maybe_free(q);
}

/* The request side ended: deliver on_end unless the handler failed it. */
static void
req_in_end(struct replica_req *q)
{
	struct replica	*r = q->c->r;

	q->in_done = 1;
	if (!q->failed && !q->cancelled && !q->out_done &&
	    r->h.on_end != NULL) {
		q->busy++;
		r->h.on_end(q, r->arg);
		q->busy--;
	}
	req_maybe_free(q);
}

static int
req_body(struct replica_req *q, const uint8_t *p, size_t n)
{
	struct replica	*r = q->c->r;

	q->body_len += n;
	q->unacked += n;
	if (q->failed || q->cancelled || q->out_done || n == 0)
		return 0;
	if (r->h.on_body != NULL) {
		q->busy++;
		r->h.on_body(q, p, n, r->arg);
		q->busy--;
		return 0;
	}
	if (q->body == NULL && (q->body = evbuffer_new()) == NULL)
		return -1;
	return evbuffer_add(q->body, p, n);
}

/* Frame handling.  Each returns 0, or -1 with a reason for ERROR. */

static int
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

static int
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

/* A REQUEST we will not run: answer ERROR on its stream and forget it. */
static int
refuse(struct conn *c, uint32_t stream, uint32_t code, const char *text)
{
	return send_error(c, stream, code, text);
}

static int
frame_request(struct conn *c, const struct wire_frame *f, const char **why)
{
	struct replica	   *r = c->r;
	struct wire_request w;
	struct replica_req *q;

	if (f->stream <= c->last_stream) {
		*why = "REQUEST stream id not increasing";
		return -1;
	}
	c->last_stream = f->stream;
	if (wire_decode_request(f, &w, r->fields, WIRE_MAX_FIELDS) !=
	    WIRE_OK) {
		*why = "bad REQUEST";
		return -1;
	}
	if (r->stopping || c->goaway)
		return refuse(c, f->stream, WIRE_CODE_REFUSED, "draining");
	if (r->active >= r->max_concurrency)
		return refuse(c, f->stream, WIRE_CODE_OVERLOAD,
		    "over max_concurrency");
	if ((q = req_new(c, f->stream, &w)) == NULL)
		return refuse(c, f->stream, WIRE_CODE_INTERNAL, "out of memory");
	if (tab_insert(c, q) != 0) {
		free(q);
		return refuse(c, f->stream, WIRE_CODE_INTERNAL, "out of memory");
	}
	r->active++;
	q->busy++;
	r->h.on_request(q, r->arg);
	q->busy--;
	if (f->flags & WIRE_FLAG_END)
		req_in_end(q);
	else
		req_maybe_free(q);
	return 0;
}

/* DATA or END: frames for streams we do not know are ignored. */
static int
frame_body(struct conn *c, const struct wire_frame *f, const char **why)
{
	struct replica_req *q;

	if ((q = tab_find(c, f->stream)) == NULL)
		return 0;
	if (q->in_done) {
		*why = "DATA after END";
		return -1;
	}
	if (f->type == WIRE_DATA && f->length > q->recv_credit) {
		*why = "DATA beyond the stream's credit";
		return -1;
	}
	if (f->type == WIRE_DATA && f->length != 0) {
		q->recv_credit -= f->length;
		q->busy++;
		if (req_body(q, f->payload, f->length) != 0) {
			q->busy--;
			*why = "out of memory";
			return -1;
		}
		q->busy--;
	}
	if (f->type == WIRE_END || (f->flags & WIRE_FLAG_END))
		req_in_end(q);
	else {
		req_grant(q);
		req_maybe_free(q);
	}
	return 0;
}

static int
frame_cancel(struct conn *c, const struct wire_frame *f, const char **why)
{
	struct replica_req *q;
	struct wire_error   e;
	uint32_t	    code;

	if (f->type == WIRE_CANCEL) {
		if (wire_decode_cancel(f, &code) != WIRE_OK) {
			*why = "bad CANCEL";
			return -1;
		}
	} else if (wire_decode_error(f, &e) != WIRE_OK) {
		*why = "bad ERROR";
		return -1;
	} else
		code = e.code;
	if ((q = tab_find(c, f->stream)) != NULL) {
		if (!q->cancelled)
			q->cancel_code = code;
		req_cancel(q);
	}
	return 0;
}

/* Connection-level frames we only validate: PONG, GOAWAY, WINDOW. */
static int
frame_other(struct conn *c, const struct wire_frame *f, const char **why)
{
	struct replica_req *q;
	struct wire_goaway g;
	uint8_t		   opaque[8];
	uint32_t	   u;
	int		   rc = WIRE_OK;

	switch (f->type) {
	case WIRE_PONG:
		rc = wire_decode_ping(f, opaque);
		break;
	case WIRE_GOAWAY:
		/* The proxy opens no more streams; ours finish as usual. */
		rc = wire_decode_goaway(f, &g);
		break;
	case WIRE_WINDOW:
		/* Stream credit; WINDOW on stream 0 is reserved in v1. */
		if ((rc = wire_decode_window(f, &u)) == WIRE_OK &&
		    f->stream != 0 && (q = tab_find(c, f->stream)) != NULL &&
		    req_on_window(q, u) != 0) {
			*why = "out of memory";
			return -1;
		}
		break;
	default:
		*why = "unexpected frame type";
		return -1;
	}
	if (rc != WIRE_OK) {
		*why = wire_result_str(rc);
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
	free(c->tab);
	free(c);
}

/* Cancel every stream (the handler hears on_cancel for each). */
static void
conn_cancel_all(struct conn *c)
{
	struct replica_req *q;
	size_t		    i;

	for (i = 0; i < c->tabsize; i++)
		while ((q = c->tab[i]) != NULL && !q->cancelled)
			req_cancel(q);
}

/* Close now: output not yet written is dropped. */
static void
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

static struct conn *
conn_new(struct replica *r, int fd)
{
	struct conn	*c;

	if ((c = calloc(1, sizeof *c)) == NULL)
		return NULL;
	c->r = r;
	c->fd = fd;
	c->incap = IN_DEFAULT;
	c->tabsize = TAB_MIN;
	c->in = malloc(c->incap);
	c->tab = calloc(c->tabsize, sizeof *c->tab);
	c->out = evbuffer_new();
	c->rev = event_new(r->base, fd, EV_READ | EV_PERSIST, conn_read_cb, c);
	c->wev = event_new(r->base, fd, EV_WRITE | EV_PERSIST, conn_write_cb,
	    c);
	if (c->in == NULL || c->tab == NULL || c->out == NULL ||
	    c->rev == NULL || c->wev == NULL || event_add(c->rev, NULL) != 0) {
		if (c->rev != NULL)
			event_free(c->rev);
		if (c->wev != NULL)
			event_free(c->wev);
		if (c->out != NULL)
			evbuffer_free(c->out);
		free(c->in);
		free(c->tab);
		free(c);
		return NULL;
	}
	c->reading = 1;
	LIST_INSERT_HEAD(&r->conns, c, entry);
	return c;
}

static void
accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct replica	*r = arg;
	struct conn	*c;
	int		 one = 1;

	if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if ((c = conn_new(r, fd)) == NULL) {
		close(fd);
		return;
	}
	/* Both sides send HELLO first, without waiting for the other's. */
	if (send_hello(c) != 0)
		conn_close(c);
}

static void
accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct replica	*r = arg;

	if (r->lev != NULL)
		evconnlistener_enable(r->lev);
}

/* EMFILE and friends: stop accepting for a moment rather than spin. */
static void
accept_error_cb(struct evconnlistener *lev, void *arg)
{
	struct replica	*r = arg;
	struct timeval	 tv = { 0, 200 * 1000 };

	replica_log(r, "accept: %s", strerror(errno));
	evconnlistener_disable(lev);
	event_add(r->accept_ev, &tv);
}

/* Listening. */

static int
parse_unix(const char *path, struct sockaddr_un *sun, char *err,
    size_t errlen)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	if (*path == '\0' || strlen(path) >= sizeof sun->sun_path) {
		snprintf(err, errlen, "bad unix socket path \"%s\"", path);
		return -1;
	}
	memcpy(sun->sun_path, path, strlen(path));
	return 0;
}

/* host:port or [v6]:port, resolved once at start-up. */
static int
parse_inet(const char *addr, struct sockaddr_storage *ss, socklen_t *len,
    char *err, size_t errlen)
{
	struct addrinfo	 hints, *res;
	char		 host[256];
	const char	*colon, *h = addr;
	size_t		 hlen;
	int		 rc;

	if ((colon = strrchr(addr, ':')) == NULL || colon[1] == '\0') {
		snprintf(err, errlen, "bad address \"%s\": no port", addr);
		return -1;
	}
	hlen = (size_t)(colon - addr);
	if (*addr == '[') {
		if (hlen < 2 || addr[hlen - 1] != ']') {
			snprintf(err, errlen, "bad address \"%s\"", addr);
			return -1;
		}
		h = addr + 1;
		hlen -= 2;
	}
	if (hlen >= sizeof host) {
		snprintf(err, errlen, "bad address \"%s\"", addr);
		return -1;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((rc = getaddrinfo(hlen != 0 ? host : NULL, colon + 1, &hints,
	    &res)) != 0) {
		snprintf(err, errlen, "%s: %s", addr, gai_strerror(rc));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void
inet_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char	host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
		snprintf(buf, len, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const void *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
		snprintf(buf, len, "%s:%u", host, ntohs(s4->sin_port));
	}
}

static int
replica_listen(struct replica *r, const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct stat	 st;
	socklen_t	 len;
	int		 fd, one = 1, is_unix;

	memset(&ss, 0, sizeof ss);
	is_unix = strncmp(addr, "unix:", 5) == 0;
	if (is_unix) {
		if (parse_unix(addr + 5, (struct sockaddr_un *)&ss, err,
		    errlen) != 0)
			return -1;
		len = sizeof(struct sockaddr_un);
		/* Only a socket is stale; never unlink anything else. */
		if (lstat(addr + 5, &st) == 0 && S_ISSOCK(st.st_mode))
			unlink(addr + 5);
	} else if (parse_inet(addr, &ss, &len, err, errlen) != 0)
		return -1;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (!is_unix)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, len) != 0 ||
	    listen(fd, 1024) != 0) {
		snprintf(err, errlen, "%s: %s", addr, strerror(errno));
		close(fd);
		return -1;
	}
	if (is_unix) {
		snprintf(r->unix_path, sizeof r->unix_path, "%s", addr + 5);
		snprintf(r->address, sizeof r->address, "%s", addr);
	} else {
		len = sizeof ss;
		getsockname(fd, (struct sockaddr *)&ss, &len);
		inet_text(&ss, r->address, sizeof r->address);
	}
	r->lev = evconnlistener_new(r->base, accept_cb, r,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	if (r->lev == NULL) {
		snprintf(err, errlen, "evconnlistener_new failed");
		close(fd);
		return -1;
	}
	evconnlistener_set_error_cb(r->lev, accept_error_cb);
	return 0;
}

/* Stopping: GOAWAY, drain, close. */

static void
replica_close_all(struct replica *r)
{
	struct conn	*c;

	if (r->lev != NULL) {
		evconnlistener_free(r->lev);
		r->lev = NULL;
	}
	if (r->unix_path[0] != '\0') {
		unlink(r->unix_path);
		r->unix_path[0] = '\0';
	}
	while ((c = LIST_FIRST(&r->conns)) != NULL) {
		/* Best effort: whatever the socket takes now. */
		if (evbuffer_get_length(c->out) != 0)
			evbuffer_write(c->out, c->fd);
		conn_close(c);
	}
}

static void
replica_drained(struct replica *r)
{
	if (r->stopping == 2)
		return;
	r->stopping = 2;
	event_base_loopexit(r->base, NULL);
}

static void
drain_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	replica_drained(arg);
}

static void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct replica	*r = arg;
	struct timeval	 tv;
	struct conn	*c;

	if (r->stopping) {
		replica_drained(r);	/* second signal: now */
		return;
	}
	r->stopping = 1;
	if (r->lev != NULL) {
		evconnlistener_free(r->lev);
		r->lev = NULL;
	}
	if (r->unix_path[0] != '\0') {
		unlink(r->unix_path);
		r->unix_path[0] = '\0';
	}
	LIST_FOREACH(c, &r->conns, entry)
		if (c->state != CONN_CLOSING)
			send_goaway(c);
	if (r->active == 0) {
		replica_drained(r);
		return;
	}
	tv.tv_sec = r->drain_ms / 1000;
	tv.tv_usec = (r->drain_ms % 1000) * 1000;
	event_add(r->drain_ev, &tv);
}

/* Configuration. */

static int
parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char		*end;
	unsigned long	 n;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || n > max)
		return -1;
	*v = n;
	return 0;
}

/* "--name VALUE" or "--name=VALUE"; advances *i past what it used. */
static const char *
opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t	 n = strlen(name);
	char	*a = argv[*i];

	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0' || *i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

struct opts {
	const char	*listen, *id, *deployment, *maxc, *drain;
};

static int
parse_args(int argc, char **argv, struct opts *o, char *err, size_t errlen)
{
	static const char *const names[] = { "--listen", "--id",
	    "--deployment", "--max-concurrency", "--drain-ms" };
	const char	**slot[] = { &o->listen, &o->id, &o->deployment,
	    &o->maxc, &o->drain };
	const char	 *v;
	size_t		  k;
	int		  i;

	o->listen = getenv("INGRESSD_LISTEN");
	o->id = getenv("INGRESSD_REPLICA_ID");
	o->deployment = getenv("INGRESSD_DEPLOYMENT");
	o->maxc = getenv("INGRESSD_MAX_CONCURRENCY");
	o->drain = getenv("INGRESSD_DRAIN_MS");
	for (i = 1; i < argc; i++) {
		for (k = 0; k < sizeof names / sizeof names[0]; k++) {
			if ((v = opt_value(argc, argv, &i, names[k])) != NULL) {
				*slot[k] = v;
				break;
			}
		}
		if (k == sizeof names / sizeof names[0]) {
			snprintf(err, errlen, "unknown or incomplete option "
			    "\"%s\" (use --listen ADDR, --id ID, --deployment "
			    "NAME, --max-concurrency N, --drain-ms N)",
			    argv[i]);
			return -1;
		}
	}
	return 0;
}

static int
replica_configure(struct replica *r, int argc, char **argv, char *err,
    size_t errlen)
{
	struct opts	 o;
	unsigned long	 n;

	if (parse_args(argc, argv, &o, err, errlen) != 0)
		return -1;
	if (o.listen == NULL || *o.listen == '\0') {
		snprintf(err, errlen, "no address: use --listen ADDR or "
		    "INGRESSD_LISTEN");
		return -1;
	}
	if (o.id != NULL && *o.id != '\0') {
		if (strlen(o.id) > WIRE_MAX_NAME) {
			snprintf(err, errlen, "replica id too long");
			return -1;
		}
		snprintf(r->id, sizeof r->id, "%s", o.id);
	} else
		snprintf(r->id, sizeof r->id, "replica-%ld", (long)getpid());
	if (o.deployment != NULL) {
		if (strlen(o.deployment) > WIRE_MAX_NAME) {
			snprintf(err, errlen, "deployment name too long");
			return -1;
		}
		snprintf(r->deployment, sizeof r->deployment, "%s",
		    o.deployment);
	}
	r->max_concurrency = 1024;
	if (o.maxc != NULL) {
		if (parse_uint(o.maxc, UINT32_MAX, &n) != 0 || n == 0) {
			snprintf(err, errlen, "bad max concurrency \"%s\"",
			    o.maxc);
			return -1;
		}
		r->max_concurrency = (uint32_t)n;
	}
	r->drain_ms = 2000;
	if (o.drain != NULL) {
		if (parse_uint(o.drain, 3600 * 1000, &n) != 0) {
			snprintf(err, errlen, "bad drain ms \"%s\"", o.drain);
			return -1;
		}
		r->drain_ms = (unsigned)n;
	}
	return replica_listen(r, o.listen, err, errlen);
}

struct replica *
replica_new(struct event_base *base, int argc, char **argv,
    const struct replica_handler *h, void *arg, char *err, size_t errlen)
{
	struct replica	*r;

	if (h == NULL || h->on_request == NULL) {
		snprintf(err, errlen, "handler has no on_request");
		return NULL;
	}
	if ((r = calloc(1, sizeof *r)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->base = base;
	r->h = *h;
	r->arg = arg;
	LIST_INIT(&r->conns);
	r->sigterm = evsignal_new(base, SIGTERM, signal_cb, r);
	r->sigint = evsignal_new(base, SIGINT, signal_cb, r);
	r->drain_ev = evtimer_new(base, drain_timeout_cb, r);
	r->accept_ev = evtimer_new(base, accept_resume_cb, r);
	if (r->sigterm == NULL || r->sigint == NULL || r->drain_ev == NULL ||
	    r->accept_ev == NULL) {
		snprintf(err, errlen, "cannot create events");
		replica_free(r);
		return NULL;
	}
	if (replica_configure(r, argc, argv, err, errlen) != 0) {
		replica_free(r);
		return NULL;
	}
	signal(SIGPIPE, SIG_IGN);
	return r;
}

int
replica_run(struct replica *r)
{
	if (evsignal_add(r->sigterm, NULL) != 0 ||
	    evsignal_add(r->sigint, NULL) != 0)
		return -1;
	if (event_base_dispatch(r->base) == -1)
		return -1;
	replica_close_all(r);
	return 0;
}

void
replica_free(struct replica *r)
{
	if (r == NULL)
		return;
	replica_close_all(r);
	if (r->sigterm != NULL)
		event_free(r->sigterm);
	if (r->sigint != NULL)
		event_free(r->sigint);
	if (r->drain_ev != NULL)
		event_free(r->drain_ev);
	if (r->accept_ev != NULL)
		event_free(r->accept_ev);
	free(r);
}

const char *
replica_id(struct replica *r)
{
	return r->id;
}

const char *
replica_deployment(struct replica *r)
{
	return r->deployment;
}

const char *
replica_address(struct replica *r)
{
	return r->address;
}

struct event_base *
replica_base(struct replica *r)
{
	return r->base;
}

unsigned
replica_active(struct replica *r)
{
	return r->active;
}

/* Request accessors. */

struct replica *
replica_req_replica(struct replica_req *q)
{
	return q->c->r;
}

uint32_t
replica_req_stream(struct replica_req *q)
{
	return q->stream;
}

const char *
replica_req_method(struct replica_req *q)
{
	return q->method;
}

const char *
replica_req_target(struct replica_req *q)
{
	return q->target;
}

const char *
replica_req_path(struct replica_req *q)
{
	return q->path;
}

const char *
replica_req_query(struct replica_req *q)
{
	return q->query;
}

const char *
replica_req_deployment(struct replica_req *q)
{
	return q->deployment;
}

const char *
replica_req_request_id(struct replica_req *q)
{
	return q->request_id;
}

uint32_t
replica_req_deadline_ms(struct replica_req *q)
{
	return q->deadline_ms;
}

const char *
replica_req_header(struct replica_req *q, const char *name)
{
	unsigned i;

	for (i = 0; i < q->nhdr; i++)
		if (strcasecmp(q->hdr[i].name, name) == 0)
			return q->hdr[i].value;
	return NULL;
}

unsigned
replica_req_header_count(struct replica_req *q)
{
	return q->nhdr;
}

int
replica_req_header_at(struct replica_req *q, unsigned i, const char **name,
    const char **value)
{
	if (i >= q->nhdr)
		return -1;
	*name = q->hdr[i].name;
	*value = q->hdr[i].value;
	return 0;
}

size_t
replica_req_body_length(struct replica_req *q)
{
	return q->body_len;
}

struct evbuffer *
replica_req_body(struct replica_req *q)
{
	return q->body;
}

unsigned
replica_req_conn_pings(struct replica_req *q)
{
	return q->conn_pings;
}

size_t
replica_req_pending(struct replica_req *q)
{
	return req_pending(q);
}

int64_t
replica_req_cancel_code(struct replica_req *q)
{
	return q->cancel_code;
}

/* Paused: body keeps arriving up to the credit already given, no more. */
void
replica_req_pause(struct replica_req *q)
{
	q->paused = 1;
}

void
replica_req_resume(struct replica_req *q)
{
	if (!q->paused)
		return;
	q->paused = 0;
	if (!q->cancelled && !q->failed && !q->out_done)
		req_grant(q);
}

int
replica_req_paused(struct replica_req *q)
{
	return q->paused;
}

void
replica_req_set_user(struct replica_req *q, void *user)
{
	q->user = user;
}

void *
replica_req_user(struct replica_req *q)
{
	return q->user;
}

/* Responding. */

static int
req_can_send(struct replica_req *q)
{
	return !q->cancelled && !q->failed && !q->out_done &&
	    q->c->state != CONN_CLOSING;
}

int
replica_respond(struct replica_req *q, int status, const char *const *hdrs,
    int end)
{
	struct wire_field     fields[WIRE_MAX_FIELDS];
	struct wire_response  w;
	struct evbuffer_iovec v;
	struct conn	     *c = q->c;
	uint8_t		     *p;
	size_t		      size;
	unsigned	      n = 0;

	if (!req_can_send(q) || q->out_head || status < 100 || status > 999)
		return -1;
	for (; hdrs != NULL && hdrs[0] != NULL; hdrs += 2) {
		if (hdrs[1] == NULL || n == WIRE_MAX_FIELDS)
			return -1;
		fields[n].name.p = hdrs[0];
		fields[n].name.len = strlen(hdrs[0]);
		fields[n].value.p = hdrs[1];
		fields[n].value.len = strlen(hdrs[1]);
		n++;
	}
	w.status = (uint16_t)status;
	w.fields = fields;
	w.nfields = n;
	if ((size = wire_response_size(&w)) == 0 ||
	    (p = out_reserve(c, size, &v)) == NULL)
		return -1;
	wire_encode_response(p, q->stream, end ? WIRE_FLAG_END : 0, &w);
	if (out_commit(c, &v, size) != 0)
		return -1;
	q->out_head = 1;
	if (end) {
		q->out_done = 1;
		req_maybe_free(q);
	}
	return 0;
}

/*
 * DATA frames of at most WIRE_MAX_DATA from p, or from the pending buffer
 * when p is NULL; FLAG_END on the last if end, or a bare END when n is 0.
 */
static int
req_send_frames(struct replica_req *q, const uint8_t *p, size_t n, int end)
{
	struct evbuffer_iovec v;
	struct conn	     *c = q->c;
	uint8_t		     *w;
	size_t		      chunk;
	uint8_t		      flags;

	if (n == 0 && end) {
		if ((w = out_reserve(c, WIRE_HEADER_SIZE, &v)) == NULL)
			return -1;
		wire_encode_header(w, 0, WIRE_END, 0, q->stream);
		return out_commit(c, &v, WIRE_HEADER_SIZE);
	}
	while (n != 0) {
		chunk = n < WIRE_MAX_DATA ? n : WIRE_MAX_DATA;
		flags = end && chunk == n ? WIRE_FLAG_END : 0;
		if ((w = out_reserve(c, WIRE_HEADER_SIZE + chunk, &v)) == NULL)
			return -1;
		wire_encode_header(w, (uint32_t)chunk, WIRE_DATA, flags,
		    q->stream);
		if (p != NULL) {
			memcpy(w + WIRE_HEADER_SIZE, p, chunk);
			p += chunk;
		} else if (evbuffer_remove(q->pending, w + WIRE_HEADER_SIZE,
		    chunk) != (int)chunk)
			return -1;
		if (out_commit(c, &v, WIRE_HEADER_SIZE + chunk) != 0)
			return -1;
		q->send_credit -= chunk;
		n -= chunk;
	}
	return 0;
}

/*
 * Credit consumed request body back to ingressd, half a window at a time
 * (a small body never costs a WINDOW).  Credit is held back while our own
 * response waits for credit: a handler that answers body with body (echo)
 * then slows the sender down instead of buffering without bound.
 */
static void
req_grant(struct replica_req *q)
{
	uint8_t	frame[WIRE_HEADER_SIZE + 4];

	if (q->in_done || q->paused || q->unacked < WIRE_INITIAL_WINDOW / 2 ||
	    req_pending(q) >= WIRE_INITIAL_WINDOW || q->unacked > UINT32_MAX)
		return;
	wire_encode_window(frame, q->stream, (uint32_t)q->unacked);
	if (send_small(q->c, frame, sizeof frame) != 0)
		return;
	q->recv_credit += q->unacked;
	q->unacked = 0;
}

/* WINDOW: send what waited for credit, then maybe the END behind it. */
static int
req_on_window(struct replica_req *q, uint32_t increment)
{
	struct replica	*r = q->c->r;
	size_t		 n;
	int		 rc = 0;

	if (q->cancelled || q->failed)
		return 0;
	q->send_credit += increment;
	n = req_pending(q);
	if (n > q->send_credit)
		n = (size_t)q->send_credit;
	if (n != 0 || (q->end_pending && req_pending(q) == 0)) {
		rc = req_send_frames(q, NULL, n, q->end_pending &&
		    n == req_pending(q));
		if (rc == 0 && req_pending(q) == 0)
			q->end_pending = 0;
	}
	if (rc == 0 && q->want_writable && req_pending(q) == 0 &&
	    !q->out_done) {
		q->want_writable = 0;
		if (r->h.on_writable != NULL) {
			q->busy++;
			r->h.on_writable(q, r->arg);
			q->busy--;
		}
	}
	req_grant(q);
	req_maybe_free(q);
	return rc;
}

/* Body out: as far as the credit goes now, the rest queued in order. */
static int
req_send_data(struct replica_req *q, const uint8_t *p, size_t n, int end)
{
	size_t	now = 0;

	if (!req_can_send(q) || !q->out_head || (n != 0 && p == NULL))
		return -1;
	if (req_pending(q) == 0) {
		now = n < q->send_credit ? n : (size_t)q->send_credit;
		if ((now != 0 || (end && n == 0)) &&
		    req_send_frames(q, p, now, end && now == n) != 0)
			return -1;
	}
	if (now < n) {
		if (q->pending == NULL && (q->pending = evbuffer_new()) == NULL)
			return -1;
		if (evbuffer_add(q->pending, p + now, n - now) != 0)
			return -1;
		q->want_writable = 1;
	}
	if (end) {
		q->end_pending = req_pending(q) != 0;
		q->out_done = 1;
		req_maybe_free(q);
	}
	return 0;
}

int
replica_write(struct replica_req *q, const void *p, size_t n)
{
	return req_send_data(q, p, n, 0);
}

int
replica_write_end(struct replica_req *q, const void *p, size_t n)
{
	return req_send_data(q, p, n, 1);
}

int
replica_end(struct replica_req *q)
{
	return req_send_data(q, NULL, 0, 1);
}

int
replica_fail(struct replica_req *q, const char *text)
{
	if (!req_can_send(q))
		return -1;
	if (send_error(q->c, q->stream, WIRE_CODE_INTERNAL,
	    text != NULL ? text : "") != 0)
		return -1;
	q->out_done = 1;
	q->failed = 1;
	q->end_pending = 0;
	req_maybe_free(q);
	return 0;
}

int
replica_query_get(const char *query, const char *key, char *buf, size_t len)
{
	size_t		 klen = strlen(key), vlen;
	const char	*p = query, *end;

	while (p != NULL && *p != '\0') {
		end = strchr(p, '&');
		vlen = end != NULL ? (size_t)(end - p) : strlen(p);
		if (vlen >= klen && strncmp(p, key, klen) == 0 &&
		    (vlen == klen || p[klen] == '=')) {
			p += vlen == klen ? klen : klen + 1;
			vlen -= vlen == klen ? klen : klen + 1;
			if (vlen >= len)
				return 0;
			memcpy(buf, p, vlen);
			buf[vlen] = '\0';
			return 1;
		}
		p = end != NULL ? end + 1 : NULL;
	}
	return 0;
}

int
replica_main(const char *name, int argc, char **argv,
    const struct replica_handler *h, void *arg)
{
	struct event_base *base;
	struct replica *r;
	char err[256];
	int rc;

	if ((base = event_base_new()) == NULL) {
		fprintf(stderr, "%s: event_base_new failed\n", name);
		return 1;
	}
	if ((r = replica_new(base, argc, argv, h, arg, err,
	    sizeof err)) == NULL) {
		fprintf(stderr, "%s: %s\n", name, err);
		event_base_free(base);
		return 1;
	}
	rc = replica_run(r);
	replica_free(r);
	event_base_free(base);
	return rc == 0 ? 0 : 1;
}
