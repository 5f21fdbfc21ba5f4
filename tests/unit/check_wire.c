/*
 * check_wire.c -- unit tests for the wire codec: round trips of every frame
 * type, every rejection with its exact result, truncation at every byte,
 * and the shared vectors in tests/vectors/frames.txt.
 */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define BIG	(WIRE_HEADER_SIZE + WIRE_MAX_PAYLOAD + 16)

static uint8_t	buf[BIG];

static struct wire_str
S(const char *s)
{
	struct wire_str ws = { s, strlen(s) };

	return ws;
}

static int
streq(struct wire_str ws, const char *s)
{
	return ws.len == strlen(s) && memcmp(ws.p, s, ws.len) == 0;
}

/* Decode a whole frame and insist it used exactly n bytes. */
static void
decode_whole(const uint8_t *p, size_t n, struct wire_frame *f)
{
	size_t	need;
	int	r;

	r = wire_decode_frame(p, n, f, &need);
	ck_assert_str_eq(wire_result_str(r), "ok");
	ck_assert_uint_eq(need, n);
	ck_assert_uint_eq(WIRE_HEADER_SIZE + f->length, n);
	ck_assert_ptr_eq(f->payload, p + WIRE_HEADER_SIZE);
}

/* Decode a payload by its frame type, as a receiver would. */
static int
decode_payload(const struct wire_frame *f)
{
	static struct wire_field fields[WIRE_MAX_FIELDS];
	struct wire_hello	 h;
	struct wire_request	 rq;
	struct wire_response	 rs;
	struct wire_error	 e;
	struct wire_goaway	 g;
	struct wire_trailers	 t;
	uint8_t			 opaque[8];
	uint32_t		 u;

	switch (f->type) {
	case WIRE_HELLO:
		return wire_decode_hello(f, &h);
	case WIRE_PING:
	case WIRE_PONG:
		return wire_decode_ping(f, opaque);
	case WIRE_REQUEST:
		return wire_decode_request(f, &rq, fields, WIRE_MAX_FIELDS);
	case WIRE_RESPONSE:
		return wire_decode_response(f, &rs, fields, WIRE_MAX_FIELDS);
	case WIRE_CANCEL:
		return wire_decode_cancel(f, &u);
	case WIRE_ERROR:
		return wire_decode_error(f, &e);
	case WIRE_GOAWAY:
		return wire_decode_goaway(f, &g);
	case WIRE_WINDOW:
		return wire_decode_window(f, &u);
	case WIRE_TRAILERS:
		return wire_decode_trailers(f, &t, fields, WIRE_MAX_FIELDS);
	default:
		return WIRE_OK;		/* DATA and END: the header says it all */
	}
}

/* Every proper prefix of a valid frame is NEED_MORE, with the right need. */
static void
check_prefixes(const uint8_t *p, size_t n)
{
	struct wire_frame f;
	size_t		  i, need;

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(wire_decode_frame(p, i, &f, &need),
		    WIRE_NEED_MORE);
		ck_assert_uint_eq(need, i < WIRE_HEADER_SIZE ?
		    WIRE_HEADER_SIZE : n);
	}
}

START_TEST(test_hello_roundtrip)
{
	struct wire_hello  in = { 1, 1024, S("echo"), S("replica-7") }, out;
	struct wire_frame  f;
	size_t		   n;

	n = wire_encode_hello(buf, &in);
	ck_assert_uint_eq(n, wire_hello_size(&in));
	ck_assert_uint_eq(n, WIRE_HEADER_SIZE + 8 + 5 + 10);
	decode_whole(buf, n, &f);
	ck_assert_int_eq(f.type, WIRE_HELLO);
	ck_assert_uint_eq(f.stream, 0);
	ck_assert_int_eq(wire_decode_hello(&f, &out), WIRE_OK);
	ck_assert_uint_eq(out.version, 1);
	ck_assert_uint_eq(out.max_concurrency, 1024);
	ck_assert(streq(out.deployment, "echo"));
	ck_assert(streq(out.replica_id, "replica-7"));
	check_prefixes(buf, n);
}
END_TEST

START_TEST(test_ping_pong_roundtrip)
{
	const uint8_t	  opaque[8] = { 0, 1, 2, 3, 0xfc, 0xfd, 0xfe, 0xff };
	uint8_t		  got[8];
	struct wire_frame f;
	int		  type;
	size_t		  n;

	for (type = WIRE_PING; type <= WIRE_PONG; type++) {
		n = wire_encode_ping(buf, (uint8_t)type, opaque);
		ck_assert_uint_eq(n, WIRE_HEADER_SIZE + 8);
		decode_whole(buf, n, &f);
		ck_assert_int_eq(f.type, type);
		ck_assert_int_eq(wire_decode_ping(&f, got), WIRE_OK);
		ck_assert_mem_eq(got, opaque, 8);
		check_prefixes(buf, n);
	}
	ck_assert_uint_eq(wire_encode_ping(buf, WIRE_DATA, opaque), 0);
}
END_TEST

START_TEST(test_request_roundtrip)
{
	struct wire_field  in_f[3] = {
		{ S("Host"), S("example.com") },
		{ S("X-Empty"), S("") },
		{ S("Accept"), S("*/*") },
	}, out_f[3];
	struct wire_request in = { S("POST"), S("/a/b?c=d"), S("models"),
	    S("rid-1"), 1500, in_f, 3 }, out;
	struct wire_frame  f;
	size_t		   n;

	n = wire_encode_request(buf, 77, WIRE_FLAG_END, &in);
	ck_assert_uint_ne(n, 0);
	ck_assert_uint_eq(n, wire_request_size(&in));
	decode_whole(buf, n, &f);
	ck_assert_int_eq(f.type, WIRE_REQUEST);
	ck_assert_uint_eq(f.flags, WIRE_FLAG_END);
	ck_assert_uint_eq(f.stream, 77);
	ck_assert_int_eq(wire_decode_request(&f, &out, out_f, 3), WIRE_OK);
	ck_assert(streq(out.method, "POST"));
	ck_assert(streq(out.target, "/a/b?c=d"));
	ck_assert(streq(out.deployment, "models"));
	ck_assert(streq(out.request_id, "rid-1"));
	ck_assert_uint_eq(out.deadline_ms, 1500);
	ck_assert_uint_eq(out.nfields, 3);
	ck_assert_ptr_eq(out.fields, out_f);
	ck_assert(streq(out.fields[0].name, "Host"));
	ck_assert(streq(out.fields[0].value, "example.com"));
	ck_assert(streq(out.fields[1].name, "X-Empty"));
	ck_assert_uint_eq(out.fields[1].value.len, 0);
	ck_assert(streq(out.fields[2].value, "*/*"));
	check_prefixes(buf, n);

	/* One field too many for the caller's array. */
	ck_assert_int_eq(wire_decode_request(&f, &out, out_f, 2),
	    WIRE_E_LIMIT);
}
END_TEST

/* The decoded strings are views into the frame, not copies. */
START_TEST(test_request_points_into_buffer)
{
	struct wire_field   in_f[1] = { { S("k"), S("value") } }, out_f[1];
	struct wire_request in = { S("GET"), S("/x"), S("d"), S("r"), 0,
	    in_f, 1 }, out;
	struct wire_frame   f;
	const uint8_t	   *lo, *hi;
	size_t		    n;

	n = wire_encode_request(buf, 1, 0, &in);
	decode_whole(buf, n, &f);
	ck_assert_int_eq(wire_decode_request(&f, &out, out_f, 1), WIRE_OK);
	lo = buf + WIRE_HEADER_SIZE;
	hi = buf + n;
	ck_assert((const uint8_t *)out.method.p == lo + 1);
	ck_assert((const uint8_t *)out.target.p == lo + 1 + 3 + 2);
	ck_assert((const uint8_t *)out.fields[0].name.p > lo);
	ck_assert((const uint8_t *)out.fields[0].value.p + 5 == hi);
	buf[WIRE_HEADER_SIZE + 1] = 'P';	/* the view sees the change */
	ck_assert_int_eq(out.method.p[0], 'P');
}
END_TEST

START_TEST(test_response_roundtrip)
{
	struct wire_field    in_f[2] = {
		{ S("content-type"), S("text/plain") },
		{ S("content-length"), S("12") },
	}, out_f[WIRE_MAX_FIELDS];
	struct wire_response in = { 200, in_f, 2 }, out;
	struct wire_frame    f;
	size_t		     n;

	n = wire_encode_response(buf, 3, 0, &in);
	ck_assert_uint_eq(n, wire_response_size(&in));
	decode_whole(buf, n, &f);
	ck_assert_int_eq(f.type, WIRE_RESPONSE);
	ck_assert_uint_eq(f.flags, 0);
	ck_assert_int_eq(wire_decode_response(&f, &out, out_f,
	    WIRE_MAX_FIELDS), WIRE_OK);
	ck_assert_uint_eq(out.status, 200);
	ck_assert_uint_eq(out.nfields, 2);
	ck_assert(streq(out.fields[1].name, "content-length"));
	ck_assert(streq(out.fields[1].value, "12"));
	check_prefixes(buf, n);
	ck_assert_int_eq(wire_decode_response(&f, &out, out_f, 1),
	    WIRE_E_LIMIT);
}
END_TEST

/* v2: TRAILERS is the fields of a RESPONSE without the status. */
START_TEST(test_trailers_roundtrip)
{
	struct wire_field    in_f[2] = {
		{ S("grpc-status"), S("3") },
		{ S("grpc-message"), S("bad%20argument") },
	}, out_f[WIRE_MAX_FIELDS];
	struct wire_trailers in = { in_f, 2 }, out;
	struct wire_frame    f;
	size_t		     n;

	n = wire_encode_trailers(buf, 5, &in);
	ck_assert_uint_eq(n, wire_trailers_size(&in));
	ck_assert_uint_eq(n, WIRE_HEADER_SIZE + 2 + 1 + 11 + 2 + 1 + 1 + 12 +
	    2 + 14);
	decode_whole(buf, n, &f);
	ck_assert_int_eq(f.type, WIRE_TRAILERS);
	ck_assert_uint_eq(f.flags, 0);
	ck_assert_uint_eq(f.stream, 5);
	ck_assert_int_eq(wire_decode_trailers(&f, &out, out_f,
	    WIRE_MAX_FIELDS), WIRE_OK);
	ck_assert_uint_eq(out.nfields, 2);
	ck_assert(streq(out.fields[0].name, "grpc-status"));
	ck_assert(streq(out.fields[0].value, "3"));
	ck_assert(streq(out.fields[1].value, "bad%20argument"));
	check_prefixes(buf, n);
	ck_assert_int_eq(wire_decode_trailers(&f, &out, out_f, 1),
	    WIRE_E_LIMIT);
	/* No stream, or a field the decoder would refuse: nothing encoded. */
	ck_assert_uint_eq(wire_encode_trailers(buf, 0, &in), 0);
	in_f[0].name.len = 0;
	ck_assert_uint_eq(wire_encode_trailers(buf, 5, &in), 0);
	ck_assert_str_eq(wire_type_str(WIRE_TRAILERS), "TRAILERS");
}
END_TEST

/*
 * HELLO negotiation: each side speaks min(ours, theirs); TRAILERS exists
 * from v2 on, so a v1 peer (proxy or replica) never gets one.
 */
START_TEST(test_hello_negotiation)
{
	struct wire_hello in = { WIRE_VERSION, 0, S(""), S("ingressd") }, out;
	struct wire_frame f;
	size_t		  n;

	ck_assert_int_eq(WIRE_VERSION, 2);
	n = wire_encode_hello(buf, &in);
	decode_whole(buf, n, &f);
	ck_assert_int_eq(wire_decode_hello(&f, &out), WIRE_OK);
	ck_assert_uint_eq(out.version, 2);
	ck_assert_uint_eq(wire_version_agree(1), 1);
	ck_assert_uint_eq(wire_version_agree(2), 2);
	ck_assert_uint_eq(wire_version_agree(7), WIRE_VERSION);
	ck_assert_uint_eq(wire_version_agree(0), 1);
	ck_assert_uint_eq(wire_type_version(WIRE_TRAILERS), 2);
	ck_assert_uint_eq(wire_type_version(WIRE_HELLO), 1);
	ck_assert_uint_eq(wire_type_version(WIRE_WINDOW), 1);
	ck_assert_uint_eq(wire_type_version(WIRE_TRAILERS + 1), 0);
	ck_assert(wire_type_version(WIRE_TRAILERS) > wire_version_agree(1));
	ck_assert(wire_type_version(WIRE_TRAILERS) <= wire_version_agree(2));
}
END_TEST

START_TEST(test_data_end_roundtrip)
{
	struct wire_frame f;

	wire_encode_header(buf, 5, WIRE_DATA, WIRE_FLAG_END, 9);
	memcpy(buf + WIRE_HEADER_SIZE, "hello", 5);
	decode_whole(buf, 17, &f);
	ck_assert_int_eq(f.type, WIRE_DATA);
	ck_assert_uint_eq(f.flags, WIRE_FLAG_END);
	ck_assert_mem_eq(f.payload, "hello", 5);
	check_prefixes(buf, 17);

	wire_encode_header(buf, 0, WIRE_END, 0, 9);
	decode_whole(buf, WIRE_HEADER_SIZE, &f);
	ck_assert_int_eq(f.type, WIRE_END);
	check_prefixes(buf, WIRE_HEADER_SIZE);

	/* A maximal DATA frame is fine; one byte more is not. */
	wire_encode_header(buf, WIRE_MAX_PAYLOAD, WIRE_DATA, 0, 1);
	memset(buf + WIRE_HEADER_SIZE, 'x', WIRE_MAX_PAYLOAD);
	decode_whole(buf, WIRE_HEADER_SIZE + WIRE_MAX_PAYLOAD, &f);
}
END_TEST

START_TEST(test_cancel_error_goaway_window_roundtrip)
{
	struct wire_error  e = { WIRE_CODE_INTERNAL, S("boom") }, eo;
	struct wire_goaway g = { 41, WIRE_CODE_SHUTDOWN, S("bye") }, go;
	struct wire_frame  f;
	uint32_t	   u;
	size_t		   n;

	n = wire_encode_cancel(buf, 5, WIRE_CODE_CANCEL);
	decode_whole(buf, n, &f);
	ck_assert_int_eq(f.type, WIRE_CANCEL);
	ck_assert_int_eq(wire_decode_cancel(&f, &u), WIRE_OK);
	ck_assert_uint_eq(u, WIRE_CODE_CANCEL);
	check_prefixes(buf, n);

	n = wire_encode_error(buf, 5, &e);
	ck_assert_uint_eq(n, wire_error_size(&e));
	decode_whole(buf, n, &f);
	ck_assert_uint_eq(f.stream, 5);
	ck_assert_int_eq(wire_decode_error(&f, &eo), WIRE_OK);
	ck_assert_uint_eq(eo.code, WIRE_CODE_INTERNAL);
	ck_assert(streq(eo.text, "boom"));
	check_prefixes(buf, n);
	n = wire_encode_error(buf, 0, &e);
	decode_whole(buf, n, &f);
	ck_assert_uint_eq(f.stream, 0);

	n = wire_encode_goaway(buf, &g);
	ck_assert_uint_eq(n, wire_goaway_size(&g));
	decode_whole(buf, n, &f);
	ck_assert_int_eq(wire_decode_goaway(&f, &go), WIRE_OK);
	ck_assert_uint_eq(go.last_stream, 41);
	ck_assert_uint_eq(go.code, WIRE_CODE_SHUTDOWN);
	ck_assert(streq(go.text, "bye"));
	check_prefixes(buf, n);

	n = wire_encode_window(buf, 0, 65536);
	decode_whole(buf, n, &f);
	ck_assert_int_eq(wire_decode_window(&f, &u), WIRE_OK);
	ck_assert_uint_eq(u, 65536);
	n = wire_encode_window(buf, 3, 1);
	decode_whole(buf, n, &f);
	ck_assert_uint_eq(f.stream, 3);
	check_prefixes(buf, n);
}
END_TEST

/* A header with the given fields and length, payload zeroed. */
static int
header_result(uint32_t length, uint8_t type, uint8_t flags,
    uint16_t reserved, uint32_t stream)
{
	struct wire_frame f;
	size_t		  need;

	wire_encode_header(buf, length, type, flags, stream);
	buf[6] = (uint8_t)(reserved >> 8);
	buf[7] = (uint8_t)reserved;
	memset(buf + WIRE_HEADER_SIZE, 0, length <= 64 ? length : 64);
	return wire_decode_frame(buf, WIRE_HEADER_SIZE +
	    (length <= 64 ? length : 0), &f, &need);
}

START_TEST(test_header_rejections)
{
	int t;

	ck_assert_int_eq(header_result(0, 0, 0, 0, 0), WIRE_E_TYPE);
	ck_assert_int_eq(header_result(0, WIRE_TYPE_MAX + 1, 0, 0, 1),
	    WIRE_E_TYPE);
	ck_assert_int_eq(header_result(1, WIRE_DATA, 0x02, 0, 1),
	    WIRE_E_FLAGS);
	ck_assert_int_eq(header_result(1, WIRE_DATA, 0x80, 0, 1),
	    WIRE_E_FLAGS);
	for (t = 1; t <= WIRE_TYPE_MAX; t++) {
		if (t == WIRE_REQUEST || t == WIRE_RESPONSE || t == WIRE_DATA)
			continue;
		ck_assert_int_eq(header_result(0, (uint8_t)t, WIRE_FLAG_END,
		    0, 1), WIRE_E_FLAGS);
	}
	ck_assert_int_eq(header_result(1, WIRE_DATA, 0, 1, 1),
	    WIRE_E_RESERVED);
	ck_assert_int_eq(header_result(1, WIRE_DATA, 0, 0x100, 1),
	    WIRE_E_RESERVED);

	/* TOO_LARGE as soon as the header is in: no payload given. */
	ck_assert_int_eq(header_result(WIRE_MAX_PAYLOAD + 1, WIRE_DATA, 0, 0,
	    1), WIRE_E_TOO_LARGE);
	ck_assert_int_eq(header_result(0xffffffffu, WIRE_HELLO, 0, 0, 0),
	    WIRE_E_TOO_LARGE);
	ck_assert_int_eq(header_result(WIRE_MAX_PAYLOAD, WIRE_DATA, 0, 0, 1),
	    WIRE_NEED_MORE);

	ck_assert_int_eq(header_result(0, WIRE_REQUEST, 0, 0, 0),
	    WIRE_E_STREAM);
	ck_assert_int_eq(header_result(0, WIRE_RESPONSE, 0, 0, 0),
	    WIRE_E_STREAM);
	ck_assert_int_eq(header_result(1, WIRE_DATA, 0, 0, 0), WIRE_E_STREAM);
	ck_assert_int_eq(header_result(0, WIRE_END, 0, 0, 0), WIRE_E_STREAM);
	ck_assert_int_eq(header_result(4, WIRE_CANCEL, 0, 0, 0),
	    WIRE_E_STREAM);
	ck_assert_int_eq(header_result(0, WIRE_HELLO, 0, 0, 1), WIRE_E_STREAM);
	ck_assert_int_eq(header_result(8, WIRE_PING, 0, 0, 1), WIRE_E_STREAM);
	ck_assert_int_eq(header_result(8, WIRE_PONG, 0, 0, 1), WIRE_E_STREAM);
	ck_assert_int_eq(header_result(10, WIRE_GOAWAY, 0, 0, 1),
	    WIRE_E_STREAM);
	/* ERROR and WINDOW take either. */
	ck_assert_int_eq(header_result(6, WIRE_ERROR, 0, 0, 0), WIRE_OK);
	ck_assert_int_eq(header_result(6, WIRE_ERROR, 0, 0, 9), WIRE_OK);
	ck_assert_int_eq(header_result(4, WIRE_WINDOW, 0, 0, 0), WIRE_OK);
	ck_assert_int_eq(header_result(4, WIRE_WINDOW, 0, 0, 9), WIRE_OK);

	ck_assert_int_eq(header_result(7, WIRE_PING, 0, 0, 0), WIRE_E_SHORT);
	ck_assert_int_eq(header_result(9, WIRE_PONG, 0, 0, 0),
	    WIRE_E_TRAILING);
	ck_assert_int_eq(header_result(3, WIRE_CANCEL, 0, 0, 1), WIRE_E_SHORT);
	ck_assert_int_eq(header_result(5, WIRE_WINDOW, 0, 0, 1),
	    WIRE_E_TRAILING);
	ck_assert_int_eq(header_result(1, WIRE_END, 0, 0, 1), WIRE_E_TRAILING);
	ck_assert_int_eq(header_result(0, WIRE_DATA, 0, 0, 1), WIRE_E_EMPTY);
	ck_assert_int_eq(header_result(0, WIRE_DATA, WIRE_FLAG_END, 0, 1),
	    WIRE_OK);
	/* Fixed-size checks need only the header. */
	wire_encode_header(buf, 100, WIRE_PING, 0, 0);
	{
		struct wire_frame f;
		size_t		  need;

		ck_assert_int_eq(wire_decode_frame(buf, WIRE_HEADER_SIZE, &f,
		    &need), WIRE_E_TRAILING);
	}
}
END_TEST

/* Build a frame from raw payload bytes and decode it by type. */
static int
payload_result(uint8_t type, uint32_t stream, const void *p, size_t n)
{
	struct wire_frame f;
	size_t		  need;
	int		  r;

	wire_encode_header(buf, (uint32_t)n, type, 0, stream);
	memcpy(buf + WIRE_HEADER_SIZE, p, n);
	if ((r = wire_decode_frame(buf, WIRE_HEADER_SIZE + n, &f, &need)) !=
	    WIRE_OK)
		return r;
	return decode_payload(&f);
}

#define PR(t, s, lit) payload_result(t, s, lit, sizeof(lit) - 1)

START_TEST(test_payload_rejections)
{
	static uint8_t big[4 + 4 + 2 + 4097];

	/* HELLO: version 0, reserved, short, trailing. */
	ck_assert_int_eq(PR(WIRE_HELLO, 0, "\0\0\0\0\0\0\0\0\0\0"),
	    WIRE_E_VALUE);
	ck_assert_int_eq(PR(WIRE_HELLO, 0, "\0\1\0\1\0\0\0\0\0\0"),
	    WIRE_E_RESERVED);
	ck_assert_int_eq(PR(WIRE_HELLO, 0, "\0\1\0\0\0\0\0\0\0"),
	    WIRE_E_SHORT);
	ck_assert_int_eq(PR(WIRE_HELLO, 0, "\0\1\0\0\0\0\0\0\1"),
	    WIRE_E_SHORT);
	ck_assert_int_eq(PR(WIRE_HELLO, 0, "\0\1\0\0\0\0\0\0\0\0\0"),
	    WIRE_E_TRAILING);
	ck_assert_int_eq(PR(WIRE_HELLO, 0, "\0\1\0\0\0\0\0\0\0\0"), WIRE_OK);

	/* REQUEST. */
	ck_assert_int_eq(PR(WIRE_REQUEST, 1,
	    "\3GET\0\1/\0\0\0\0\0\0\0\0"), WIRE_OK);
	ck_assert_int_eq(PR(WIRE_REQUEST, 1,
	    "\3GET\0\1/\0\0\0\0\0\0\0\0\0"), WIRE_E_TRAILING);
	ck_assert_int_eq(PR(WIRE_REQUEST, 1,
	    "\3GET\0\1/\0\0\0\0\0\0\0"), WIRE_E_SHORT);
	ck_assert_int_eq(PR(WIRE_REQUEST, 1, "\4GET"), WIRE_E_SHORT);
	ck_assert_int_eq(PR(WIRE_REQUEST, 1, "\3GET\0\5/"), WIRE_E_SHORT);
	ck_assert_int_eq(PR(WIRE_REQUEST, 1,
	    "\0\0\1/\0\0\0\0\0\0\0\0"), WIRE_E_EMPTY);
	ck_assert_int_eq(PR(WIRE_REQUEST, 1,
	    "\3GET\0\0\0\0\0\0\0\0\0\0"), WIRE_E_EMPTY);
	ck_assert_int_eq(PR(WIRE_REQUEST, 1,
	    "\3GET\0\1/\0\0\0\0\0\0\0\1\0\0\0"), WIRE_E_EMPTY);
	ck_assert_int_eq(PR(WIRE_REQUEST, 1,
	    "\3GET\0\1/\0\0\0\0\0\0\1\1"), WIRE_E_LIMIT);
	ck_assert_int_eq(PR(WIRE_REQUEST, 1,
	    "\3GET\0\1/\0\0\0\0\0\0\0\1\1a\0\2x"), WIRE_E_SHORT);
	ck_assert_int_eq(PR(WIRE_REQUEST, 1,
	    "\3GET\0\1/\0\0\0\0\0\0\0\1\1a\0\1x"), WIRE_OK);

	/* RESPONSE. */
	ck_assert_int_eq(PR(WIRE_RESPONSE, 1, "\0\xc8\0\0"), WIRE_OK);
	ck_assert_int_eq(PR(WIRE_RESPONSE, 1, "\0\x63\0\0"), WIRE_E_VALUE);
	ck_assert_int_eq(PR(WIRE_RESPONSE, 1, "\x03\xe8\0\0"), WIRE_E_VALUE);
	ck_assert_int_eq(PR(WIRE_RESPONSE, 1, "\x03\xe7\0\0"), WIRE_OK);
	ck_assert_int_eq(PR(WIRE_RESPONSE, 1, "\0\xc8\0"), WIRE_E_SHORT);
	ck_assert_int_eq(PR(WIRE_RESPONSE, 1, "\0\xc8\0\0\0"),
	    WIRE_E_TRAILING);
	ck_assert_int_eq(PR(WIRE_RESPONSE, 1, "\0\xc8\0\1\0\0\0"),
	    WIRE_E_EMPTY);
	ck_assert_int_eq(PR(WIRE_RESPONSE, 1, "\0\xc8\1\1"), WIRE_E_LIMIT);

	/* ERROR, GOAWAY, CANCEL, WINDOW. */
	ck_assert_int_eq(PR(WIRE_ERROR, 1, "\0\0\0\1\0\0"), WIRE_OK);
	ck_assert_int_eq(PR(WIRE_ERROR, 1, "\0\0\0\1\0"), WIRE_E_SHORT);
	ck_assert_int_eq(PR(WIRE_ERROR, 1, "\0\0\0\1\0\2x"), WIRE_E_SHORT);
	ck_assert_int_eq(PR(WIRE_ERROR, 1, "\0\0\0\1\0\0x"), WIRE_E_TRAILING);
	ck_assert_int_eq(PR(WIRE_ERROR, 1, "\0\0\0\1\x10\x01"), WIRE_E_LIMIT);
	memset(big, 'g', sizeof big);
	memcpy(big, "\0\0\0\1\0\0\0\7\x10\x01", 10);
	ck_assert_int_eq(payload_result(WIRE_GOAWAY, 0, big, 10 + 4097),
	    WIRE_E_LIMIT);
	/* The limit is checked before the bytes are. */
	ck_assert_int_eq(payload_result(WIRE_GOAWAY, 0, big, 10),
	    WIRE_E_LIMIT);
	memcpy(big, "\0\0\0\1\0\0\0\7\x10\x00", 10);
	ck_assert_int_eq(payload_result(WIRE_GOAWAY, 0, big, 10 + 4095),
	    WIRE_E_SHORT);
	ck_assert_int_eq(payload_result(WIRE_GOAWAY, 0, big, 10 + 4096),
	    WIRE_OK);
	ck_assert_int_eq(PR(WIRE_GOAWAY, 0, "\0\0\0\1\0\0\0\7\0"),
	    WIRE_E_SHORT);
	ck_assert_int_eq(PR(WIRE_GOAWAY, 0, "\0\0\0\1\0\0\0\7\0\0\0"),
	    WIRE_E_TRAILING);
	ck_assert_int_eq(PR(WIRE_WINDOW, 0, "\0\0\0\0"), WIRE_E_VALUE);
	ck_assert_int_eq(PR(WIRE_WINDOW, 0, "\0\0\0\1"), WIRE_OK);
	ck_assert_int_eq(PR(WIRE_CANCEL, 1, "\xff\xff\xff\xff"), WIRE_OK);
}
END_TEST

/* Payload decoders checked on frames decode_frame would not produce. */
START_TEST(test_decoders_defensive)
{
	struct wire_frame f = { 0 };
	uint8_t		  payload[9] = { 0 }, o[8];
	uint32_t	  u;

	f.payload = payload;
	f.length = 7;
	ck_assert_int_eq(wire_decode_ping(&f, o), WIRE_E_SHORT);
	f.length = 9;
	ck_assert_int_eq(wire_decode_ping(&f, o), WIRE_E_TRAILING);
	f.length = 3;
	ck_assert_int_eq(wire_decode_cancel(&f, &u), WIRE_E_SHORT);
	f.length = 5;
	ck_assert_int_eq(wire_decode_cancel(&f, &u), WIRE_E_TRAILING);
	payload[3] = 1;
	ck_assert_int_eq(wire_decode_window(&f, &u), WIRE_E_TRAILING);
}
END_TEST

START_TEST(test_encoder_limits)
{
	static char	     big[70000];
	static struct wire_field many[WIRE_MAX_FIELDS + 1];
	struct wire_field    fl[1] = { { S("a"), S("b") } };
	struct wire_hello    h = { 1, 0, S(""), S("x") };
	struct wire_request  rq = { S("GET"), S("/"), S(""), S(""), 0, fl, 1 };
	struct wire_response rs = { 200, fl, 1 };
	struct wire_error    e = { 1, S("") };
	struct wire_goaway   g = { 0, 0, S("") };
	unsigned	     i;

	memset(big, 'a', sizeof big);
	for (i = 0; i <= WIRE_MAX_FIELDS; i++) {
		many[i].name = S("n");
		many[i].value = S("");
	}

	h.version = 0;
	ck_assert_uint_eq(wire_encode_hello(buf, &h), 0);
	h.version = 1;
	h.deployment.p = big;
	h.deployment.len = 256;
	ck_assert_uint_eq(wire_hello_size(&h), 0);
	ck_assert_uint_eq(wire_encode_hello(buf, &h), 0);
	h.deployment.len = 255;
	ck_assert_uint_ne(wire_encode_hello(buf, &h), 0);

	ck_assert_uint_ne(wire_encode_request(buf, 1, 0, &rq), 0);
	ck_assert_uint_eq(wire_encode_request(buf, 0, 0, &rq), 0);
	ck_assert_uint_eq(wire_encode_request(buf, 1, 0x02, &rq), 0);
	rq.method.p = big;
	rq.method.len = 256;
	ck_assert_uint_eq(wire_encode_request(buf, 1, 0, &rq), 0);
	rq.method = S("");
	ck_assert_uint_eq(wire_encode_request(buf, 1, 0, &rq), 0);
	rq.method = S("GET");
	rq.target.p = big;
	rq.target.len = 65536;
	ck_assert_uint_eq(wire_request_size(&rq), 0);
	rq.target.len = 65535;
	ck_assert_uint_ne(wire_encode_request(buf, 1, 0, &rq), 0);
	rq.target = S("/");
	rq.request_id.p = big;
	rq.request_id.len = 256;
	ck_assert_uint_eq(wire_encode_request(buf, 1, 0, &rq), 0);
	rq.request_id = S("");
	rq.fields = many;
	rq.nfields = WIRE_MAX_FIELDS + 1;
	ck_assert_uint_eq(wire_encode_request(buf, 1, 0, &rq), 0);
	rq.nfields = WIRE_MAX_FIELDS;
	ck_assert_uint_ne(wire_encode_request(buf, 1, 0, &rq), 0);
	many[3].name = S("");
	ck_assert_uint_eq(wire_encode_request(buf, 1, 0, &rq), 0);
	many[3].name = S("n");
	many[3].value.p = big;
	many[3].value.len = 65536;
	ck_assert_uint_eq(wire_encode_request(buf, 1, 0, &rq), 0);
	/* 17 values of 65535 bytes: every field fits, the frame does not. */
	for (i = 0; i < 17; i++) {
		many[i].value.p = big;
		many[i].value.len = 65535;
	}
	rq.nfields = 17;
	ck_assert_uint_eq(wire_request_size(&rq), 0);
	ck_assert_uint_eq(wire_encode_request(buf, 1, 0, &rq), 0);
	rq.nfields = 15;
	ck_assert_uint_ne(wire_encode_request(buf, 1, 0, &rq), 0);

	rs.status = 99;
	ck_assert_uint_eq(wire_encode_response(buf, 1, 0, &rs), 0);
	rs.status = 1000;
	ck_assert_uint_eq(wire_response_size(&rs), 0);
	rs.status = 100;
	ck_assert_uint_eq(wire_encode_response(buf, 0, 0, &rs), 0);
	ck_assert_uint_ne(wire_encode_response(buf, 1, 0, &rs), 0);

	e.text.p = big;
	e.text.len = WIRE_MAX_TEXT + 1;
	ck_assert_uint_eq(wire_encode_error(buf, 0, &e), 0);
	e.text.len = WIRE_MAX_TEXT;
	ck_assert_uint_eq(wire_encode_error(buf, 0, &e),
	    WIRE_HEADER_SIZE + 6 + WIRE_MAX_TEXT);
	g.text.p = big;
	g.text.len = WIRE_MAX_TEXT + 1;
	ck_assert_uint_eq(wire_encode_goaway(buf, &g), 0);

	ck_assert_uint_eq(wire_encode_cancel(buf, 0, 1), 0);
	ck_assert_uint_eq(wire_encode_window(buf, 1, 0), 0);
}
END_TEST

/* Decoding from an odd address must work (no aligned loads assumed). */
START_TEST(test_unaligned)
{
	struct wire_goaway g = { 0x01020304, 0x0a0b0c0d, S("t") }, go;
	struct wire_frame  f;
	size_t		   n, off;

	for (off = 1; off < 4; off++) {
		n = wire_encode_goaway(buf + off, &g);
		decode_whole(buf + off, n, &f);
		ck_assert_int_eq(wire_decode_goaway(&f, &go), WIRE_OK);
		ck_assert_uint_eq(go.last_stream, 0x01020304);
		ck_assert_uint_eq(go.code, 0x0a0b0c0d);
	}
	/* And the header's byte order is big-endian. */
	wire_encode_header(buf, 0x01020304, WIRE_DATA, 1, 0x0a0b0c0d);
	ck_assert_mem_eq(buf, "\1\2\3\4\6\1\0\0\x0a\x0b\x0c\x0d", 12);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(wire_result_str(WIRE_OK), "ok");
	ck_assert_str_eq(wire_result_str(WIRE_NEED_MORE), "NEED_MORE");
	ck_assert_str_eq(wire_result_str(WIRE_E_TYPE), "E_TYPE");
	ck_assert_str_eq(wire_result_str(WIRE_E_VALUE), "E_VALUE");
	ck_assert_str_eq(wire_result_str(-1), "E_UNKNOWN");
	ck_assert_str_eq(wire_result_str(99), "E_UNKNOWN");
	ck_assert_str_eq(wire_type_str(WIRE_HELLO), "HELLO");
	ck_assert_str_eq(wire_type_str(WIRE_WINDOW), "WINDOW");
	ck_assert_str_eq(wire_type_str(0), "UNKNOWN");
	ck_assert_str_eq(wire_type_str(13), "UNKNOWN");
	ck_assert_str_eq(wire_code_str(WIRE_CODE_NONE), "NONE");
	ck_assert_str_eq(wire_code_str(WIRE_CODE_OVERLOAD), "OVERLOAD");
	ck_assert_str_eq(wire_code_str(9), "UNKNOWN");
}
END_TEST

/* tests/vectors/frames.txt, shared with the Python SDK. */

static int
unhex(const char *s, uint8_t *out, size_t cap, size_t *n)
{
	size_t len = strlen(s), i;
	int    hi, lo;

	if (len % 2 != 0 || len / 2 > cap)
		return -1;
	for (i = 0; i < len / 2; i++) {
		if (!isxdigit((unsigned char)s[2 * i]) ||
		    !isxdigit((unsigned char)s[2 * i + 1]))
			return -1;
		hi = isdigit((unsigned char)s[2 * i]) ? s[2 * i] - '0' :
		    tolower((unsigned char)s[2 * i]) - 'a' + 10;
		lo = isdigit((unsigned char)s[2 * i + 1]) ? s[2 * i + 1] - '0' :
		    tolower((unsigned char)s[2 * i + 1]) - 'a' + 10;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	*n = len / 2;
	return 0;
}

/* One vector: returns the result name, checks a whole frame's size. */
static const char *
run_vector(const char *name, const uint8_t *p, size_t n)
{
	struct wire_frame f;
	size_t		  need;
	int		  r;

	r = wire_decode_frame(p, n, &f, &need);
	if (r == WIRE_OK) {
		ck_assert_msg(need == n, "%s: frame is %zu bytes, vector %zu",
		    name, need, n);
		r = decode_payload(&f);
	}
	return wire_result_str(r);
}

START_TEST(test_vectors)
{
	static uint8_t	 frame[64 * 1024];
	static char	 line[256 * 1024];
	const char	*path, *got;
	char		*name, *hex, *expected, *nl;
	FILE		*fp;
	size_t		 n, count = 0, lineno = 0;
	int		 seen[WIRE_E_VALUE + 1] = { 0 }, i;

	if ((path = getenv("INGRESSD_VECTORS")) == NULL)
		path = "tests/vectors/frames.txt";
	fp = fopen(path, "r");
	ck_assert_msg(fp != NULL, "cannot open %s", path);
	while (fgets(line, sizeof line, fp) != NULL) {
		lineno++;
		ck_assert_msg(strchr(line, '\n') != NULL || feof(fp),
		    "%s:%zu: line too long", path, lineno);
		if ((nl = strchr(line, '\n')) != NULL)
			*nl = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		name = line;
		hex = strchr(name, '\t');
		ck_assert_msg(hex != NULL, "%s:%zu: no tab", path, lineno);
		*hex++ = '\0';
		expected = strchr(hex, '\t');
		ck_assert_msg(expected != NULL, "%s:%zu: no 2nd tab", path,
		    lineno);
		*expected++ = '\0';
		ck_assert_msg(unhex(hex, frame, sizeof frame, &n) == 0,
		    "%s:%zu: bad hex", path, lineno);
		got = run_vector(name, frame, n);
		ck_assert_msg(strcmp(got, expected) == 0,
		    "vector %s: got %s, want %s", name, got, expected);
		for (i = 0; i <= WIRE_E_VALUE; i++)
			if (strcmp(expected, wire_result_str(i)) == 0)
				seen[i] = 1;
		count++;
	}
	fclose(fp);
	ck_assert_uint_ge(count, 25);
	for (i = 0; i <= WIRE_E_VALUE; i++)
		ck_assert_msg(seen[i], "no vector expects %s",
		    wire_result_str(i));
}
END_TEST

static Suite *
wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_hello_roundtrip);
	tcase_add_test(tc, test_ping_pong_roundtrip);
	tcase_add_test(tc, test_request_roundtrip);
	tcase_add_test(tc, test_request_points_into_buffer);
	tcase_add_test(tc, test_response_roundtrip);
	tcase_add_test(tc, test_trailers_roundtrip);
	tcase_add_test(tc, test_hello_negotiation);
	tcase_add_test(tc, test_data_end_roundtrip);
	tcase_add_test(tc, test_cancel_error_goaway_window_roundtrip);
	tcase_add_test(tc, test_header_rejections);
	tcase_add_test(tc, test_payload_rejections);
	tcase_add_test(tc, test_decoders_defensive);
	tcase_add_test(tc, test_encoder_limits);
	tcase_add_test(tc, test_unaligned);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_vectors);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(wire_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
