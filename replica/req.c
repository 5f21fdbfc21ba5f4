/*
 * req.c -- requests of the replica library: frames on streams,
 * accessors, responding and flow-control credit.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "replica_impl.h"

static void	req_grant(struct replica_req *);
static int	req_on_window(struct replica_req *, uint32_t);

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

	idtab_del(&c->streams, q->stream);
	if (q->dtor != NULL)
		q->dtor(q);
	if (q->body != NULL)
		evbuffer_free(q->body);
	if (q->pending != NULL)
		evbuffer_free(q->pending);
	if (q->trailers != NULL)
		evbuffer_free(q->trailers);
	if (q->grpc_md[0] != NULL)
		evbuffer_free(q->grpc_md[0]);
	if (q->grpc_md[1] != NULL)
		evbuffer_free(q->grpc_md[1]);
	free(q);
	r->active--;
	if (r->stopping && r->active == 0)
		r->drained(r);
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

void
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
	if (idtab_put(&c->streams, q->stream, q) != 0) {
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

	if ((q = idtab_get(&c->streams, f->stream)) == NULL)
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
	if ((q = idtab_get(&c->streams, f->stream)) != NULL) {
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
		    f->stream != 0 && (q = idtab_get(&c->streams, f->stream)) != NULL &&
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

/* Frames on streams, and the connection frames conn.c leaves to us. */
static int
req_frame(struct conn *c, const struct wire_frame *f, const char **why)
{
	switch (f->type) {
	case WIRE_REQUEST:
		return frame_request(c, f, why);
	case WIRE_DATA:
	case WIRE_END:
		return frame_body(c, f, why);
	case WIRE_CANCEL:
	case WIRE_ERROR:
		return frame_cancel(c, f, why);
	default:
		return frame_other(c, f, why);
	}
}

const struct conn_ops req_conn_ops = { req_frame, req_cancel };

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

/* name, value, ..., NULL (or NULL) as wire fields: -1 if odd or too many. */
int
req_fields(const char *const *hdrs, struct wire_field *fields, unsigned *np)
{
	unsigned n = 0;

	for (; hdrs != NULL && hdrs[0] != NULL; hdrs += 2) {
		if (hdrs[1] == NULL || n == WIRE_MAX_FIELDS)
			return -1;
		fields[n].name.p = hdrs[0];
		fields[n].name.len = strlen(hdrs[0]);
		fields[n].value.p = hdrs[1];
		fields[n].value.len = strlen(hdrs[1]);
		n++;
	}
	*np = n;
	return 0;
}

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
	unsigned	      n;

	if (!req_can_send(q) || q->out_head || status < 100 || status > 999 ||
	    req_fields(hdrs, fields, &n) != 0)
		return -1;
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
 * A response with trailers ends with its TRAILERS frame instead.
 */
static int
req_send_frames(struct replica_req *q, const uint8_t *p, size_t n, int end)
{
	struct evbuffer_iovec v;
	struct conn	     *c = q->c;
	uint8_t		     *w;
	size_t		      chunk;
	uint8_t		      flags;

	if (end && q->trailers != NULL) {
		if (n != 0 && req_send_frames(q, p, n, 0) != 0)
			return -1;
		return evbuffer_add_buffer(sock_output(c->sock), q->trailers);
	}
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
int
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

