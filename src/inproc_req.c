/*
 * inproc_req.c -- requests of the in-process edge: the replica.h API as
 * ingressd implements it (the table modules are bound to), and the
 * carrier a stream sends through.
 *
 * The rules are replica/req.c's, so a handler sees the same events in the
 * same order in both hosts: on_request, on_body*, on_end, and on_cancel
 * last if the stream goes first; response body beyond the stream's
 * credit is queued in the req and goes as credit comes back (then
 * on_writable); request body is credited back as the handler consumes it,
 * half a window at a time, not while paused or while a window of response
 * waits.  Where the wire library writes a frame, this calls the stream:
 * RESPONSE is stream_on_response, DATA stream_on_data, END stream_on_end,
 * ERROR stream_on_fail(502), WINDOW stream_on_window.
 *
 * Re-entrancy: the carrier's ops never call the handler or the stream
 * (stream.h forbids calling back into the stream from them): they record
 * and queue the req (the instance's sched hook); the handler runs from the instance's
 * run queue or from its own events, where calling the stream is safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "inproc_impl.h"
#include "registry.h"
#include "stream.h"
#include "wire.h"

#define INPROC_WINDOW	WIRE_INITIAL_WINDOW

static char *
inproc_copy(char **pp, const char *s, size_t n)
{
	char *p = *pp;

	if (n != 0)
		memcpy(p, s, n);
	p[n] = '\0';
	*pp = p + n + 1;
	return p;
}

/* One allocation: the struct, the header array, then every string. */
static struct inproc_req *
inproc_req_alloc(const struct wire_request *w)
{
	struct inproc_req *q;
	const char *qm;
	size_t strs, pathlen, i;
	char *p;

	qm = memchr(w->target.p, '?', w->target.len);
	pathlen = qm != NULL ? (size_t)(qm - w->target.p) : w->target.len;
	strs = w->method.len + w->target.len + pathlen + w->deployment.len +
	    w->request_id.len + 5;
	for (i = 0; i < w->nfields; i++)
		strs += w->fields[i].name.len + w->fields[i].value.len + 2;
	if ((q = calloc(1, sizeof(*q) + w->nfields * sizeof(q->hdr[0]) +
	    strs)) == NULL)
		return NULL;
	q->nhdr = w->nfields;
	p = (char *)&q->hdr[w->nfields];
	q->method = inproc_copy(&p, w->method.p, w->method.len);
	q->target = inproc_copy(&p, w->target.p, w->target.len);
	q->path = inproc_copy(&p, w->target.p, pathlen);
	q->query = qm != NULL ? q->target + pathlen + 1 : q->target +
	    w->target.len;
	q->deployment = inproc_copy(&p, w->deployment.p, w->deployment.len);
	q->request_id = inproc_copy(&p, w->request_id.p, w->request_id.len);
	for (i = 0; i < w->nfields; i++) {
		q->hdr[i].name = inproc_copy(&p, w->fields[i].name.p,
		    w->fields[i].name.len);
		q->hdr[i].value = inproc_copy(&p, w->fields[i].value.p,
		    w->fields[i].value.len);
	}
	q->deadline_ms = w->deadline_ms;
	return q;
}

struct inproc_req *
inproc_req_new(struct inproc *ip, struct stream *s, uint32_t id, int *end)
{
	struct stream_head h;
	struct inproc_req *q;

	if (stream_head(s, &h) == -1)
		return NULL;
	q = inproc_req_alloc(&h.wr);
	*end = h.end;
	stream_head_free(&h);
	if (q == NULL)
		return NULL;
	q->ip = ip;
	q->s = s;
	q->id = id;
	q->cancel_code = -1;
	q->send_credit = INPROC_WINDOW;
	q->in_end = *end != 0;
	return q;
}

static size_t
inproc_pending(const struct inproc_req *q)
{
	return q->pending != NULL ? evbuffer_get_length(q->pending) : 0;
}

/* The stream leaves the req before any terminal call on it. */
static struct stream *
inproc_detach(struct inproc_req *q)
{
	struct stream *s = q->s;

	q->s = NULL;
	if (s != NULL)
		q->ip->hooks->detached(q->ip);
	return s;
}

static void
inproc_req_free(struct inproc_req *q)
{
	struct inproc *ip = q->ip;

	(void)inproc_detach(q);
	if (q->in != NULL)
		evbuffer_free(q->in);
	if (q->body != NULL)
		evbuffer_free(q->body);
	if (q->pending != NULL)
		evbuffer_free(q->pending);
	ip->hooks->req_gone(ip, q);
	free(q);
}

/* Over for us once the response is out, or cancelled, or failed. */
static void
inproc_maybe_free(struct inproc_req *q)
{
	if (q->busy != 0)
		return;
	if (q->cancelled || q->failed || (q->out_done && !q->end_pending &&
	    inproc_pending(q) == 0))
		inproc_req_free(q);
}

static int
inproc_over(const struct inproc_req *q)
{
	return q->failed || (q->out_done && !q->end_pending &&
	    inproc_pending(q) == 0);
}

/* Callbacks into the module ------------------------------------------- */

#define INPROC_CALL(q, cb, ...) do {					\
	const struct replica_handler *h_ = (q)->ip->desc->handler;	\
	if (h_->cb != NULL) {						\
		(q)->busy++;						\
		(q)->ip->hooks->enter((q)->ip);					\
		h_->cb((struct replica_req *)(q), __VA_ARGS__);		\
		(q)->ip->hooks->leave((q)->ip);					\
		(q)->busy--;						\
	}								\
} while (0)

/* Consumed body goes back to the stream as credit (see the top). */
static void
inproc_grant(struct inproc_req *q)
{
	size_t n = q->unacked;

	if (q->s == NULL || q->in_done || q->in_end || q->paused ||
	    n < INPROC_WINDOW / 2 || inproc_pending(q) >= INPROC_WINDOW ||
	    n > UINT32_MAX)
		return;
	q->unacked = 0;
	stream_on_window(q->s, (uint32_t)n);
}

/* The body that arrived, piece by piece, as the wire would bring it. */
static void
inproc_run_body(struct inproc_req *q)
{
	struct evbuffer_iovec v;
	size_t n;

	while (q->in != NULL && evbuffer_peek(q->in, -1, NULL, &v, 1) > 0) {
		n = v.iov_len;
		q->body_len += n;
		q->unacked += n;
		if (!q->failed && !q->cancelled && !q->out_done) {
			if (q->ip->desc->handler->on_body != NULL)
				INPROC_CALL(q, on_body, v.iov_base, n,
				    q->ip->arg);
			else if ((q->body != NULL ||
			    (q->body = evbuffer_new()) != NULL))
				evbuffer_add(q->body, v.iov_base, n);
		}
		evbuffer_drain(q->in, n);
	}
}

static void	inproc_flush(struct inproc_req *);

void
inproc_req_run(struct inproc_req *q)
{
	void *arg = q->ip->arg;

	q->busy++;
	if (!q->started) {
		q->started = 1;
		INPROC_CALL(q, on_request, arg);
	}
	inproc_run_body(q);
	if (q->in_end && !q->in_done) {
		q->in_done = 1;
		if (!q->failed && !q->cancelled && !q->out_done)
			INPROC_CALL(q, on_end, arg);
	}
	if (q->window_due) {
		q->window_due = 0;
		inproc_flush(q);
	}
	if (q->cancel_due && !q->cancelled && !inproc_over(q)) {
		q->cancelled = 1;
		INPROC_CALL(q, on_cancel, arg);
	} else if (q->cancel_due)
		q->cancelled = 1;
	inproc_grant(q);
	q->busy--;
	inproc_maybe_free(q);
}

void
inproc_req_kill(struct inproc_req *q)
{
	q->busy++;
	if (!q->cancelled && !inproc_over(q)) {
		q->cancelled = 1;
		INPROC_CALL(q, on_cancel, q->ip->arg);
	}
	q->cancelled = 1;
	q->busy--;
	inproc_req_free(q);
}

/* Response body to the stream: what buf holds (within credit); with end,
 * the stream ends after it. */
static void
inproc_deliver(struct inproc_req *q, struct evbuffer *buf, int end)
{
	struct stream *s = q->s;

	if (s != NULL && evbuffer_get_length(buf) > 0) {
		q->send_credit -= evbuffer_get_length(buf);
		(void)stream_on_data(s, buf);	/* within credit */
	}
	evbuffer_drain(buf, evbuffer_get_length(buf));
	/* on_data may have cancelled it (client gone). */
	if (end && q->s == s && (s = inproc_detach(q)) != NULL)
		stream_on_end(s);
}

/* Credit came: what waited goes, then the end behind it, then
 * on_writable once the queue is empty. */
static void
inproc_flush(struct inproc_req *q)
{
	struct evbuffer *scratch = q->ip->scratch;
	size_t n = inproc_pending(q);
	int end;

	if (q->cancelled || q->failed)
		return;
	if (n > q->send_credit)
		n = (size_t)q->send_credit;
	if (n != 0 || (q->end_pending && inproc_pending(q) == 0)) {
		if (n != 0)
			evbuffer_remove_buffer(q->pending, scratch, n);
		end = q->end_pending && inproc_pending(q) == 0;
		if (end)
			q->end_pending = 0;
		inproc_deliver(q, scratch, end);
	}
	if (q->want_writable && inproc_pending(q) == 0 && !q->out_done) {
		q->want_writable = 0;
		INPROC_CALL(q, on_writable, q->ip->arg);
	}
}

/* The carrier (stream.h): record, queue, never call back ------------- */

static void
inproc_carrier_data(void *c, uint32_t id, const void *p, size_t n)
{
	struct inproc_req *q = c;

	if (q->s == NULL || q->in_end)
		return;
	/* Made on the first body byte: most requests have none. */
	if (q->in == NULL && (q->in = evbuffer_new()) == NULL)
		return;
	evbuffer_add(q->in, p, n);
	q->ip->hooks->sched(q);
}

static void
inproc_carrier_end(void *c, uint32_t id)
{
	struct inproc_req *q = c;

	if (q->s == NULL)
		return;
	q->in_end = 1;
	q->ip->hooks->sched(q);
}

static void
inproc_carrier_window(void *c, uint32_t id, uint32_t n)
{
	struct inproc_req *q = c;

	q->send_credit += n;
	if (inproc_pending(q) == 0 && !q->end_pending)
		return;
	q->window_due = 1;
	q->ip->hooks->sched(q);
}

static void
inproc_carrier_cancel(void *c, struct stream *s, uint32_t code)
{
	struct inproc_req *q = c;

	if (q->s != s)
		return;
	(void)inproc_detach(q);
	q->cancel_code = code;
	q->cancel_due = 1;
	q->ip->hooks->sched(q);
}

static const char *
inproc_carrier_peer(const void *c)
{
	const struct inproc_req *q = c;

	return q->ip->ep->id;
}

const struct stream_carrier inproc_carrier = {
	.data = inproc_carrier_data,
	.end = inproc_carrier_end,
	.window = inproc_carrier_window,
	.cancel = inproc_carrier_cancel,
	.peer = inproc_carrier_peer,
};

/* The replica.h API, in process ---------------------------------------- */

#define Q(x)	((struct inproc_req *)(x))
#define IP(x)	((struct inproc *)(x))

static const char *
ip_id(struct replica *r)
{
	return IP(r)->ep->id;
}

static const char *
ip_deployment(struct replica *r)
{
	/* An instance serves every name that resolves to it; as a replica
	 * told no --deployment, it names none of its own (each request
	 * carries its name). */
	return "";
}

static const char *
ip_address(struct replica *r)
{
	return IP(r)->ep->addr.text;
}

static struct event_base *
ip_base(struct replica *r)
{
	return IP(r)->w->base;
}

static unsigned
ip_active(struct replica *r)
{
	return IP(r)->nreqs;
}

static struct replica *
q_replica(struct replica_req *q)
{
	return (struct replica *)Q(q)->ip;
}

static uint32_t
q_stream(struct replica_req *q)
{
	return Q(q)->id;
}

static const char *
q_method(struct replica_req *q)
{
	return Q(q)->method;
}

static const char *
q_target(struct replica_req *q)
{
	return Q(q)->target;
}

static const char *
q_path(struct replica_req *q)
{
	return Q(q)->path;
}

static const char *
q_query(struct replica_req *q)
{
	return Q(q)->query;
}

static const char *
q_deployment(struct replica_req *q)
{
	return Q(q)->deployment;
}

static const char *
q_request_id(struct replica_req *q)
{
	return Q(q)->request_id;
}

static uint32_t
q_deadline_ms(struct replica_req *q)
{
	return Q(q)->deadline_ms;
}

static const char *
q_header(struct replica_req *r, const char *name)
{
	struct inproc_req *q = Q(r);
	unsigned i;

	for (i = 0; i < q->nhdr; i++)
		if (strcasecmp(q->hdr[i].name, name) == 0)
			return q->hdr[i].value;
	return NULL;
}

static unsigned
q_header_count(struct replica_req *q)
{
	return Q(q)->nhdr;
}

static int
q_header_at(struct replica_req *r, unsigned i, const char **name,
    const char **value)
{
	struct inproc_req *q = Q(r);

	if (i >= q->nhdr)
		return -1;
	*name = q->hdr[i].name;
	*value = q->hdr[i].value;
	return 0;
}

static size_t
q_body_length(struct replica_req *q)
{
	return Q(q)->body_len;
}

static struct evbuffer *
q_body(struct replica_req *q)
{
	return Q(q)->body;
}

static unsigned
q_conn_pings(struct replica_req *q)
{
	return 0;		/* no connection, no PINGs */
}

static size_t
q_pending(struct replica_req *q)
{
	return inproc_pending(Q(q));
}

static int64_t
q_cancel_code(struct replica_req *q)
{
	return Q(q)->cancel_code;
}

static void
q_pause(struct replica_req *q)
{
	Q(q)->paused = 1;
}

static void
q_resume(struct replica_req *r)
{
	struct inproc_req *q = Q(r);

	if (!q->paused)
		return;
	q->paused = 0;
	if (!q->cancelled && !q->failed && !q->out_done)
		inproc_grant(q);
}

static int
q_paused(struct replica_req *q)
{
	return Q(q)->paused;
}

static void
q_set_user(struct replica_req *q, void *u)
{
	Q(q)->user = u;
}

static void *
q_user(struct replica_req *q)
{
	return Q(q)->user;
}

static int
inproc_can_send(const struct inproc_req *q)
{
	return !q->cancelled && !q->failed && !q->out_done;
}

static int
q_respond(struct replica_req *r, int status, const char *const *hdrs,
    int end)
{
	struct wire_field fields[WIRE_MAX_FIELDS];
	struct inproc_req *q = Q(r);
	struct stream *s;
	unsigned n = 0;

	if (!inproc_can_send(q) || q->out_head || status < 100 ||
	    status > 999)
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
	q->out_head = 1;
	if (end)
		q->out_done = 1;
	s = end ? inproc_detach(q) : q->s;
	if (s != NULL) {
		stream_on_response(s, status, fields, n, end);
		if (end)
			stream_on_end(s);
	}
	inproc_maybe_free(q);
	return 0;
}

/* Body out: as far as the credit goes now, the rest queued in order. */
static int
inproc_send(struct inproc_req *q, const void *p, size_t n, int end)
{
	struct evbuffer *scratch = q->ip->scratch;
	size_t now = 0;

	if (!inproc_can_send(q) || !q->out_head || (n != 0 && p == NULL))
		return -1;
	if (inproc_pending(q) == 0) {
		now = n < q->send_credit ? n : (size_t)q->send_credit;
		if (now != 0 && evbuffer_add(scratch, p, now) != 0)
			return -1;
		if (now != 0 || (end && n == 0))
			inproc_deliver(q, scratch, end && now == n);
	}
	if (now < n) {
		if (q->pending == NULL && (q->pending = evbuffer_new()) == NULL)
			return -1;
		if (evbuffer_add(q->pending, (const char *)p + now,
		    n - now) != 0)
			return -1;
		q->want_writable = 1;
	}
	if (end) {
		q->end_pending = inproc_pending(q) != 0;
		q->out_done = 1;
		inproc_maybe_free(q);
	}
	return 0;
}

static int
q_write(struct replica_req *q, const void *p, size_t n)
{
	return inproc_send(Q(q), p, n, 0);
}

static int
q_write_end(struct replica_req *q, const void *p, size_t n)
{
	return inproc_send(Q(q), p, n, 1);
}

static int
q_end(struct replica_req *q)
{
	return inproc_send(Q(q), NULL, 0, 1);
}

static int
q_fail(struct replica_req *r, const char *text)
{
	struct inproc_req *q = Q(r);
	struct stream *s;
	char why[160];

	if (!inproc_can_send(q))
		return -1;
	q->out_done = 1;
	q->failed = 1;
	q->end_pending = 0;
	if ((s = inproc_detach(q)) != NULL) {
		snprintf(why, sizeof(why), "replica failed the request: %.120s",
		    text != NULL ? text : "");
		stream_on_fail(s, 502, why);
	}
	inproc_maybe_free(q);
	return 0;
}

static int
q_query_get(const char *query, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key), vlen;
	const char *p = query, *end;

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

const struct replica_api inproc_api = {
	.abi = REPLICA_MODULE_ABI,
	.replica_id = ip_id,
	.replica_deployment = ip_deployment,
	.replica_address = ip_address,
	.replica_base = ip_base,
	.replica_active = ip_active,
	.replica_req_replica = q_replica,
	.replica_req_stream = q_stream,
	.replica_req_method = q_method,
	.replica_req_target = q_target,
	.replica_req_path = q_path,
	.replica_req_query = q_query,
	.replica_req_deployment = q_deployment,
	.replica_req_request_id = q_request_id,
	.replica_req_deadline_ms = q_deadline_ms,
	.replica_req_header = q_header,
	.replica_req_header_count = q_header_count,
	.replica_req_header_at = q_header_at,
	.replica_req_body_length = q_body_length,
	.replica_req_body = q_body,
	.replica_req_conn_pings = q_conn_pings,
	.replica_req_pending = q_pending,
	.replica_req_cancel_code = q_cancel_code,
	.replica_req_pause = q_pause,
	.replica_req_resume = q_resume,
	.replica_req_paused = q_paused,
	.replica_req_set_user = q_set_user,
	.replica_req_user = q_user,
	.replica_respond = q_respond,
	.replica_write = q_write,
	.replica_write_end = q_write_end,
	.replica_end = q_end,
	.replica_fail = q_fail,
	.replica_query_get = q_query_get,
};
