/*
 * wire.c -- the ingressd <-> replica wire codec (see wire.h and
 * docs/protocol.md).
 *
 * Pure: no I/O, no allocation.  Every multi-byte value goes through the
 * memcpy-based helpers below so the codec never makes an unaligned access.
 *
 * Decoders read a payload front to back and report the first problem they
 * meet; for a string that is its length prefix (E_SHORT), then its limit
 * (E_LIMIT), then its bytes (E_SHORT), then emptiness (E_EMPTY).  The Python
 * SDK follows the same order, and tests/vectors/frames.txt pins it down.
 */
#include <string.h>

#include "wire.h"

#define STR8_MAX	0xffu
#define STR16_MAX	0xffffu

static uint16_t
get16(const uint8_t *p)
{
	uint8_t b[2];

	memcpy(b, p, sizeof b);
	return (uint16_t)((b[0] << 8) | b[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	uint8_t b[4];

	memcpy(b, p, sizeof b);
	return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) |
	    ((uint32_t)b[2] << 8) | b[3];
}

static uint8_t *
put16(uint8_t *p, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	memcpy(p, b, sizeof b);
	return p + sizeof b;
}

static uint8_t *
put32(uint8_t *p, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16),
	    (uint8_t)(v >> 8), (uint8_t)v };

	memcpy(p, b, sizeof b);
	return p + sizeof b;
}

static uint8_t *
put_str(uint8_t *p, const struct wire_str *s, int wide)
{
	if (wide)
		p = put16(p, (uint16_t)s->len);
	else
		*p++ = (uint8_t)s->len;
	if (s->len != 0)
		memcpy(p, s->p, s->len);
	return p + s->len;
}

/* Names: the enum without its prefix; "ok" is how the vectors spell 0. */
const char *
wire_result_str(int r)
{
	static const char *const names[] = {
		"ok", "NEED_MORE", "E_TYPE", "E_FLAGS", "E_RESERVED",
		"E_TOO_LARGE", "E_STREAM", "E_SHORT", "E_TRAILING", "E_LIMIT",
		"E_EMPTY", "E_VALUE",
	};

	if (r < 0 || (size_t)r >= sizeof names / sizeof names[0])
		return "E_UNKNOWN";
	return names[r];
}

const char *
wire_type_str(int t)
{
	static const char *const names[] = {
		"?", "HELLO", "PING", "PONG", "REQUEST", "RESPONSE", "DATA",
		"END", "CANCEL", "ERROR", "GOAWAY", "WINDOW", "TRAILERS",
	};

	if (t < 1 || t > WIRE_TYPE_MAX)
		return "UNKNOWN";
	return names[t];
}

const char *
wire_code_str(uint32_t c)
{
	static const char *const names[] = {
		"NONE", "PROTOCOL", "INTERNAL", "REFUSED", "CANCEL", "TIMEOUT",
		"VERSION", "SHUTDOWN", "OVERLOAD",
	};

	if (c >= sizeof names / sizeof names[0])
		return "UNKNOWN";
	return names[c];
}

uint16_t
wire_version_agree(uint16_t theirs)
{
	if (theirs == 0)
		return 1;	/* does not decode; the lowest, to be safe */
	return theirs < WIRE_VERSION ? theirs : WIRE_VERSION;
}

uint16_t
wire_type_version(int t)
{
	if (t < 1 || t > WIRE_TYPE_MAX)
		return 0;
	return t == WIRE_TRAILERS ? WIRE_VERSION_TRAILERS : 1;
}

/* Frame header. */

void
wire_encode_header(uint8_t out[WIRE_HEADER_SIZE], uint32_t length,
    uint8_t type, uint8_t flags, uint32_t stream)
{
	uint8_t	*p = out;

	p = put32(p, length);
	*p++ = type;
	*p++ = flags;
	p = put16(p, 0);
	put32(p, stream);
}

/* Which types must (1), must not (0) or may (-1) carry a stream id. */
static int
type_stream_rule(uint8_t type)
{
	switch (type) {
	case WIRE_REQUEST:
	case WIRE_RESPONSE:
	case WIRE_DATA:
	case WIRE_END:
	case WIRE_CANCEL:
	case WIRE_TRAILERS:
		return 1;
	case WIRE_ERROR:
	case WIRE_WINDOW:
		return -1;
	default:
		return 0;
	}
}

/* The exact payload length a fixed-size type needs, or -1. */
static long
type_fixed_length(uint8_t type)
{
	switch (type) {
	case WIRE_PING:
	case WIRE_PONG:
		return 8;
	case WIRE_CANCEL:
	case WIRE_WINDOW:
		return 4;
	case WIRE_END:
		return 0;
	default:
		return -1;
	}
}

/*
 * Everything the 12 header bytes alone can tell, checked before waiting for
 * the payload so a bad peer is caught without buffering its frame.
 */
static int
check_header(const struct wire_frame *f, uint16_t reserved)
{
	long	fixed;
	int	rule;

	if (f->type < 1 || f->type > WIRE_TYPE_MAX)
		return WIRE_E_TYPE;
	if (f->flags & ~WIRE_FLAGS_KNOWN)
		return WIRE_E_FLAGS;
	if ((f->flags & WIRE_FLAG_END) && f->type != WIRE_REQUEST &&
	    f->type != WIRE_RESPONSE && f->type != WIRE_DATA)
		return WIRE_E_FLAGS;
	if (reserved != 0)
		return WIRE_E_RESERVED;
	if (f->length > WIRE_MAX_PAYLOAD)
		return WIRE_E_TOO_LARGE;
	rule = type_stream_rule(f->type);
	if ((rule == 1 && f->stream == 0) || (rule == 0 && f->stream != 0))
		return WIRE_E_STREAM;
	fixed = type_fixed_length(f->type);
	if (fixed >= 0 && f->length < (uint32_t)fixed)
		return WIRE_E_SHORT;
	if (fixed >= 0 && f->length > (uint32_t)fixed)
		return WIRE_E_TRAILING;
	if (f->type == WIRE_DATA && f->length == 0 &&
	    !(f->flags & WIRE_FLAG_END))
		return WIRE_E_EMPTY;
	return WIRE_OK;
}

int
wire_decode_frame(const uint8_t *buf, size_t len, struct wire_frame *f,
    size_t *need)
{
	int	r;

	*need = WIRE_HEADER_SIZE;
	if (len < WIRE_HEADER_SIZE)
		return WIRE_NEED_MORE;
	f->length = get32(buf);
	f->type = buf[4];
	f->flags = buf[5];
	f->stream = get32(buf + 8);
	f->payload = NULL;
	if ((r = check_header(f, get16(buf + 6))) != WIRE_OK)
		return r;
	*need = WIRE_HEADER_SIZE + (size_t)f->length;
	if (len < *need)
		return WIRE_NEED_MORE;
	f->payload = buf + WIRE_HEADER_SIZE;
	return WIRE_OK;
}

/* Payload reading: a cursor over one frame's payload. */

struct cur {
	const uint8_t	*p;
	size_t		 left;
};

static void
cur_init(struct cur *c, const struct wire_frame *f)
{
	c->p = f->payload;
	c->left = f->length;
}

static int
cur_u16(struct cur *c, uint16_t *v)
{
	if (c->left < 2)
		return WIRE_E_SHORT;
	*v = get16(c->p);
	c->p += 2;
	c->left -= 2;
	return WIRE_OK;
}

static int
cur_u32(struct cur *c, uint32_t *v)
{
	if (c->left < 4)
		return WIRE_E_SHORT;
	*v = get32(c->p);
	c->p += 4;
	c->left -= 4;
	return WIRE_OK;
}

/* A str8 (wide == 0) or str16; limit and emptiness as the field needs. */
static int
cur_str(struct cur *c, int wide, size_t limit, int nonempty,
    struct wire_str *s)
{
	uint16_t n16;
	size_t	 n;

	if (wide) {
		if (cur_u16(c, &n16) != WIRE_OK)
			return WIRE_E_SHORT;
		n = n16;
	} else {
		if (c->left < 1)
			return WIRE_E_SHORT;
		n = *c->p++;
		c->left--;
	}
	if (n > limit)
		return WIRE_E_LIMIT;
	if (c->left < n)
		return WIRE_E_SHORT;
	if (nonempty && n == 0)
		return WIRE_E_EMPTY;
	s->p = (const char *)c->p;
	s->len = n;
	c->p += n;
	c->left -= n;
	return WIRE_OK;
}

static int
cur_done(const struct cur *c)
{
	return c->left == 0 ? WIRE_OK : WIRE_E_TRAILING;
}

/* nfields x (str8 name, str16 value): REQUEST, RESPONSE and TRAILERS. */
static int
cur_fields(struct cur *c, struct wire_field *fields, unsigned cap,
    struct wire_field **outp, unsigned *noutp)
{
	uint16_t n;
	unsigned i;
	int	 r;

	if ((r = cur_u16(c, &n)) != WIRE_OK)
		return r;
	if (n > WIRE_MAX_FIELDS || n > cap)
		return WIRE_E_LIMIT;
	for (i = 0; i < n; i++) {
		if ((r = cur_str(c, 0, WIRE_MAX_NAME, 1,
		    &fields[i].name)) != WIRE_OK)
			return r;
		if ((r = cur_str(c, 1, STR16_MAX, 0,
		    &fields[i].value)) != WIRE_OK)
			return r;
	}
	*outp = fields;
	*noutp = n;
	return WIRE_OK;
}

int
wire_decode_hello(const struct wire_frame *f, struct wire_hello *h)
{
	struct cur c;
	uint16_t   reserved;
	int	   r;

	cur_init(&c, f);
	if ((r = cur_u16(&c, &h->version)) != WIRE_OK)
		return r;
	if (h->version == 0)
		return WIRE_E_VALUE;
	if ((r = cur_u16(&c, &reserved)) != WIRE_OK)
		return r;
	if (reserved != 0)
		return WIRE_E_RESERVED;
	if ((r = cur_u32(&c, &h->max_concurrency)) != WIRE_OK)
		return r;
	if ((r = cur_str(&c, 0, WIRE_MAX_NAME, 0, &h->deployment)) != WIRE_OK)
		return r;
	if ((r = cur_str(&c, 0, WIRE_MAX_NAME, 0, &h->replica_id)) != WIRE_OK)
		return r;
	return cur_done(&c);
}

int
wire_decode_ping(const struct wire_frame *f, uint8_t opaque[8])
{
	if (f->length < 8)
		return WIRE_E_SHORT;
	if (f->length > 8)
		return WIRE_E_TRAILING;
	memcpy(opaque, f->payload, 8);
	return WIRE_OK;
}

int
wire_decode_request(const struct wire_frame *f, struct wire_request *req,
    struct wire_field *fields, unsigned cap)
{
	struct cur c;
	int	   r;

	cur_init(&c, f);
	if ((r = cur_str(&c, 0, STR8_MAX, 1, &req->method)) != WIRE_OK)
		return r;
	if ((r = cur_str(&c, 1, STR16_MAX, 1, &req->target)) != WIRE_OK)
		return r;
	if ((r = cur_str(&c, 0, WIRE_MAX_NAME, 0, &req->deployment)) != WIRE_OK)
		return r;
	if ((r = cur_str(&c, 0, STR8_MAX, 0, &req->request_id)) != WIRE_OK)
		return r;
	if ((r = cur_u32(&c, &req->deadline_ms)) != WIRE_OK)
		return r;
	if ((r = cur_fields(&c, fields, cap, &req->fields,
	    &req->nfields)) != WIRE_OK)
		return r;
	return cur_done(&c);
}

int
wire_decode_response(const struct wire_frame *f, struct wire_response *resp,
    struct wire_field *fields, unsigned cap)
{
	struct cur c;
	int	   r;

	cur_init(&c, f);
	if ((r = cur_u16(&c, &resp->status)) != WIRE_OK)
		return r;
	if (resp->status < 100 || resp->status > 999)
		return WIRE_E_VALUE;
	if ((r = cur_fields(&c, fields, cap, &resp->fields,
	    &resp->nfields)) != WIRE_OK)
		return r;
	return cur_done(&c);
}

int
wire_decode_trailers(const struct wire_frame *f, struct wire_trailers *t,
    struct wire_field *fields, unsigned cap)
{
	struct cur c;
	int	   r;

	cur_init(&c, f);
	if ((r = cur_fields(&c, fields, cap, &t->fields,
	    &t->nfields)) != WIRE_OK)
		return r;
	return cur_done(&c);
}

int
wire_decode_error(const struct wire_frame *f, struct wire_error *e)
{
	struct cur c;
	int	   r;

	cur_init(&c, f);
	if ((r = cur_u32(&c, &e->code)) != WIRE_OK)
		return r;
	if ((r = cur_str(&c, 1, WIRE_MAX_TEXT, 0, &e->text)) != WIRE_OK)
		return r;
	return cur_done(&c);
}

int
wire_decode_cancel(const struct wire_frame *f, uint32_t *code)
{
	struct cur c;
	int	   r;

	cur_init(&c, f);
	if ((r = cur_u32(&c, code)) != WIRE_OK)
		return r;
	return cur_done(&c);
}

int
wire_decode_goaway(const struct wire_frame *f, struct wire_goaway *g)
{
	struct cur c;
	int	   r;

	cur_init(&c, f);
	if ((r = cur_u32(&c, &g->last_stream)) != WIRE_OK)
		return r;
	if ((r = cur_u32(&c, &g->code)) != WIRE_OK)
		return r;
	if ((r = cur_str(&c, 1, WIRE_MAX_TEXT, 0, &g->text)) != WIRE_OK)
		return r;
	return cur_done(&c);
}

int
wire_decode_window(const struct wire_frame *f, uint32_t *increment)
{
	struct cur c;
	int	   r;

	cur_init(&c, f);
	if ((r = cur_u32(&c, increment)) != WIRE_OK)
		return r;
	if (*increment == 0)
		return WIRE_E_VALUE;
	return cur_done(&c);
}

/*
 * Encoders.  Each *_size() returns 0 for anything the decoder would refuse,
 * so an encoder only has to ask its size function whether the input is
 * valid; the payload bound is checked once here.
 */

static size_t
frame_size(size_t payload)
{
	if (payload > WIRE_MAX_PAYLOAD)
		return 0;
	return WIRE_HEADER_SIZE + payload;
}

static int
str_ok(const struct wire_str *s, size_t limit, int nonempty)
{
	if (s->len > limit || (nonempty && s->len == 0))
		return 0;
	return s->len == 0 || s->p != NULL;
}

/* The payload bytes of nfields fields, or 0 when one is invalid. */
static size_t
fields_size(const struct wire_field *fields, unsigned n)
{
	size_t	 size = 2;
	unsigned i;

	if (n > WIRE_MAX_FIELDS || (n > 0 && fields == NULL))
		return 0;
	for (i = 0; i < n; i++) {
		if (!str_ok(&fields[i].name, WIRE_MAX_NAME, 1) ||
		    !str_ok(&fields[i].value, STR16_MAX, 0))
			return 0;
		size += 1 + fields[i].name.len + 2 + fields[i].value.len;
	}
	return size;
}

static uint8_t *
put_fields(uint8_t *p, const struct wire_field *fields, unsigned n)
{
	unsigned i;

	p = put16(p, (uint16_t)n);
	for (i = 0; i < n; i++) {
		p = put_str(p, &fields[i].name, 0);
		p = put_str(p, &fields[i].value, 1);
	}
	return p;
}

size_t
wire_hello_size(const struct wire_hello *h)
{
	if (h->version == 0 || !str_ok(&h->deployment, WIRE_MAX_NAME, 0) ||
	    !str_ok(&h->replica_id, WIRE_MAX_NAME, 0))
		return 0;
	return frame_size(8 + 1 + h->deployment.len + 1 + h->replica_id.len);
}

size_t
wire_encode_hello(uint8_t *out, const struct wire_hello *h)
{
	size_t	 size;
	uint8_t	*p;

	if ((size = wire_hello_size(h)) == 0)
		return 0;
	wire_encode_header(out, (uint32_t)(size - WIRE_HEADER_SIZE),
	    WIRE_HELLO, 0, 0);
	p = put16(out + WIRE_HEADER_SIZE, h->version);
	p = put16(p, 0);
	p = put32(p, h->max_concurrency);
	p = put_str(p, &h->deployment, 0);
	put_str(p, &h->replica_id, 0);
	return size;
}

size_t
wire_encode_ping(uint8_t out[WIRE_HEADER_SIZE + 8], uint8_t type,
    const uint8_t opaque[8])
{
	if (type != WIRE_PING && type != WIRE_PONG)
		return 0;
	wire_encode_header(out, 8, type, 0, 0);
	memcpy(out + WIRE_HEADER_SIZE, opaque, 8);
	return WIRE_HEADER_SIZE + 8;
}

size_t
wire_request_size(const struct wire_request *r)
{
	size_t	fs;

	if (!str_ok(&r->method, STR8_MAX, 1) ||
	    !str_ok(&r->target, STR16_MAX, 1) ||
	    !str_ok(&r->deployment, WIRE_MAX_NAME, 0) ||
	    !str_ok(&r->request_id, STR8_MAX, 0))
		return 0;
	if ((fs = fields_size(r->fields, r->nfields)) == 0)
		return 0;
	return frame_size(1 + r->method.len + 2 + r->target.len +
	    1 + r->deployment.len + 1 + r->request_id.len + 4 + fs);
}

size_t
wire_encode_request(uint8_t *out, uint32_t stream, uint8_t flags,
    const struct wire_request *r)
{
	size_t	 size;
	uint8_t	*p;

	if (stream == 0 || (flags & ~WIRE_FLAGS_KNOWN))
		return 0;
	if ((size = wire_request_size(r)) == 0)
		return 0;
	wire_encode_header(out, (uint32_t)(size - WIRE_HEADER_SIZE),
	    WIRE_REQUEST, flags, stream);
	p = put_str(out + WIRE_HEADER_SIZE, &r->method, 0);
	p = put_str(p, &r->target, 1);
	p = put_str(p, &r->deployment, 0);
	p = put_str(p, &r->request_id, 0);
	p = put32(p, r->deadline_ms);
	put_fields(p, r->fields, r->nfields);
	return size;
}

size_t
wire_response_size(const struct wire_response *r)
{
	size_t	fs;

	if (r->status < 100 || r->status > 999)
		return 0;
	if ((fs = fields_size(r->fields, r->nfields)) == 0)
		return 0;
	return frame_size(2 + fs);
}

size_t
wire_encode_response(uint8_t *out, uint32_t stream, uint8_t flags,
    const struct wire_response *r)
{
	size_t	 size;
	uint8_t	*p;

	if (stream == 0 || (flags & ~WIRE_FLAGS_KNOWN))
		return 0;
	if ((size = wire_response_size(r)) == 0)
		return 0;
	wire_encode_header(out, (uint32_t)(size - WIRE_HEADER_SIZE),
	    WIRE_RESPONSE, flags, stream);
	p = put16(out + WIRE_HEADER_SIZE, r->status);
	put_fields(p, r->fields, r->nfields);
	return size;
}

size_t
wire_trailers_size(const struct wire_trailers *t)
{
	size_t	fs;

	if ((fs = fields_size(t->fields, t->nfields)) == 0)
		return 0;
	return frame_size(fs);
}

size_t
wire_encode_trailers(uint8_t *out, uint32_t stream,
    const struct wire_trailers *t)
{
	size_t	size;

	if (stream == 0 || (size = wire_trailers_size(t)) == 0)
		return 0;
	wire_encode_header(out, (uint32_t)(size - WIRE_HEADER_SIZE),
	    WIRE_TRAILERS, 0, stream);
	put_fields(out + WIRE_HEADER_SIZE, t->fields, t->nfields);
	return size;
}

size_t
wire_error_size(const struct wire_error *e)
{
	if (!str_ok(&e->text, WIRE_MAX_TEXT, 0))
		return 0;
	return frame_size(4 + 2 + e->text.len);
}

size_t
wire_encode_error(uint8_t *out, uint32_t stream, const struct wire_error *e)
{
	size_t	 size;
	uint8_t	*p;

	if ((size = wire_error_size(e)) == 0)
		return 0;
	wire_encode_header(out, (uint32_t)(size - WIRE_HEADER_SIZE),
	    WIRE_ERROR, 0, stream);
	p = put32(out + WIRE_HEADER_SIZE, e->code);
	put_str(p, &e->text, 1);
	return size;
}

size_t
wire_encode_cancel(uint8_t out[WIRE_HEADER_SIZE + 4], uint32_t stream,
    uint32_t code)
{
	if (stream == 0)
		return 0;
	wire_encode_header(out, 4, WIRE_CANCEL, 0, stream);
	put32(out + WIRE_HEADER_SIZE, code);
	return WIRE_HEADER_SIZE + 4;
}

size_t
wire_goaway_size(const struct wire_goaway *g)
{
	if (!str_ok(&g->text, WIRE_MAX_TEXT, 0))
		return 0;
	return frame_size(4 + 4 + 2 + g->text.len);
}

size_t
wire_encode_goaway(uint8_t *out, const struct wire_goaway *g)
{
	size_t	 size;
	uint8_t	*p;

	if ((size = wire_goaway_size(g)) == 0)
		return 0;
	wire_encode_header(out, (uint32_t)(size - WIRE_HEADER_SIZE),
	    WIRE_GOAWAY, 0, 0);
	p = put32(out + WIRE_HEADER_SIZE, g->last_stream);
	p = put32(p, g->code);
	put_str(p, &g->text, 1);
	return size;
}

size_t
wire_encode_window(uint8_t out[WIRE_HEADER_SIZE + 4], uint32_t stream,
    uint32_t increment)
{
	if (increment == 0)
		return 0;
	wire_encode_header(out, 4, WIRE_WINDOW, 0, stream);
	put32(out + WIRE_HEADER_SIZE, increment);
	return WIRE_HEADER_SIZE + 4;
}
