/*
 * fuzz_wire.c -- libFuzzer target for the wire codec.
 *
 * The input is a byte stream as a peer would send it: frames are decoded in
 * a loop, each payload by its type, and every accepted REQUEST, RESPONSE,
 * HELLO, ERROR and GOAWAY is encoded again and must decode to the same
 * bytes (TRAILERS too, v2).  Each payload decoder is also run on the whole input as if it were
 * a payload, so decoders see bytes decode_frame would have refused.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static uint8_t		 out[WIRE_HEADER_SIZE + WIRE_MAX_PAYLOAD];
static struct wire_field fields[WIRE_MAX_FIELDS];

/* Re-encoding an accepted frame must give back its exact bytes. */
static void
same(const struct wire_frame *f, size_t n)
{
	if (n != WIRE_HEADER_SIZE + f->length ||
	    memcmp(out + WIRE_HEADER_SIZE, f->payload, f->length) != 0)
		abort();
}

static void
payload(const struct wire_frame *f, int roundtrip)
{
	struct wire_hello    h;
	struct wire_request  rq;
	struct wire_response rs;
	struct wire_error    e;
	struct wire_goaway   g;
	struct wire_trailers tr;
	uint8_t		     opaque[8];
	uint32_t	     u;
	size_t		     n;

	switch (f->type) {
	case WIRE_HELLO:
		if (wire_decode_hello(f, &h) == WIRE_OK && roundtrip) {
			n = wire_encode_hello(out, &h);
			same(f, n);
		}
		break;
	case WIRE_PING:
	case WIRE_PONG:
		if (wire_decode_ping(f, opaque) == WIRE_OK && roundtrip)
			same(f, wire_encode_ping(out, f->type, opaque));
		break;
	case WIRE_REQUEST:
		if (wire_decode_request(f, &rq, fields, WIRE_MAX_FIELDS) ==
		    WIRE_OK && roundtrip) {
			if (rq.method.len == 0 || rq.target.len == 0)
				abort();
			same(f, wire_encode_request(out, f->stream, f->flags,
			    &rq));
		}
		/* A smaller caller array must fail cleanly, never overrun. */
		(void)wire_decode_request(f, &rq, fields, 3);
		break;
	case WIRE_RESPONSE:
		if (wire_decode_response(f, &rs, fields, WIRE_MAX_FIELDS) ==
		    WIRE_OK && roundtrip) {
			if (rs.status < 100 || rs.status > 999)
				abort();
			same(f, wire_encode_response(out, f->stream, f->flags,
			    &rs));
		}
		(void)wire_decode_response(f, &rs, fields, 0);
		break;
	case WIRE_CANCEL:
		if (wire_decode_cancel(f, &u) == WIRE_OK && roundtrip)
			same(f, wire_encode_cancel(out, f->stream, u));
		break;
	case WIRE_ERROR:
		if (wire_decode_error(f, &e) == WIRE_OK && roundtrip) {
			if (e.text.len > WIRE_MAX_TEXT)
				abort();
			same(f, wire_encode_error(out, f->stream, &e));
		}
		break;
	case WIRE_GOAWAY:
		if (wire_decode_goaway(f, &g) == WIRE_OK && roundtrip)
			same(f, wire_encode_goaway(out, &g));
		break;
	case WIRE_WINDOW:
		if (wire_decode_window(f, &u) == WIRE_OK && roundtrip) {
			if (u == 0)
				abort();
			same(f, wire_encode_window(out, f->stream, u));
		}
		break;
	case WIRE_TRAILERS:
		if (wire_decode_trailers(f, &tr, fields, WIRE_MAX_FIELDS) ==
		    WIRE_OK && roundtrip)
			same(f, wire_encode_trailers(out, f->stream, &tr));
		(void)wire_decode_trailers(f, &tr, fields, 1);
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_frame f;
	size_t		  off = 0, need;
	int		  r, t;

	/* A stream of frames, as a connection would read them. */
	while (off < size) {
		r = wire_decode_frame(data + off, size - off, &f, &need);
		if (r == WIRE_NEED_MORE) {
			if (need <= size - off)
				abort();
			break;
		}
		if (r != WIRE_OK)
			break;
		if (need != WIRE_HEADER_SIZE + f.length ||
		    f.payload != data + off + WIRE_HEADER_SIZE)
			abort();
		payload(&f, 1);
		off += need;
	}

	/* Every decoder on the raw input as a payload. */
	if (size > WIRE_MAX_PAYLOAD)
		return 0;
	memset(&f, 0, sizeof f);
	f.payload = data;
	f.length = (uint32_t)size;
	f.stream = 1;
	for (t = 1; t <= WIRE_TYPE_MAX; t++) {
		f.type = (uint8_t)t;
		payload(&f, 0);
	}
	return 0;
}
