/*
 * wire.h -- the ingressd <-> replica wire protocol, version 2.
 *
 * This header is the contract; docs/protocol.md is its prose form and
 * tests/vectors/ holds frames both implementations (C and Python) must agree
 * on.  Bump WIRE_VERSION when any layout below changes.  Type numbers never
 * shift: new types take new numbers.
 *
 * The codec is pure: no I/O, no allocation, no libevent.  Decoders take a
 * byte range and fill a struct whose strings point into that range; every
 * length is checked against the range and against the limits below before
 * it is used.  Encoders write into a caller-supplied buffer whose size was
 * computed with the matching *_size() function.
 *
 * Frame: a 12-byte header in network byte order, then `length` bytes.
 *
 *   0      4    5     6        8          12
 *   +------+----+-----+--------+----------+-------------
 *   |length|type|flags|reserved|stream id | payload ...
 *   | u32  | u8 | u8  |  u16=0 |   u32    |
 *
 * Strings are length-prefixed: str8 = u8 length + bytes, str16 = u16 length
 * + bytes.  No terminating NUL on the wire.
 */
#ifndef INGRESSD_WIRE_H
#define INGRESSD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_VERSION		2
/*
 * What each version adds.  A connection speaks min(ours, the peer's HELLO
 * version); a frame a version introduced is sent only when both speak it,
 * so a v1 peer never sees one.
 */
#define WIRE_VERSION_TRAILERS	2	/* the TRAILERS frame */
#define WIRE_HEADER_SIZE	12

/* Limits enforced on decode (and asserted by the encoders' callers). */
#define WIRE_MAX_PAYLOAD	(1u << 20)	/* any one frame */
#define WIRE_MAX_DATA		(256u << 10)	/* encoders split DATA at this */
#define WIRE_MAX_FIELDS		256		/* REQUEST/RESPONSE/TRAILERS fields */
#define WIRE_MAX_NAME		255		/* deployment, replica id, header name */
#define WIRE_MAX_TEXT		4096		/* ERROR and GOAWAY text */

/*
 * Frame types.  Stream 0 is the connection itself: HELLO, PING, PONG,
 * GOAWAY and connection-level ERROR/WINDOW use it; REQUEST, RESPONSE, DATA,
 * END, CANCEL and TRAILERS must not.
 */
enum wire_type {
	WIRE_HELLO	= 1,  /* u16 version, u16 reserved=0, u32 max_concurrency,
			       * str8 deployment, str8 replica_id.  Both sides
			       * send one first; the proxy's has max_concurrency
			       * 0 and replica_id "ingressd". */
	WIRE_PING	= 2,  /* 8 opaque bytes */
	WIRE_PONG	= 3,  /* the 8 bytes of the PING it answers */
	WIRE_REQUEST	= 4,  /* str8 method, str16 target, str8 deployment,
			       * str8 request_id, u32 deadline_ms (0 = none),
			       * u16 nfields, nfields x (str8 name, str16 value) */
	WIRE_RESPONSE	= 5,  /* u16 status, u16 nfields, fields as REQUEST */
	WIRE_DATA	= 6,  /* body bytes, 1..WIRE_MAX_PAYLOAD */
	WIRE_END	= 7,  /* empty: no more DATA in this direction */
	WIRE_CANCEL	= 8,  /* u32 code: proxy abandons the stream */
	WIRE_ERROR	= 9,  /* u32 code, str16 text.  On a stream: the stream
			       * failed (replica -> 502).  On stream 0: fatal,
			       * the sender closes the connection. */
	WIRE_GOAWAY	= 10, /* u32 last_stream_id, u32 code, str16 text: no
			       * new streams; streams <= last_stream_id finish */
	WIRE_WINDOW	= 11, /* u32 increment: flow-control credit (bytes) */
	WIRE_TRAILERS	= 12, /* v2, replica -> proxy: u16 nfields, fields as
			       * REQUEST.  Response trailers: the last frame
			       * of the response (implies END; no END flag) */
};
#define WIRE_TYPE_MAX	WIRE_TRAILERS

/*
 * Flow control (per stream, each direction on its own).  A stream starts
 * with WIRE_INITIAL_WINDOW bytes of credit each way: a sender must not send
 * more DATA payload on a stream than the credit it holds, and a receiver
 * grants more with WINDOW(stream, n) as it consumes what it got (typically
 * once it has consumed half the window).  DATA beyond the credit is a
 * protocol error.  WINDOW on stream 0 is reserved (ignored) in versions 1
 * and 2.
 */
#define WIRE_INITIAL_WINDOW	(256u << 10)

/* Flags. */
#define WIRE_FLAG_END	0x01	/* on REQUEST/RESPONSE/DATA: same as a
				 * following END frame */
#define WIRE_FLAGS_KNOWN WIRE_FLAG_END

/* Codes used in CANCEL, ERROR and GOAWAY. */
enum wire_code {
	WIRE_CODE_NONE		= 0,
	WIRE_CODE_PROTOCOL	= 1,	/* malformed frame or bad sequence */
	WIRE_CODE_INTERNAL	= 2,	/* handler failed */
	WIRE_CODE_REFUSED	= 3,	/* stream refused, safe to retry */
	WIRE_CODE_CANCEL	= 4,	/* client went away */
	WIRE_CODE_TIMEOUT	= 5,	/* deadline passed */
	WIRE_CODE_VERSION	= 6,	/* no common version */
	WIRE_CODE_SHUTDOWN	= 7,	/* going away (GOAWAY) */
	WIRE_CODE_OVERLOAD	= 8,	/* over max_concurrency */
};

/* Results of decoding.  WIRE_OK is 0; WIRE_NEED_MORE is not an error. */
enum wire_result {
	WIRE_OK = 0,
	WIRE_NEED_MORE,		/* header or payload incomplete */
	WIRE_E_TYPE,		/* unknown frame type */
	WIRE_E_FLAGS,		/* unknown flag bit, or flag on wrong type */
	WIRE_E_RESERVED,	/* reserved field not zero */
	WIRE_E_TOO_LARGE,	/* length over WIRE_MAX_PAYLOAD */
	WIRE_E_STREAM,		/* stream id 0 where one is needed, or vice versa */
	WIRE_E_SHORT,		/* payload shorter than its fields say */
	WIRE_E_TRAILING,	/* payload longer than its fields say */
	WIRE_E_LIMIT,		/* a field over its limit (fields, names, text) */
	WIRE_E_EMPTY,		/* empty method/target/DATA where not allowed */
	WIRE_E_VALUE,		/* value out of range (status, version) */
};

struct wire_frame {
	uint32_t	 length;
	uint8_t		 type;
	uint8_t		 flags;
	uint32_t	 stream;
	const uint8_t	*payload;	/* points into the decoded buffer */
};

struct wire_str {
	const char	*p;	/* not NUL-terminated */
	size_t		 len;
};

struct wire_field {
	struct wire_str	 name;
	struct wire_str	 value;
};

struct wire_hello {
	uint16_t	 version;
	uint32_t	 max_concurrency;
	struct wire_str	 deployment;
	struct wire_str	 replica_id;
};

struct wire_request {
	struct wire_str	 method;
	struct wire_str	 target;
	struct wire_str	 deployment;
	struct wire_str	 request_id;
	uint32_t	 deadline_ms;
	struct wire_field *fields;	/* encode: input; decode: caller's array */
	unsigned	 nfields;
};

struct wire_response {
	uint16_t	 status;	/* 100..999 */
	struct wire_field *fields;
	unsigned	 nfields;
};

struct wire_trailers {
	struct wire_field *fields;
	unsigned	 nfields;
};

struct wire_error {			/* ERROR, and CANCEL (text empty) */
	uint32_t	 code;
	struct wire_str	 text;
};

struct wire_goaway {
	uint32_t	 last_stream;
	uint32_t	 code;
	struct wire_str	 text;
};

/*
 * Version negotiation: the version a connection speaks once the peer's
 * HELLO said `theirs` (min of the two, never 0), and the first version
 * that has frame type t (1 for the v1 types, 0 for an unknown type).
 * A sender sends t only when wire_type_version(t) <= the agreed version.
 */
uint16_t	 wire_version_agree(uint16_t theirs);
uint16_t	 wire_type_version(int t);

const char	*wire_result_str(int);
const char	*wire_type_str(int);
const char	*wire_code_str(uint32_t);

/*
 * Frame level.  wire_decode_frame() looks at buf[0..len): WIRE_NEED_MORE
 * until the whole frame is there (check *need for how many bytes that is,
 * once the header is in), then validates the header (type, flags, reserved,
 * stream rule, size) and returns WIRE_OK with f->payload pointing into buf.
 * The frame occupies WIRE_HEADER_SIZE + f->length bytes.
 */
int	 wire_decode_frame(const uint8_t *buf, size_t len, struct wire_frame *f,
	    size_t *need);
void	 wire_encode_header(uint8_t out[WIRE_HEADER_SIZE], uint32_t length,
	    uint8_t type, uint8_t flags, uint32_t stream);

/*
 * Payload level: each decoder takes a frame that wire_decode_frame()
 * accepted.  wire_decode_request/response fill at most `cap` entries of the
 * caller's fields array and fail with WIRE_E_LIMIT beyond that.
 */
int	 wire_decode_hello(const struct wire_frame *, struct wire_hello *);
int	 wire_decode_ping(const struct wire_frame *, uint8_t opaque[8]);
int	 wire_decode_request(const struct wire_frame *, struct wire_request *,
	    struct wire_field *fields, unsigned cap);
int	 wire_decode_response(const struct wire_frame *, struct wire_response *,
	    struct wire_field *fields, unsigned cap);
int	 wire_decode_trailers(const struct wire_frame *,
	    struct wire_trailers *, struct wire_field *fields, unsigned cap);
int	 wire_decode_error(const struct wire_frame *, struct wire_error *);
int	 wire_decode_cancel(const struct wire_frame *, uint32_t *code);
int	 wire_decode_goaway(const struct wire_frame *, struct wire_goaway *);
int	 wire_decode_window(const struct wire_frame *, uint32_t *increment);

/*
 * Encoders write a whole frame (header included) to out, which must have
 * room for the size the matching *_size() returned, and return the number of
 * bytes written; 0 if a field is over its limit (the caller's bug or bad
 * input it should have refused earlier).
 */
size_t	 wire_hello_size(const struct wire_hello *);
size_t	 wire_encode_hello(uint8_t *out, const struct wire_hello *);
size_t	 wire_encode_ping(uint8_t out[WIRE_HEADER_SIZE + 8], uint8_t type,
	    const uint8_t opaque[8]);	/* type: WIRE_PING or WIRE_PONG */
size_t	 wire_request_size(const struct wire_request *);
size_t	 wire_encode_request(uint8_t *out, uint32_t stream, uint8_t flags,
	    const struct wire_request *);
size_t	 wire_response_size(const struct wire_response *);
size_t	 wire_encode_response(uint8_t *out, uint32_t stream, uint8_t flags,
	    const struct wire_response *);
size_t	 wire_trailers_size(const struct wire_trailers *);
size_t	 wire_encode_trailers(uint8_t *out, uint32_t stream,
	    const struct wire_trailers *);
size_t	 wire_error_size(const struct wire_error *);
size_t	 wire_encode_error(uint8_t *out, uint32_t stream,
	    const struct wire_error *);
size_t	 wire_encode_cancel(uint8_t out[WIRE_HEADER_SIZE + 4], uint32_t stream,
	    uint32_t code);
size_t	 wire_goaway_size(const struct wire_goaway *);
size_t	 wire_encode_goaway(uint8_t *out, const struct wire_goaway *);
size_t	 wire_encode_window(uint8_t out[WIRE_HEADER_SIZE + 4], uint32_t stream,
	    uint32_t increment);
/* END and DATA headers need no payload encoder: use wire_encode_header(). */

#endif
