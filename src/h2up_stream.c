/*
 * h2up_stream.c -- one request as an HTTP/2 stream to a replica (see
 * h2up_impl.h): the request head, the body within the server's window,
 * the carrier, and the response (head, body, trailers) to the stream.
 *
 * The head is made from the stream's protocol-free REQUEST (the same the
 * other edges decode): :method, :scheme (https on a TLS connection, RFC
 * 9113 8.3.1: the scheme the server is reached by; else http),
 * :authority from the request's Host (the replica's address when there
 * is none), :path; the end-to-end fields with names lowercased, hop-by-hop
 * ones dropped (hfield.h), and "te: trailers" for gRPC, which HTTP/2
 * allows and gRPC servers expect.
 *
 * Credit: request body the stream sends waits here until nghttp2 takes it
 * (within the server's window); what nghttp2 took goes back to the stream
 * as credit after the send pass.  Response bytes are credited to the
 * server's stream window only as the stream gives credit back (as they
 * leave for the client).
 *
 * Cancel is real here: RST_STREAM(CANCEL) for that stream alone; the
 * struct lives until nghttp2 closes the stream.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "h2up_impl.h"
#include "hfield.h"
#include "log.h"
#include "sock.h"
#include "stream.h"
#include "wire.h"

#define H2UPS_HBUF_MAX	(64 * 1024)	/* response head or trailers */

struct h2ups_fref {
	uint32_t	 no, nl, vo, vl;	/* offsets into hbuf */
};

struct h2ups {
	struct h2up_conn *c;
	struct stream	*s;		/* NULL once over or cancelled */
	int32_t		 id;
	struct evbuffer	*body;		/* request body nghttp2 has not taken */
	struct evbuffer	*rbuf;		/* response bytes on their way */
	int		 body_end;
	int		 responded;
	int		 status;
	uint64_t	 submit_at;	/* c->out_added when submitted */
	uint64_t	 owed;		/* body taken, not credited back */
	int		 on_credit;
	char		*hbuf;		/* the fields of the HEADERS in */
	size_t		 hlen, hcap;
	struct h2ups_fref f[WIRE_MAX_FIELDS];
	unsigned	 nf;
	LIST_ENTRY(h2ups) link;
	TAILQ_ENTRY(h2ups) cq;
};

static const struct stream_carrier h2ups_carrier;

static void
h2ups_free(struct h2ups *s)
{
	if (s->body != NULL)
		evbuffer_free(s->body);
	if (s->rbuf != NULL)
		evbuffer_free(s->rbuf);
	free(s->hbuf);
	free(s);
}

/* The request head ------------------------------------------------------ */

/* Names lowercased, into one buffer the nv array points into. */
struct h2ups_nva {
	nghttp2_nv	 nv[WIRE_MAX_FIELDS + 8];
	size_t		 n;
	char		*low;
	size_t		 lowlen, lowcap;
};

static void
h2ups_nva_add(struct h2ups_nva *a, const char *name, size_t nlen,
    const char *value, size_t vlen)
{
	nghttp2_nv *nv;
	size_t i;

	if (a->n == sizeof(a->nv) / sizeof(a->nv[0]) ||
	    a->lowlen + nlen > a->lowcap)
		return;
	for (i = 0; i < nlen; i++)
		a->low[a->lowlen + i] = (char)tolower((unsigned char)name[i]);
	nv = &a->nv[a->n++];
	nv->name = (uint8_t *)a->low + a->lowlen;
	nv->namelen = nlen;
	nv->value = (uint8_t *)(uintptr_t)value;
	nv->valuelen = vlen;
	nv->flags = NGHTTP2_NV_FLAG_NONE;
	a->lowlen += nlen;
}

static int
h2ups_is(const struct wire_field *f, const char *lit)
{
	return hfield_name_is(f->name.p, f->name.len, lit);
}

/* The fields an HTTP/2 server may see (RFC 9113 8.2.2): no connection-
 * specific ones, TE only as "trailers", Host as :authority. */
static int
h2ups_skip(const struct wire_field *f)
{
	if (h2ups_is(f, "te"))
		return 1;		/* added back for gRPC */
	return h2ups_is(f, "host") || h2ups_is(f, "x-request-id") ||
	    hfield_hop_by_hop(f->name.p, f->name.len) ||
	    h2ups_is(f, "proxy-connection") || f->name.len == 0 ||
	    f->name.p[0] == ':';
}

static int
h2ups_head(struct h2ups_nva *a, const struct wire_request *wr,
    const char *authority, int tls)
{
	const char *auth = authority;
	size_t alen = strlen(authority);
	int grpc = 0;
	unsigned i;

	a->n = 0;
	a->lowlen = 0;
	a->lowcap = 128;
	for (i = 0; i < wr->nfields; i++)
		a->lowcap += wr->fields[i].name.len;
	if ((a->low = malloc(a->lowcap)) == NULL)
		return -1;
	for (i = 0; i < wr->nfields; i++) {
		if (h2ups_is(&wr->fields[i], "host")) {
			auth = wr->fields[i].value.p;
			alen = wr->fields[i].value.len;
		} else if (h2ups_is(&wr->fields[i], "content-type"))
			grpc = wr->fields[i].value.len >= 16 && strncasecmp(
			    wr->fields[i].value.p, "application/grpc", 16) == 0;
	}
	h2ups_nva_add(a, ":method", 7, wr->method.p, wr->method.len);
	h2ups_nva_add(a, ":scheme", 7, tls ? "https" : "http", tls ? 5 : 4);
	h2ups_nva_add(a, ":authority", 10, auth, alen);
	h2ups_nva_add(a, ":path", 5, wr->target.p, wr->target.len);
	for (i = 0; i < wr->nfields; i++) {
		if (!h2ups_skip(&wr->fields[i]))
			h2ups_nva_add(a, wr->fields[i].name.p,
			    wr->fields[i].name.len, wr->fields[i].value.p,
			    wr->fields[i].value.len);
	}
	if (grpc)
		h2ups_nva_add(a, "te", 2, "trailers", 8);
	h2ups_nva_add(a, "x-request-id", 12, wr->request_id.p,
	    wr->request_id.len);
	return 0;
}

/* The request body, as nghttp2 asks for it within the server's window. */
static ssize_t
h2ups_read_cb(nghttp2_session *ss, int32_t id, uint8_t *buf, size_t len,
    uint32_t *flags, nghttp2_data_source *src, void *u)
{
	struct h2ups *s = src->ptr;
	size_t n = evbuffer_get_length(s->body);

	if (n > len)
		n = len;
	if (n > 0) {
		evbuffer_remove(s->body, buf, n);
		s->owed += n;
		if (!s->on_credit && s->s != NULL) {
			TAILQ_INSERT_TAIL(&s->c->credit, s, cq);
			s->on_credit = 1;
		}
	}
	if (s->body_end && evbuffer_get_length(s->body) == 0) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		return (ssize_t)n;
	}
	return n > 0 ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
}

/* The stream's protocol-free request, as its REQUEST frame says it. */
static int
h2ups_decode(struct evbuffer *tmp, struct wire_request *wr,
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

static int
h2ups_send_head(struct h2ups *s, struct evbuffer *tmp)
{
	struct wire_field fields[WIRE_MAX_FIELDS];
	struct wire_request wr;
	struct h2ups_nva *a;
	nghttp2_data_provider prd;
	int end, id;

	if (h2ups_decode(tmp, &wr, fields, &end) == -1)
		return -2;
	if ((a = malloc(sizeof(*a))) == NULL)
		return -1;
	if (h2ups_head(a, &wr, s->c->pool->authority,
	    sock_ssl(s->c->sock) != NULL) == -1) {
		free(a);
		return -1;
	}
	prd.source.ptr = s;
	prd.read_callback = h2ups_read_cb;
	s->body_end = end;
	id = nghttp2_submit_request(s->c->ss, NULL, a->nv, a->n,
	    end ? NULL : &prd, s);
	free(a->low);
	free(a);
	if (id < 0)
		return -1;
	s->id = id;
	return 0;
}

int
h2ups_submit(struct h2up_conn *c, struct stream *st)
{
	struct evbuffer *tmp;
	struct h2ups *s;
	int rv;

	if (c->dead || (s = calloc(1, sizeof(*s))) == NULL)
		return -1;
	s->c = c;
	s->body = evbuffer_new();
	tmp = evbuffer_new();
	if (s->body == NULL || tmp == NULL) {
		if (tmp != NULL)
			evbuffer_free(tmp);
		h2ups_free(s);
		return -1;
	}
	rv = stream_encode(st, 1, tmp) == -1 ? -2 : h2ups_send_head(s, tmp);
	evbuffer_free(tmp);
	if (rv == -2) {
		h2ups_free(s);
		stream_on_fail(st, 431, "request head too large to forward");
		return 1;
	}
	if (rv == -1) {
		h2ups_free(s);
		return -1;
	}
	s->s = st;
	s->submit_at = c->out_added;
	LIST_INSERT_HEAD(&c->streams, s, link);
	c->nstreams++;
	h2up_schedule(c);
	stream_attached(st, &h2ups_carrier, s, (uint32_t)s->id);
	stream_flush_pending(st);
	return 0;
}

/* The response ---------------------------------------------------------- */

static void
h2ups_uncredit(struct h2ups *s)
{
	if (s->on_credit) {
		TAILQ_REMOVE(&s->c->credit, s, cq);
		s->on_credit = 0;
	}
}

/* The stream is over for us (answered, or cancelled): the carrier forgets
 * it.  A request still being sent is reset: nobody will read it on. */
static struct stream *
h2ups_detach(struct h2ups *s, uint32_t code)
{
	struct stream *st = s->s;

	s->s = NULL;
	h2ups_uncredit(s);
	if (code != 0 || !s->body_end || evbuffer_get_length(s->body) > 0)
		nghttp2_submit_rst_stream(s->c->ss, NGHTTP2_FLAG_NONE, s->id,
		    code);
	h2up_schedule(s->c);
	return st;
}

int
h2ups_header(struct h2ups *s, const uint8_t *name, size_t nlen,
    const uint8_t *value, size_t vlen)
{
	struct h2ups_fref *f;
	char *p;

	if (nlen == 7 && memcmp(name, ":status", 7) == 0) {
		s->status = atoi((const char *)value);
		return 0;
	}
	if (nlen > 0 && name[0] == ':')
		return 0;
	if (s->nf == WIRE_MAX_FIELDS || s->hlen + nlen + vlen + 2 >
	    H2UPS_HBUF_MAX)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;	/* reset */
	if (s->hlen + nlen + vlen + 2 > s->hcap) {
		size_t cap = s->hcap ? s->hcap * 2 : 1024;

		while (cap < s->hlen + nlen + vlen + 2)
			cap *= 2;
		if ((p = realloc(s->hbuf, cap)) == NULL)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		s->hbuf = p;
		s->hcap = cap;
	}
	f = &s->f[s->nf++];
	f->no = (uint32_t)s->hlen;
	f->nl = (uint32_t)nlen;
	memcpy(s->hbuf + s->hlen, name, nlen);
	s->hbuf[s->hlen + nlen] = '\0';
	s->hlen += nlen + 1;
	f->vo = (uint32_t)s->hlen;
	f->vl = (uint32_t)vlen;
	memcpy(s->hbuf + s->hlen, value, vlen);
	s->hbuf[s->hlen + vlen] = '\0';
	s->hlen += vlen + 1;
	return 0;
}

void
h2ups_headers_done(struct h2ups *s, int end)
{
	struct wire_field fields[WIRE_MAX_FIELDS];
	struct stream *st;
	unsigned i, n = s->nf;

	for (i = 0; i < n; i++) {
		fields[i].name.p = s->hbuf + s->f[i].no;
		fields[i].name.len = s->f[i].nl;
		fields[i].value.p = s->hbuf + s->f[i].vo;
		fields[i].value.len = s->f[i].vl;
	}
	s->nf = 0;
	s->hlen = 0;
	if (s->s == NULL)
		return;
	if (!s->responded && s->status < 200)
		return;		/* interim (1xx): the final head follows */
	if (!s->responded) {
		s->responded = 1;
		if (!end) {
			stream_on_response(s->s, s->status, fields, n, 0);
			return;
		}
		st = h2ups_detach(s, NGHTTP2_NO_ERROR);
		stream_on_response(st, s->status, fields, n, 1);
		stream_on_end(st);
		return;
	}
	/* Trailers (nghttp2 made sure END_STREAM is set). */
	st = h2ups_detach(s, NGHTTP2_NO_ERROR);
	stream_on_trailers(st, fields, n);
	stream_on_end(st);
}

void
h2ups_data(struct h2ups *s, const uint8_t *p, size_t n)
{
	struct stream *st;

	if (s->s == NULL || n == 0)
		return;
	if (s->rbuf == NULL && (s->rbuf = evbuffer_new()) == NULL)
		return;
	evbuffer_add(s->rbuf, p, n);
	if (stream_on_data(s->s, s->rbuf) == -1) {
		/* More than the credit we gave: nghttp2 enforces our window,
		 * so this is our accounting gone wrong.  Fail loudly. */
		st = h2ups_detach(s, NGHTTP2_FLOW_CONTROL_ERROR);
		stream_on_fail(st, 502, "replica overran its window");
	}
	if (s->rbuf != NULL)
		evbuffer_drain(s->rbuf, evbuffer_get_length(s->rbuf));
}

void
h2ups_data_end(struct h2ups *s)
{
	struct stream *st;

	if (s->s == NULL)
		return;
	st = h2ups_detach(s, NGHTTP2_NO_ERROR);
	stream_on_end(st);
}

void
h2ups_head_sent(struct h2ups *s)
{
	(void)s;	/* submit_at is the conservative mark */
}

/*
 * nghttp2 is done with the stream.  One still attached was reset by the
 * server (or refused: GOAWAY beyond it, REFUSED_STREAM): refused before a
 * response, it is retried on another replica (RFC 9113 8.7: not
 * processed); otherwise the stream fails with 502.
 */
void
h2ups_closed(struct h2ups *s, uint32_t error)
{
	struct h2up_conn *c = s->c;
	struct stream *st = s->s;
	int refused = error == NGHTTP2_REFUSED_STREAM && !s->responded;
	char why[96];

	s->s = NULL;
	h2ups_uncredit(s);
	LIST_REMOVE(s, link);
	c->nstreams--;
	/* The stream hears first, while its carrier (s) still exists for
	 * the access log's peer. */
	if (st != NULL && !(refused && stream_retry(st) == 0)) {
		snprintf(why, sizeof(why), "replica reset the stream (%s)",
		    nghttp2_http2_strerror(error));
		stream_on_fail(st, 502, why);
	}
	h2ups_free(s);
	c->pool->hooks->stream_done(c);
}

void
h2ups_unlink_all(struct h2up_conn *c)
{
	struct h2ups *s;

	while ((s = LIST_FIRST(&c->streams)) != NULL) {
		LIST_REMOVE(s, link);
		h2ups_uncredit(s);
		nghttp2_session_set_stream_user_data(c->ss, s->id, NULL);
		LIST_INSERT_HEAD(&c->lost, s, link);
	}
}

/* A stream the server cannot have seen (nothing of the connection's
 * output past where it was submitted left the socket) is retried; any
 * other fails with 502. */
void
h2ups_lose_all(struct h2up_conn *c, uint64_t written, const char *why)
{
	struct h2ups *s;
	struct stream *st;

	while ((s = LIST_FIRST(&c->lost)) != NULL) {
		LIST_REMOVE(s, link);
		st = s->s;
		s->s = NULL;
		if (st != NULL && !(written <= s->submit_at &&
		    stream_retry(st) == 0))
			stream_on_fail(st, 502, why);
		h2ups_free(s);
	}
}

void
h2ups_credit_all(struct h2up_conn *c)
{
	struct h2ups *s;
	uint64_t n;

	while (!c->dead && (s = TAILQ_FIRST(&c->credit)) != NULL) {
		h2ups_uncredit(s);
		n = s->owed;
		s->owed = 0;
		if (s->s != NULL && n > 0)
			stream_on_window(s->s, (uint32_t)n);
	}
}

/* The carrier (stream.h) ------------------------------------------------ */

static void
h2ups_carrier_data(void *arg, uint32_t id, const void *p, size_t n)
{
	struct h2ups *s = arg;

	if (s->s == NULL || s->c->dead)
		return;
	evbuffer_add(s->body, p, n);
	nghttp2_session_resume_data(s->c->ss, s->id);
	h2up_schedule(s->c);
}

static void
h2ups_carrier_end(void *arg, uint32_t id)
{
	struct h2ups *s = arg;

	if (s->s == NULL || s->c->dead)
		return;
	s->body_end = 1;
	nghttp2_session_resume_data(s->c->ss, s->id);
	h2up_schedule(s->c);
}

/* Response bytes left for the client: the server may send that many more
 * on this stream. */
static void
h2ups_carrier_window(void *arg, uint32_t id, uint32_t n)
{
	struct h2ups *s = arg;

	if (s->s == NULL || s->c->dead)
		return;
	nghttp2_session_consume_stream(s->c->ss, s->id, n);
	h2up_schedule(s->c);
}

/* Deadline or client gone: RST_STREAM(CANCEL), this stream alone. */
static void
h2ups_carrier_cancel(void *arg, struct stream *st, uint32_t code)
{
	struct h2ups *s = arg;

	if (s->s != st || s->c->dead)
		return;
	log_debug("replica %s: stream %d cancelled (%s)", s->c->pool->ep->id,
	    s->id, code == WIRE_CODE_TIMEOUT ? "deadline" : "client gone");
	(void)h2ups_detach(s, NGHTTP2_CANCEL);
}

static const char *
h2ups_carrier_peer(const void *arg)
{
	const struct h2ups *s = arg;

	return s->c->pool->ep->id;
}

static const struct stream_carrier h2ups_carrier = {
	.data = h2ups_carrier_data,
	.end = h2ups_carrier_end,
	.window = h2ups_carrier_window,
	.cancel = h2ups_carrier_cancel,
	.peer = h2ups_carrier_peer,
};
