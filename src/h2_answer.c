/*
 * h2_answer.c -- what goes back on an HTTP/2 stream: the replica's head
 * as HEADERS (names lowered, connection-specific fields dropped), its
 * body through a deferred data provider that credits the replica only as
 * bytes leave (stream_consumed), its trailers, and the answers ingressd
 * makes itself (errors, admin pages).
 *
 * gRPC: every error made here is a grpc-status, in Trailers-Only form
 * when no HEADERS went out yet, else in the trailers (docs/http.md,
 * "HTTP/2 and gRPC").
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <nghttp2/nghttp2.h>

#include "admin.h"
#include "grpc.h"
#include "h2_impl.h"
#include "h2s_impl.h"
#include "hfield.h"
#include "resp.h"
#include "stream.h"
#include "wctx.h"
#include "wire.h"
#include "worker.h"

/* The replica's head --------------------------------------------------------- */

static int
h2s_hop(const char *name, size_t len)
{
	/* Connection-specific fields may not appear in HTTP/2 (8.2.2). */
	return hfield_hop_by_hop(name, len);
}

static int
h2s_is(const struct wire_field *f, const char *name)
{
	return hfield_name_is(f->name.p, f->name.len, name);
}

/* A list of header fields for nghttp2, names lowered (HTTP/2 wants
 * lower case); nghttp2 copies them at submit time. */
struct h2s_nva {
	nghttp2_nv	 nv[WIRE_MAX_FIELDS + 8];
	unsigned	 n;
	char		*low;
	size_t		 lowlen, lowcap;
};

static void
h2s_nva_add(struct h2s_nva *a, const char *name, size_t nl, const char *value,
    size_t vl)
{
	size_t i;
	char *dst;

	if (a->n >= sizeof(a->nv) / sizeof(a->nv[0]) ||
	    a->lowlen + nl > a->lowcap)
		return;
	dst = a->low + a->lowlen;
	for (i = 0; i < nl; i++)
		dst[i] = (char)tolower((unsigned char)name[i]);
	a->lowlen += nl;
	a->nv[a->n].name = (uint8_t *)dst;
	a->nv[a->n].namelen = nl;
	a->nv[a->n].value = (uint8_t *)(uintptr_t)value;
	a->nv[a->n].valuelen = vl;
	a->nv[a->n].flags = NGHTTP2_NV_FLAG_NONE;
	a->n++;
}

static int
h2s_nva_init(struct h2s_nva *a, const struct wire_field *f, unsigned n)
{
	unsigned i;

	a->n = 0;
	a->lowlen = 0;
	a->lowcap = 64;
	for (i = 0; i < n; i++)
		a->lowcap += f[i].name.len;
	return (a->low = malloc(a->lowcap)) == NULL ? -1 : 0;
}

/* The replica's fields that may go to an HTTP/2 client: not connection-
 * specific ones, and for gRPC not the status (it goes in the trailers). */
static void
h2s_nva_fields(struct h2s *s, struct h2s_nva *a, const struct wire_field *f,
    unsigned n, int keep_status)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		if (h2s_hop(f[i].name.p, f[i].name.len) || f[i].name.len == 0 ||
		    f[i].name.p[0] == ':')
			continue;
		if (s->grpc && !keep_status && (h2s_is(&f[i], "grpc-status") ||
		    h2s_is(&f[i], "grpc-message")))
			continue;
		h2s_nva_add(a, f[i].name.p, f[i].name.len, f[i].value.p,
		    f[i].value.len);
	}
}

static ssize_t	h2s_read_cb(nghttp2_session *, int32_t, uint8_t *, size_t,
		    uint32_t *, nghttp2_data_source *, void *);

static void
h2s_submit(struct h2s *s, struct h2s_nva *a, int body)
{
	nghttp2_data_provider prd;

	prd.source.ptr = s;
	prd.read_callback = h2s_read_cb;
	s->head_sent = 1;
	s->has_body = body;
	if (nghttp2_submit_response(s->c->ss, s->id, a->nv, a->n,
	    body ? &prd : NULL) != 0)
		nghttp2_submit_rst_stream(s->c->ss, NGHTTP2_FLAG_NONE, s->id,
		    NGHTTP2_INTERNAL_ERROR);
	h2_schedule(s->c);
}

/* The grpc-status (and -message) fields the call ends with. */
static void
h2s_nva_status(struct h2s *s, struct h2s_nva *a, char *num, size_t numlen)
{
	int code = s->grpc_status;
	const char *msg = s->grpc_msg;

	if (code < 0 && s->resp_grpc_status >= 0) {
		code = s->resp_grpc_status;
		msg = s->resp_grpc_msg;
	} else if (code < 0) {
		/* A replica that sent no grpc-status: 200 and complete is
		 * OK, anything else by the HTTP mapping. */
		code = grpc_from_http(s->status);
		if (code != GRPC_OK)
			snprintf(s->grpc_msg, sizeof(s->grpc_msg),
			    "replica answered HTTP %d", s->status);
	}
	s->log.grpc_status = code;
	snprintf(num, numlen, "%d", code);
	h2s_nva_add(a, "grpc-status", 11, num, strlen(num));
	if (msg[0] != '\0')
		h2s_nva_add(a, "grpc-message", 12, msg, strlen(msg));
}

/* A gRPC answer without a body: the status in the HEADERS (Trailers-Only). */
void
h2s_trailers_only(struct h2s *s, const struct wire_field *f, unsigned n)
{
	struct h2s_nva a;
	char num[16];

	if (h2s_nva_init(&a, f, n) == -1)
		return;
	h2s_nva_add(&a, ":status", 7, "200", 3);
	h2s_nva_add(&a, "content-type", 12, "application/grpc", 16);
	h2s_nva_fields(s, &a, f, n, 0);
	h2s_nva_status(s, &a, num, sizeof(num));
	s->log.status = 200;
	s->eof = 1;
	h2s_submit(s, &a, 0);
	free(a.low);
}

/* Remember a grpc-status the replica put in its head. */
void
h2s_head_status(struct h2s *s, const struct wire_field *f, unsigned n)
{
	unsigned i;
	size_t l;

	for (i = 0; i < n; i++) {
		if (h2s_is(&f[i], "grpc-status"))
			s->resp_grpc_status = atoi(f[i].value.p);
		else if (h2s_is(&f[i], "grpc-message")) {
			l = f[i].value.len < H2S_MSG_MAX - 1 ? f[i].value.len :
			    H2S_MSG_MAX - 1;
			memcpy(s->resp_grpc_msg, f[i].value.p, l);
			s->resp_grpc_msg[l] = '\0';
		}
	}
}

/* The replica's head, as HEADERS; -1 out of memory (nothing sent). */
int
h2s_respond(struct h2s *s, int status, const struct wire_field *f,
    unsigned n, int end)
{
	struct h2s_nva a;
	char st[16];
	unsigned i;
	int rid = 0;

	if (h2s_nva_init(&a, f, n) == -1)
		return -1;
	snprintf(st, sizeof(st), "%d", status);
	h2s_nva_add(&a, ":status", 7, st, strlen(st));
	h2s_nva_fields(s, &a, f, n, 0);
	for (i = 0; i < n; i++)
		rid |= h2s_is(&f[i], "x-request-id");
	if (!rid)
		h2s_nva_add(&a, "x-request-id", 12, s->request_id,
		    strlen(s->request_id));
	s->log.status = status;
	s->eof = end;
	h2s_submit(s, &a, !end || s->grpc);
	free(a.low);
	return 0;
}

/* The stream is over: the data provider sends what is left, then EOF. */
void
h2s_finish(struct h2s *s)
{
	s->eof = 1;
	if (s->has_body)
		nghttp2_session_resume_data(s->c->ss, s->id);
	h2_schedule(s->c);
}

/* The trailing HEADERS: the replica's trailers, and for gRPC a status. */
static void
h2s_send_trailers(struct h2s *s)
{
	struct wire_field f[WIRE_MAX_FIELDS];
	struct h2s_nva a;
	const char *p = s->tbuf;
	unsigned i, n = 0;
	char num[16];
	int have = 0;

	for (i = 0; i < s->ntr && n < WIRE_MAX_FIELDS; i++, n++) {
		f[n].name.p = p;
		f[n].name.len = strlen(p);
		p += f[n].name.len + 1;
		f[n].value.p = p;
		f[n].value.len = strlen(p);
		p += f[n].value.len + 1;
		if (h2s_is(&f[n], "grpc-status"))
			have = 1;
	}
	if (h2s_nva_init(&a, f, n) == -1)
		return;
	h2s_nva_fields(s, &a, f, n, s->grpc_status < 0);
	if (s->grpc && (!have || s->grpc_status >= 0)) {
		h2s_nva_status(s, &a, num, sizeof(num));
	} else if (have) {
		for (i = 0; i < n; i++)
			if (h2s_is(&f[i], "grpc-status"))
				s->log.grpc_status = atoi(f[i].value.p);
	}
	nghttp2_submit_trailer(s->c->ss, s->id, a.nv, a.n);
	free(a.low);
}

/*
 * nghttp2 asks for DATA: how much of what the replica sent goes in this
 * frame; deferred while there is none and the stream goes on.  NO_COPY:
 * h2s_send_data moves the bytes when the frame is written, and credits
 * them back to the replica then, as they leave.
 */
static ssize_t
h2s_read_cb(nghttp2_session *ss, int32_t id, uint8_t *buf, size_t len,
    uint32_t *flags, nghttp2_data_source *src, void *u)
{
	struct h2s *s = src->ptr;
	size_t have = s->out != NULL ? evbuffer_get_length(s->out) : 0;
	size_t n = have < len ? have : len;

	if (n > 0)
		*flags |= NGHTTP2_DATA_FLAG_NO_COPY;
	if (have > n)
		return (ssize_t)n;
	if (!s->eof)
		return n > 0 ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (s->grpc || s->ntr > 0) {
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
		h2s_send_trailers(s);
	}
	return (ssize_t)n;
}

int
h2s_send_data(struct h2s *s, struct evbuffer *out, const uint8_t *hd,
    size_t len, size_t padlen)
{
	static const uint8_t zeros[256];
	uint8_t padbyte = (uint8_t)(padlen - 1);

	if (s->out == NULL || evbuffer_get_length(s->out) < len ||
	    padlen > sizeof(zeros))
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	if (evbuffer_add(out, hd, 9) != 0 ||
	    (padlen > 0 && evbuffer_add(out, &padbyte, 1) != 0) ||
	    evbuffer_remove_buffer(s->out, out, len) != (int)len ||
	    (padlen > 1 && evbuffer_add(out, zeros, padlen - 1) != 0))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (s->stream != NULL)
		stream_consumed(s->stream, len);
	return 0;
}

/* Answers made here -------------------------------------------------------- */

/*
 * An error ingressd produced.  gRPC: a grpc-status, Trailers-Only if
 * nothing went out yet, else in the trailers after what did.  Plain
 * HTTP: a text/plain error as front.c's, or, mid-response, RST_STREAM
 * (HTTP/2's way of saying the response is cut).
 */
void
h2s_local(struct h2s *s, int status, const char *why)
{
	struct h2s_nva a;
	char body[512], st[16], len[24];
	int n;

	if (s->end_sent || (s->head_sent && !s->has_body))
		return;
	if (s->grpc) {
		s->grpc_status = grpc_from_local(status, s->log.reject,
		    s->log.bytes_out > 0);
		grpc_message_encode(why != NULL ? why : "", s->grpc_msg,
		    sizeof(s->grpc_msg));
		if (!s->head_sent)
			h2s_trailers_only(s, NULL, 0);
		else
			h2s_finish(s);
		return;
	}
	if (s->head_sent) {
		nghttp2_submit_rst_stream(s->c->ss, NGHTTP2_FLAG_NONE, s->id,
		    NGHTTP2_INTERNAL_ERROR);
		h2_schedule(s->c);
		return;
	}
	n = snprintf(body, sizeof(body), "%d %s%s%s\n", status,
	    resp_reason(status), why != NULL ? ": " : "", why != NULL ? why : "");
	if (n < 0 || (size_t)n >= sizeof(body))
		n = (int)strlen(body);
	if ((s->out == NULL && (s->out = evbuffer_new()) == NULL) ||
	    h2s_nva_init(&a, NULL, 0) == -1)
		return;
	snprintf(st, sizeof(st), "%d", status);
	snprintf(len, sizeof(len), "%d", n);
	h2s_nva_add(&a, ":status", 7, st, strlen(st));
	h2s_nva_add(&a, "content-type", 12, "text/plain; charset=utf-8", 25);
	h2s_nva_add(&a, "content-length", 14, len, strlen(len));
	h2s_nva_add(&a, "x-request-id", 12, s->request_id,
	    strlen(s->request_id));
	if (status == 503)
		h2s_nva_add(&a, "retry-after", 11, "1", 1);
	if (!s->req.is_head)
		evbuffer_add(s->out, body, (size_t)n);
	s->log.status = status;
	s->log.bytes_out += (uint64_t)n;
	s->eof = 1;
	h2s_submit(s, &a, !s->req.is_head);
	free(a.low);
}

void
h2s_admin(struct h2s *s)
{
	const char *ctype = "application/json";
	char *body = NULL, st[16], len[24];
	struct h2s_nva a;
	size_t blen = 0;
	int status;

	status = s->admin_big ? 413 : admin_handle(s->c->w->worker, &s->req,
	    s->c->admin, s->admin_body, s->admin_len, &body, &blen, &ctype);
	if (body == NULL) {
		h2s_local(s, status, NULL);
		return;
	}
	if ((s->out == NULL && (s->out = evbuffer_new()) == NULL) ||
	    h2s_nva_init(&a, NULL, 0) == -1) {
		free(body);
		return;
	}
	snprintf(st, sizeof(st), "%d", status);
	snprintf(len, sizeof(len), "%zu", blen);
	h2s_nva_add(&a, ":status", 7, st, strlen(st));
	h2s_nva_add(&a, "content-type", 12, ctype, strlen(ctype));
	h2s_nva_add(&a, "content-length", 14, len, strlen(len));
	if (!s->req.is_head)
		evbuffer_add(s->out, body, blen);
	s->log.status = status;
	s->log.bytes_out += blen;
	s->eof = 1;
	h2s_submit(s, &a, !s->req.is_head);
	free(a.low);
	free(body);
}

