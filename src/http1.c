/*
 * http1.c -- HTTP/1.1 request parsing on llhttp, without I/O.
 *
 * Two parsers look at every byte of a request head.  The raw pre-scanner
 * (http1_scan.c) checks the syntax that llhttp 8.1 lets through even in
 * strict mode and counts the limits; llhttp then parses the same bytes and
 * owns the framing.  The scanner runs first over what was fed and stops at
 * its first error, llhttp parses only the bytes before it, so the first
 * error by position wins and the verdict does not depend on how the bytes
 * were split across http1_feed() calls.
 *
 * Chunked trailers get the same treatment: the parser pauses at the last
 * chunk, and the scanner checks the trailer lines before llhttp sees them.
 * Body bytes go to llhttp alone.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "llhttp.h"

#include "arena.h"
#include "http1.h"
#include "http1_scan.h"
#include "http1_target.h"

#define FIELDS_MIN	16

enum phase {
	PH_HEAD,	/* request line and header section */
	PH_BODY,	/* llhttp alone: Content-Length or chunked body */
	PH_TRAILER,	/* after the last chunk: trailer lines */
	PH_DONE,	/* a message ended; paused until http1_next() */
	PH_ERROR,	/* final */
};

/* Header fields the parser itself cares about. */
enum kind {
	K_OTHER,
	K_HOST,
	K_CONTENT_LENGTH,
	K_TRANSFER_ENCODING,
	K_EXPECT,
};

struct fieldpos {
	size_t	 name;		/* arena offsets */
	size_t	 value;
};

struct http1 {
	llhttp_t		 ll;
	struct http1_limits	 lim;
	struct http1_callbacks	 cb;
	void			*arg;

	enum phase		 phase;
	int			 status;	/* set once, on the first error */
	const char		*reason;

	/* The raw scanner, and the error it stopped on (not yet final). */
	struct http1_scan	 scan;

	/*
	 * The arena: NUL-terminated copies of method, target, names and
	 * values, appended as llhttp hands out (possibly split) spans.  It
	 * only grows while a head is read, so pointers into it are set once
	 * the head is complete, and it is reused by the next message.
	 */
	struct arena		 arena;
	size_t			 method_off;
	size_t			 target_off;
	size_t			 auth_off;	/* absolute-form authority */
	size_t			 auth_len;
	int			 absolute;	/* target was absolute-form */

	struct http1_field	*fields;
	struct fieldpos		*pos;
	unsigned		 nfields;
	unsigned		 fcap;

	enum kind		 kind;		/* of the field being read */
	unsigned		 nhost;
	unsigned		 host_idx;
	unsigned		 ncl;
	unsigned		 nte;
	int			 expect;
	uint64_t		 body_total;
	int			 trailer_next;	/* paused at the last chunk */
	int			 msg_done;	/* paused at message end */

	struct http1_request	 req;
	int			 have_req;
};

static int	cb_method(llhttp_t *, const char *, size_t);
static int	cb_method_complete(llhttp_t *);
static int	cb_url(llhttp_t *, const char *, size_t);
static int	cb_url_complete(llhttp_t *);
static int	cb_field(llhttp_t *, const char *, size_t);
static int	cb_field_complete(llhttp_t *);
static int	cb_value(llhttp_t *, const char *, size_t);
static int	cb_value_complete(llhttp_t *);
static int	cb_headers_complete(llhttp_t *);
static int	cb_body(llhttp_t *, const char *, size_t);
static int	cb_chunk_header(llhttp_t *);
static int	cb_message_complete(llhttp_t *);

static const llhttp_settings_t settings = {
	.on_method = cb_method,
	.on_method_complete = cb_method_complete,
	.on_url = cb_url,
	.on_url_complete = cb_url_complete,
	.on_header_field = cb_field,
	.on_header_field_complete = cb_field_complete,
	.on_header_value = cb_value,
	.on_header_value_complete = cb_value_complete,
	.on_headers_complete = cb_headers_complete,
	.on_body = cb_body,
	.on_chunk_header = cb_chunk_header,
	.on_message_complete = cb_message_complete,
};

static const struct http1_limits default_limits = {
	.max_request_line = 8192,
	.max_header_bytes = 32768,
	.max_headers = 100,
	.max_body = 1024 * 1024,
};

/* Record the first error; later ones are consequences. Returns -1. */
static int
fail(struct http1 *h, int status, const char *reason)
{
	if (h->status == 0) {
		h->status = status;
		h->reason = reason;
	}
	return -1;
}

/* A callback's return value as an error status. */
static int
cb_status(int st)
{
	return (st >= 400 && st <= 599) ? st : 500;
}

/* An arena call's result: out of memory is the request's error. */
static int
mem(struct http1 *h, int rc)
{
	return rc == 0 ? 0 : fail(h, 500, "out of memory");
}

static int
fields_grow(struct http1 *h)
{
	struct http1_field	*f;
	struct fieldpos		*fp;
	unsigned		 cap;

	if (h->nfields < h->fcap)
		return 0;
	cap = h->fcap != 0 ? h->fcap * 2 : FIELDS_MIN;
	if ((f = reallocarray(h->fields, cap, sizeof *f)) == NULL)
		return fail(h, 500, "out of memory");
	h->fields = f;
	if ((fp = reallocarray(h->pos, cap, sizeof *fp)) == NULL)
		return fail(h, 500, "out of memory");
	h->pos = fp;
	h->fcap = cap;
	return 0;
}

/* --- llhttp callbacks. -------------------------------------------------- */

static int
cb_method(llhttp_t *ll, const char *p, size_t n)
{
	struct http1	*h = ll->data;

	return mem(h, arena_span(&h->arena, &h->method_off, p, n));
}

static int
cb_method_complete(llhttp_t *ll)
{
	struct http1	*h = ll->data;

	if (mem(h, arena_close(&h->arena, &h->method_off)) == -1)
		return -1;
	h->req.method_len = h->arena.len - 1 - h->method_off;
	if (strcmp(h->arena.buf + h->method_off, "CONNECT") == 0)
		return fail(h, 501, "CONNECT not supported");
	return 0;
}

static int
cb_url(llhttp_t *ll, const char *p, size_t n)
{
	struct http1	*h = ll->data;

	return mem(h, arena_span(&h->arena, &h->target_off, p, n));
}

/*
 * Absolute-form: the authority and the origin-form ("/" when the path is
 * empty) are copied after the target, so both are NUL-terminated; the
 * caller sees only the origin-form as the target.
 */
static int
target_absolute(struct http1 *h)
{
	struct http1_absolute	 a;
	const char		*why;
	size_t			 auth, rest, slash;

	if (http1_target_absolute(h->arena.buf + h->target_off,
	    h->req.target_len, &a, &why) == -1)
		return fail(h, 400, why);
	auth = (size_t)(a.authority - h->arena.buf);
	rest = (size_t)(a.rest - h->arena.buf);
	slash = a.rest_len == 0 || a.rest[0] != '/';
	if (mem(h, arena_reserve(&h->arena, a.authority_len + a.rest_len +
	    slash + 2)) == -1)
		return -1;
	h->auth_off = h->arena.len;
	h->auth_len = a.authority_len;
	arena_add(&h->arena, h->arena.buf + auth, a.authority_len);
	arena_add(&h->arena, "", 1);
	h->target_off = h->arena.len;
	h->req.target_len = a.rest_len + slash;
	if (slash)
		arena_add(&h->arena, "/", 1);
	arena_add(&h->arena, h->arena.buf + rest, a.rest_len);
	arena_add(&h->arena, "", 1);
	h->absolute = 1;
	return 0;
}

/* Origin-form, absolute-form, and "*" for OPTIONS; no authority-form. */
static int
cb_url_complete(llhttp_t *ll)
{
	struct http1	*h = ll->data;
	const char	*t;

	if (mem(h, arena_close(&h->arena, &h->target_off)) == -1)
		return -1;
	t = h->arena.buf + h->target_off;
	h->req.target_len = h->arena.len - 1 - h->target_off;
	if (t[0] == '/')
		return 0;
	if (strcmp(t, "*") == 0 &&
	    strcmp(h->arena.buf + h->method_off, "OPTIONS") == 0)
		return 0;
	return target_absolute(h);
}

static int
cb_field(llhttp_t *ll, const char *p, size_t n)
{
	struct http1	*h = ll->data;

	if (h->phase == PH_TRAILER)
		return 0;
	if (!h->arena.in_span && fields_grow(h) == -1)
		return -1;
	return mem(h, arena_span(&h->arena, &h->pos[h->nfields].name, p, n));
}

static enum kind
field_kind(const char *name)
{
	/* By length first: most names are none of these. */
	switch (strlen(name)) {
	case 4:
		return strcasecmp(name, "host") == 0 ? K_HOST : K_OTHER;
	case 6:
		return strcasecmp(name, "expect") == 0 ? K_EXPECT : K_OTHER;
	case 14:
		return strcasecmp(name, "content-length") == 0 ?
		    K_CONTENT_LENGTH : K_OTHER;
	case 17:
		return strcasecmp(name, "transfer-encoding") == 0 ?
		    K_TRANSFER_ENCODING : K_OTHER;
	default:
		return K_OTHER;
	}
}

/*
 * Framing conflicts are decided on the name, before llhttp reads the value:
 * it would also refuse some of them, later and with less precise reasons.
 */
static int
field_count(struct http1 *h)
{
	switch (h->kind) {
	case K_HOST:
		if (++h->nhost > 1)
			return fail(h, 400, "multiple Host");
		h->host_idx = h->nfields;
		break;
	case K_CONTENT_LENGTH:
		if (++h->ncl > 1)
			return fail(h, 400, "multiple Content-Length");
		break;
	case K_TRANSFER_ENCODING:
		if (http1_scan_minor(&h->scan) == 0)
			return fail(h, 400, "Transfer-Encoding on HTTP/1.0");
		if (++h->nte > 1)
			return fail(h, 400, "multiple Transfer-Encoding");
		break;
	default:
		return 0;
	}
	if (h->ncl != 0 && h->nte != 0)
		return fail(h, 400, "Content-Length with Transfer-Encoding");
	return 0;
}

static int
cb_field_complete(llhttp_t *ll)
{
	struct http1	*h = ll->data;
	struct fieldpos	*fp;

	if (h->phase == PH_TRAILER)
		return 0;
	if (!h->arena.in_span && fields_grow(h) == -1)
		return -1;
	fp = &h->pos[h->nfields];
	if (mem(h, arena_close(&h->arena, &fp->name)) == -1)
		return -1;
	h->fields[h->nfields].name_len = h->arena.len - 1 - fp->name;
	h->kind = field_kind(h->arena.buf + fp->name);
	return field_count(h);
}

static int
cb_value(llhttp_t *ll, const char *p, size_t n)
{
	struct http1	*h = ll->data;

	if (h->phase == PH_TRAILER)
		return 0;
	return mem(h, arena_span(&h->arena, &h->pos[h->nfields].value, p, n));
}

/* Per-field checks on the value, once it is whole and trimmed. */
static int
value_check(struct http1 *h, const char *v)
{
	switch (h->kind) {
	case K_TRANSFER_ENCODING:
		/* Only "chunked": any other coding, alone or in a list. */
		if (strcasecmp(v, "chunked") != 0)
			return fail(h, 400, "unsupported Transfer-Encoding");
		break;
	case K_EXPECT:
		/* RFC 9110 10.1.1: ignored in HTTP/1.0. */
		if (http1_scan_minor(&h->scan) == 0)
			break;
		if (strcasecmp(v, "100-continue") != 0)
			return fail(h, 417, "unsupported Expect");
		h->expect = 1;
		break;
	default:
		break;
	}
	return 0;
}

/* Strip the OWS around the value (llhttp keeps the trailing part). */
static int
cb_value_complete(llhttp_t *ll)
{
	struct http1	*h = ll->data;
	struct fieldpos	*fp;

	if (h->phase == PH_TRAILER)
		return 0;
	fp = &h->pos[h->nfields];
	if (mem(h, arena_close_trim(&h->arena, &fp->value)) == -1)
		return -1;
	h->fields[h->nfields].value_len = h->arena.len - 1 - fp->value;
	h->nfields++;
	return value_check(h, h->arena.buf + fp->value);
}

/* The semantic checks llhttp leaves to us, once all fields are known. */
static int
head_check(struct http1 *h)
{
	llhttp_t	*ll = &h->ll;

	if (http1_scan_minor(&h->scan) == 1 && h->nhost == 0)
		return fail(h, 400, "missing Host");
	if (h->nhost != 0 && !http1_host_valid(h->arena.buf +
	    h->pos[h->host_idx].value, h->fields[h->host_idx].value_len))
		return fail(h, 400, "invalid Host");
	if (h->nte != 0 && !(ll->flags & F_CHUNKED))
		return fail(h, 400, "unsupported Transfer-Encoding");
	if (ll->flags & F_CONTENT_LENGTH) {
		if (ll->content_length > INT64_MAX)
			return fail(h, 400, "Content-Length overflow");
		if (ll->content_length > h->lim.max_body)
			return fail(h, 413, "body too large");
	}
	return 0;
}

/* Pointers into the arena, now that it is done growing for this head. */
static void
head_build(struct http1 *h)
{
	struct http1_request	*r = &h->req;
	llhttp_t		*ll = &h->ll;
	unsigned		 i;

	for (i = 0; i < h->nfields; i++) {
		h->fields[i].name = h->arena.buf + h->pos[i].name;
		h->fields[i].value = h->arena.buf + h->pos[i].value;
	}
	r->method = h->arena.buf + h->method_off;
	r->target = h->arena.buf + h->target_off;
	r->path_len = strcspn(r->target, "?");
	r->major = http1_scan_major(&h->scan);
	r->minor = http1_scan_minor(&h->scan);
	r->fields = h->fields;
	r->nfields = h->nfields;
	r->host = NULL;
	r->host_len = 0;
	if (h->absolute) {
		/* RFC 9112 3.2.2: the authority replaces Host. */
		r->host = h->arena.buf + h->auth_off;
		r->host_len = h->auth_len;
	} else if (h->nhost != 0) {
		r->host = h->fields[h->host_idx].value;
		r->host_len = h->fields[h->host_idx].value_len;
	}
	r->chunked = (ll->flags & F_CHUNKED) != 0;
	r->content_length = -1;
	if (ll->flags & F_CONTENT_LENGTH)
		r->content_length = (int64_t)ll->content_length;
	r->keep_alive = llhttp_should_keep_alive(ll);
	r->is_head = strcmp(r->method, "HEAD") == 0;
	r->has_body = r->chunked || r->content_length > 0;
	/* A 100 (Continue) only makes sense when a body is to come. */
	r->expect_continue = h->expect && r->has_body;
	h->have_req = 1;
}

static int
cb_headers_complete(llhttp_t *ll)
{
	struct http1	*h = ll->data;
	int		 st;

	if (head_check(h) == -1)
		return -1;
	/*
	 * We never switch protocols: Upgrade is an ordinary (hop-by-hop)
	 * header to us.  Without this llhttp would stop after the message
	 * with HPE_PAUSED_UPGRADE and treat what follows as opaque.
	 */
	ll->upgrade = 0;
	head_build(h);
	if (h->cb.on_head != NULL && (st = h->cb.on_head(h->arg, &h->req)))
		return fail(h, cb_status(st), "request refused");
	return 0;
}

static int
cb_body(llhttp_t *ll, const char *p, size_t n)
{
	struct http1	*h = ll->data;
	int		 st;

	if (h->cb.on_body != NULL && (st = h->cb.on_body(h->arg, p, n)))
		return fail(h, cb_status(st), "body refused");
	return 0;
}

/* The running total is checked as each chunk is announced. */
static int
cb_chunk_header(llhttp_t *ll)
{
	struct http1	*h = ll->data;
	uint64_t	 size = ll->content_length;

	if (size > h->lim.max_body - h->body_total)
		return fail(h, 413, "body too large");
	h->body_total += size;
	if (size != 0)
		return 0;
	/* The last chunk: stop so the scanner sees the trailer lines. */
	h->trailer_next = 1;
	return HPE_PAUSED;
}

static int
cb_message_complete(llhttp_t *ll)
{
	struct http1	*h = ll->data;
	int		 st;

	h->msg_done = 1;
	if (h->cb.on_end != NULL && (st = h->cb.on_end(h->arg)) != 0)
		return fail(h, cb_status(st), "request end refused");
	return HPE_PAUSED;
}

/* --- Feeding. ----------------------------------------------------------- */

/* Why llhttp refused, when none of our checks said it first. */
static void
ll_fail(struct http1 *h, llhttp_errno_t e)
{
	const char	*why = llhttp_get_error_reason(&h->ll);
	int		 overflow = why != NULL && strstr(why, "overflow") != NULL;

	switch (e) {
	case HPE_INVALID_METHOD:
		fail(h, 501, "unknown method");
		break;
	case HPE_INVALID_URL:
		fail(h, 400, "invalid request target");
		break;
	case HPE_INVALID_VERSION:
		fail(h, 505, "unsupported HTTP version");
		break;
	case HPE_UNEXPECTED_CONTENT_LENGTH:
		fail(h, 400, h->nte != 0 ?
		    "Content-Length with Transfer-Encoding" :
		    "multiple Content-Length");
		break;
	case HPE_INVALID_CONTENT_LENGTH:
		fail(h, 400, overflow ? "Content-Length overflow" :
		    "invalid Content-Length");
		break;
	case HPE_INVALID_TRANSFER_ENCODING:
		fail(h, 400, "unsupported Transfer-Encoding");
		break;
	case HPE_INVALID_CHUNK_SIZE:
		fail(h, 400, overflow ? "chunk size overflow" :
		    "invalid chunk size");
		break;
	case HPE_STRICT:
		fail(h, 400, "malformed chunk");
		break;
	case HPE_CLOSED_CONNECTION:
		fail(h, 400, "data after Connection: close");
		break;
	case HPE_PAUSED_UPGRADE:
	case HPE_PAUSED_H2_UPGRADE:
		fail(h, 400, "protocol upgrade not supported");
		break;
	default:
		fail(h, 400, "malformed request");
		break;
	}
}

/* Run llhttp over n bytes; returns how many it used. */
static size_t
execute(struct http1 *h, const char *p, size_t n)
{
	llhttp_errno_t	 e;
	uintptr_t	 at;
	size_t		 used;

	e = llhttp_execute(&h->ll, p, n);
	if (e == HPE_OK)
		return n;
	at = (uintptr_t)llhttp_get_error_pos(&h->ll);
	used = (at >= (uintptr_t)p && at - (uintptr_t)p <= n) ?
	    at - (uintptr_t)p : 0;
	if (e == HPE_PAUSED && h->msg_done) {
		h->phase = PH_DONE;
		return used;
	}
	if (e == HPE_PAUSED && h->trailer_next) {
		h->trailer_next = 0;
		llhttp_resume(&h->ll);
		h->phase = PH_TRAILER;
		http1_scan_trailer(&h->scan);
		return used;
	}
	if (h->status == 0)
		ll_fail(h, e);
	h->phase = PH_ERROR;
	return used;
}

/* Head or trailer bytes: scanner first, then llhttp on the clean part. */
static size_t
feed_lines(struct http1 *h, const char *p, size_t n)
{
	size_t	 clean, used;
	int	 end;

	clean = http1_scan_run(&h->scan, p, n, &end);
	used = clean != 0 ? execute(h, p, clean) : 0;
	if (h->phase == PH_ERROR || h->phase == PH_DONE)
		return used;
	if (http1_scan_status(&h->scan) != 0) {
		fail(h, http1_scan_status(&h->scan),
		    http1_scan_reason(&h->scan));
		h->phase = PH_ERROR;
	} else if (end && h->phase == PH_HEAD)
		h->phase = PH_BODY;
	else if (end) {
		/* llhttp must have ended the message with the trailers. */
		fail(h, 500, "parser disagreement");
		h->phase = PH_ERROR;
	}
	return used;
}

enum http1_state
http1_feed(struct http1 *h, const char *p, size_t n, size_t *consumed)
{
	enum phase	 was;
	size_t		 off = 0, k;

	while (off < n && (h->phase == PH_HEAD || h->phase == PH_BODY ||
	    h->phase == PH_TRAILER)) {
		was = h->phase;
		if (h->phase == PH_BODY)
			k = execute(h, p + off, n - off);
		else
			k = feed_lines(h, p + off, n - off);
		off += k;
		if (k == 0 && h->phase == was) {
			/* Cannot happen; never spin on it. */
			fail(h, 500, "parser stalled");
			h->phase = PH_ERROR;
		}
	}
	*consumed = off;
	switch (h->phase) {
	case PH_DONE:
		return HTTP1_DONE;
	case PH_ERROR:
		return HTTP1_ERROR;
	default:
		return HTTP1_MORE;
	}
}

/* Requests are always framed, so EOF inside one is an error. */
enum http1_state
http1_finish(struct http1 *h)
{
	switch (h->phase) {
	case PH_ERROR:
		return HTTP1_ERROR;
	case PH_DONE:
		return HTTP1_MORE;
	case PH_HEAD:
		if (http1_scan_at_start(&h->scan))
			return HTTP1_MORE;
		fail(h, 400, "incomplete request head");
		break;
	default:
		fail(h, 400, "incomplete request body");
		break;
	}
	h->phase = PH_ERROR;
	return HTTP1_ERROR;
}

static void
msg_reset(struct http1 *h)
{
	h->phase = PH_HEAD;
	http1_scan_head(&h->scan);
	arena_reset(&h->arena);
	h->method_off = h->target_off = 0;
	h->auth_off = h->auth_len = 0;
	h->absolute = 0;
	h->nfields = 0;
	h->kind = K_OTHER;
	h->nhost = h->host_idx = h->ncl = h->nte = 0;
	h->expect = 0;
	h->body_total = 0;
	h->trailer_next = 0;
	h->msg_done = 0;
	memset(&h->req, 0, sizeof h->req);
	h->have_req = 0;
}

void
http1_next(struct http1 *h)
{
	if (h->phase != PH_DONE)
		return;
	llhttp_resume(&h->ll);
	msg_reset(h);
}

struct http1 *
http1_new(const struct http1_limits *lim, const struct http1_callbacks *cb,
    void *arg)
{
	struct http1	*h;

	if ((h = calloc(1, sizeof *h)) == NULL)
		return NULL;
	h->lim = lim != NULL ? *lim : default_limits;
	http1_scan_init(&h->scan, h->lim.max_request_line,
	    h->lim.max_header_bytes, h->lim.max_headers);
	if (cb != NULL)
		h->cb = *cb;
	h->arg = arg;
	llhttp_init(&h->ll, HTTP_REQUEST, &settings);
	h->ll.data = h;
	msg_reset(h);
	return h;
}

void
http1_free(struct http1 *h)
{
	if (h == NULL)
		return;
	arena_free(&h->arena);
	free(h->fields);
	free(h->pos);
	free(h);
}

int
http1_error_status(const struct http1 *h)
{
	return h->status;
}

const char *
http1_error_reason(const struct http1 *h)
{
	return h->reason != NULL ? h->reason : "";
}

int
http1_idle(const struct http1 *h)
{
	return h->phase == PH_DONE ||
	    (h->phase == PH_HEAD && http1_scan_at_start(&h->scan));
}

const struct http1_request *
http1_request(const struct http1 *h)
{
	return h->have_req ? &h->req : NULL;
}
