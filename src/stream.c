/*
 * stream.c -- one proxied request (see stream.h).
 *
 * Life: NEW -> QUEUED (waiting in its handle) -> ATTACHED (on an upstream,
 * REQUEST sent) -> DONE.  The timer is the request's one deadline: the
 * queue deadline while queued, then the time to the response head, then
 * the longest gap allowed between response pieces.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "deadline.h"
#include "hfield.h"
#include "http1.h"
#include "stream.h"
#include "wire.h"
#include "wctx.h"

enum stream_state { S_NEW, S_QUEUED, S_ATTACHED, S_DONE };

struct stream {
	struct wctx	*w;		/* the worker's context */
	struct stream_info info;
	const struct stream_ops *ops;
	void		*arg;
	enum stream_state state;
	const struct stream_queue *qops;	/* the handle, set by it */
	void		*q;
	const struct stream_carrier *carrier;	/* once attached */
	void		*c;
	uint32_t	 id;
	struct evbuffer	*pending;	/* body that arrived before attach */
	int		 body_end;	/* the client's body is complete */
	int		 end_sent;	/* our END (or FLAG_END) is out */
	int		 responded;	/* RESPONSE arrived */
	struct deadline	 timer;
	struct stream_qent qent;	/* the queue's link */
	uint64_t	 sent_at;
	unsigned	 tries;		/* retries so far */
	/* A copy of the body sent so far, while small, so that a request
	 * that never reached its replica can be replayed on another. */
	struct evbuffer	*replay;
	int		 replay_lost;	/* body outgrew the copy */
	/* Flow control: credit we hold to send body, credit the replica
	 * holds to send response, and response bytes consumed but not yet
	 * credited back. */
	uint64_t	 send_window;
	uint64_t	 recv_window;
	uint64_t	 recv_consumed;
	enum reqlog_reject reject;	/* set when it failed */
};

#define STREAM_MAX_RETRIES	2
#define STREAM_REPLAY_MAX	(64 * 1024)

static void	stream_timer_cb(evutil_socket_t, short, void *);

static void
stream_arm(struct stream *s, double seconds)
{
	deadline_set(&s->timer, seconds);
}

struct stream *
stream_new(struct wctx *w, const struct stream_info *info,
    const struct stream_ops *ops, void *arg)
{
	struct stream *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->w = w;
	s->qent.s = s;
	s->send_window = WIRE_INITIAL_WINDOW;
	s->recv_window = WIRE_INITIAL_WINDOW;
	s->info = *info;
	s->ops = ops;
	s->arg = arg;
	deadline_init(&s->timer, w->base, stream_timer_cb, s);
	return s;
}

void
stream_free(struct stream *s)
{
	if (s == NULL)
		return;
	if (s->pending != NULL)
		evbuffer_free(s->pending);
	if (s->replay != NULL)
		evbuffer_free(s->replay);
	deadline_del(&s->timer);
	free(s);
}

void
stream_set_queue(struct stream *s, const struct stream_queue *qops, void *q)
{
	s->qops = qops;
	s->q = q;
}

void
stream_queued(struct stream *s, double timeout)
{
	s->state = S_QUEUED;
	stream_arm(s, timeout);
}

void
stream_unqueued(struct stream *s)
{
	s->state = S_NEW;
}

void
stream_attached(struct stream *s, const struct stream_carrier *carrier,
    void *c, uint32_t id)
{
	s->state = S_ATTACHED;
	s->carrier = carrier;
	s->c = c;
	s->id = id;
	stream_arm(s, s->info.timeout);
	if (s->ops->on_writable != NULL)
		s->ops->on_writable(s->arg);
}

int
stream_responded(const struct stream *s)
{
	return s->responded;
}

const char *
stream_replica(const struct stream *s)
{
	return s->c != NULL ? s->carrier->peer(s->c) : NULL;
}

uint32_t
stream_id(const struct stream *s)
{
	return s->id;
}

struct stream_qent *
stream_qent(struct stream *s)
{
	return &s->qent;
}

/* Keep a copy of what goes out while it is small enough to replay. */
static void
stream_keep(struct stream *s, const void *p, size_t n)
{
	if (s->replay_lost)
		return;
	if (s->replay == NULL && (s->replay = evbuffer_new()) == NULL) {
		s->replay_lost = 1;
		return;
	}
	if (evbuffer_get_length(s->replay) + n > STREAM_REPLAY_MAX) {
		evbuffer_free(s->replay);
		s->replay = NULL;
		s->replay_lost = 1;
		return;
	}
	evbuffer_add(s->replay, p, n);
}

/* Send what credit allows now; the rest waits in pending. */
static void
stream_send_body(struct stream *s, const char *p, size_t n)
{
	size_t now = n < s->send_window ? n : (size_t)s->send_window;

	if (now > 0) {
		stream_keep(s, p, now);
		s->carrier->data(s->c, s->id, p, now);
		s->send_window -= now;
	}
	if (now < n) {
		if (s->pending == NULL && (s->pending = evbuffer_new()) == NULL)
			return;
		evbuffer_add(s->pending, p + now, n - now);
	}
}

void
stream_body(struct stream *s, const char *p, size_t n)
{
	if (s->state == S_DONE)
		return;
	if (s->state == S_ATTACHED && (s->pending == NULL ||
	    evbuffer_get_length(s->pending) == 0)) {
		stream_send_body(s, p, n);
		return;
	}
	if (s->pending == NULL && (s->pending = evbuffer_new()) == NULL)
		return;
	evbuffer_add(s->pending, p, n);
}

int
stream_can_take_body(const struct stream *s)
{
	return s->state == S_ATTACHED && s->send_window > 0 &&
	    (s->pending == NULL || evbuffer_get_length(s->pending) == 0);
}

void
stream_body_end(struct stream *s)
{
	s->body_end = 1;
	if (s->state == S_ATTACHED && !s->end_sent && (s->pending == NULL ||
	    evbuffer_get_length(s->pending) == 0)) {
		s->end_sent = 1;
		s->carrier->end(s->c, s->id);
	}
}

static void
stream_str(struct wire_str *ws, const char *p, size_t len)
{
	ws->p = p;
	ws->len = len;
}

/* hfield's view of the HTTP/1 parser's fields. */
static void
stream_field_get(const void *src, unsigned i, struct hfield *out)
{
	const struct http1_field *f = (const struct http1_field *)src + i;

	out->name = f->name;
	out->name_len = f->name_len;
	out->value = f->value;
	out->value_len = f->value_len;
}


static void
stream_field_put(void *arg, const struct hfield *f)
{
	struct stream_fields *sf = arg;

	stream_str(&sf->fields[sf->n].name, f->name, f->name_len);
	stream_str(&sf->fields[sf->n++].value, f->value, f->value_len);
}

/*
 * The REQUEST head: the fields hfield_forward picks (the client's
 * end-to-end fields; X-Forwarded-For, X-Forwarded-Proto and, only from a
 * verified client certificate, X-Client-Cert-Subject), and our own.  What
 * points into h stays valid while h and the stream do.
 */
int
stream_head(struct stream *s, struct stream_head *h)
{
	const struct http1_request *r = s->info.req;
	struct hfield_req hr = { stream_field_get, r->fields, r->nfields,
	    r->host, r->host_len, s->info.client_addr,
	    s->info.https ? "https" : "http", s->info.client_subject };
	struct stream_fields *sf = &h->sf;
	struct wire_request *wr = &h->wr;

	sf->n = 0;
	h->ho.emit = stream_field_put;
	h->ho.arg = sf;
	h->ho.max = WIRE_MAX_FIELDS;
	if (hfield_forward(&hr, &h->ho) == -1)
		return -1;
	memset(wr, 0, sizeof(*wr));
	stream_str(&wr->method, r->method, r->method_len);
	stream_str(&wr->target, s->info.target, s->info.target_len);
	stream_str(&wr->deployment, s->info.deployment,
	    strlen(s->info.deployment));
	stream_str(&wr->request_id, s->info.request_id,
	    strlen(s->info.request_id));
	wr->deadline_ms = (uint32_t)(s->info.timeout * 1000);
	wr->fields = sf->fields;
	wr->nfields = sf->n;
	/* No body: the head is the whole request (FLAG_END on the wire). */
	h->end = !r->has_body;
	if (h->end)
		s->end_sent = 1;
	return 0;
}

void
stream_head_free(struct stream_head *h)
{
	hfield_out_free(&h->ho);
}

int
stream_encode(struct stream *s, uint32_t id, struct evbuffer *out)
{
	struct stream_head h;
	struct evbuffer_iovec iov;
	size_t size, n;
	int rv = -1;

	if (stream_head(s, &h) == -1)
		return -1;
	size = wire_request_size(&h.wr);
	if (evbuffer_reserve_space(out, (ev_ssize_t)size, &iov, 1) < 1)
		goto done;
	if ((n = wire_encode_request(iov.iov_base, id,
	    h.end ? WIRE_FLAG_END : 0, &h.wr)) == 0)
		goto done;
	iov.iov_len = n;
	evbuffer_commit_space(out, &iov, 1);
	rv = 0;
done:
	stream_head_free(&h);
	return rv;
}

/* After attach or new credit: what is held back goes out, as far as the
 * credit goes. */
void
stream_flush_pending(struct stream *s)
{
	unsigned char buf[16384];
	size_t n, want;

	while (s->pending != NULL && s->send_window > 0 &&
	    evbuffer_get_length(s->pending) > 0) {
		want = s->send_window < sizeof(buf) ? (size_t)s->send_window :
		    sizeof(buf);
		n = evbuffer_remove(s->pending, buf, want);
		stream_keep(s, buf, n);
		s->carrier->data(s->c, s->id, buf, n);
		s->send_window -= n;
	}
	if (s->pending != NULL && evbuffer_get_length(s->pending) > 0)
		return;
	if (s->body_end && !s->end_sent) {
		s->end_sent = 1;
		s->carrier->end(s->c, s->id);
	}
}

void
stream_on_window(struct stream *s, uint32_t n)
{
	if (s->state != S_ATTACHED)
		return;
	s->send_window += n;
	stream_flush_pending(s);
	if (stream_can_take_body(s) && !s->body_end &&
	    s->ops->on_writable != NULL)
		s->ops->on_writable(s->arg);
}

/* Credit back in batches of half a window: a small response never costs
 * a WINDOW frame. */
void
stream_consumed(struct stream *s, size_t n)
{
	if (s->state != S_ATTACHED)
		return;
	s->recv_consumed += n;
	if (s->recv_consumed >= WIRE_INITIAL_WINDOW / 2) {
		s->carrier->window(s->c, s->id, (uint32_t)s->recv_consumed);
		s->recv_window += s->recv_consumed;
		s->recv_consumed = 0;
	}
}

void
stream_set_sent_at(struct stream *s, uint64_t off)
{
	s->sent_at = off;
}

uint64_t
stream_sent_at(const struct stream *s)
{
	return s->sent_at;
}

int
stream_retry(struct stream *s)
{
	if (s->tries >= STREAM_MAX_RETRIES || s->responded || s->replay_lost)
		return -1;
	s->tries++;
	s->state = S_NEW;
	s->carrier = NULL;
	s->c = NULL;
	s->id = 0;
	s->end_sent = 0;
	s->send_window = WIRE_INITIAL_WINDOW;
	s->recv_window = WIRE_INITIAL_WINDOW;
	s->recv_consumed = 0;
	/* What was sent is sent again, before anything still pending. */
	if (s->replay != NULL) {
		if (s->pending != NULL)
			evbuffer_add_buffer(s->replay, s->pending);
		else
			s->pending = evbuffer_new();
		if (s->pending != NULL) {
			evbuffer_add_buffer(s->pending, s->replay);
		}
	}
	s->qops->requeue(s->q, s);
	return 0;
}

void
stream_on_response(struct stream *s, int status, const struct wire_field *f,
    unsigned n, int end)
{
	s->responded = 1;
	stream_arm(s, s->info.timeout);
	s->ops->on_response(s->arg, status, f, n, end);
}

int
stream_on_data(struct stream *s, struct evbuffer *buf)
{
	size_t n = evbuffer_get_length(buf);

	if (n > s->recv_window)
		return -1;
	s->recv_window -= n;
	stream_arm(s, s->info.timeout);
	s->ops->on_data(s->arg, buf);
	return 0;
}

void
stream_on_trailers(struct stream *s, const struct wire_field *f, unsigned n)
{
	if (s->ops->on_trailers != NULL)
		s->ops->on_trailers(s->arg, f, n);
}

void
stream_on_end(struct stream *s)
{
	s->state = S_DONE;
	deadline_clear(&s->timer);
	s->ops->on_end(s->arg);
}

void
stream_on_fail(struct stream *s, int status, const char *why)
{
	if (s->reject == REJECT_NONE)
		s->reject = status == 502 ? REJECT_REPLICA_FAILED :
		    status == 504 ? REJECT_DEADLINE : REJECT_NONE;
	s->state = S_DONE;
	deadline_clear(&s->timer);
	s->ops->on_fail(s->arg, status, why);
}

void
stream_on_reject(struct stream *s, enum reqlog_reject r, int status,
    const char *why)
{
	s->reject = r;
	stream_on_fail(s, status, why);
}

enum reqlog_reject
stream_reject(const struct stream *s)
{
	return s->reject;
}

/* The queue deadline passed: say whether no replica was ready at all
 * (down, refusing, still starting) or all were busy. */
static void
stream_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct stream *s = arg;

	if (!deadline_expired(&s->timer))
		return;
	switch (s->state) {
	case S_QUEUED:
		s->qops->expire(s->q, s);
		break;
	case S_ATTACHED:
		s->carrier->cancel(s->c, s, WIRE_CODE_TIMEOUT);
		stream_on_fail(s, 504, s->responded ?
		    "replica stalled mid-response" : "replica did not answer in time");
		break;
	default:
		break;
	}
}

void
stream_abort(struct stream *s)
{
	if (s->state == S_QUEUED)
		s->qops->leave(s->q, s);
	else if (s->state == S_ATTACHED)
		s->carrier->cancel(s->c, s, WIRE_CODE_CANCEL);
	s->state = S_DONE;
	stream_free(s);
}
