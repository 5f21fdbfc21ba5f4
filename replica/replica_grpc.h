/*
 * replica_grpc.h -- gRPC on libingressd-replica, on raw message bytes.
 *
 * A gRPC call reaches a replica as a request: POST /package.Service/Method,
 * content-type application/grpc, its body a sequence of messages, each a
 * 5-byte prefix (u8 compressed flag, u32 big-endian length) and that many
 * bytes.  The answer is a 200 response whose body is messages framed the
 * same way, ended by trailers carrying grpc-status and grpc-message (wire
 * v2 TRAILERS), or, when nothing was sent, by the status in the response
 * head alone ("Trailers-Only").  No protobuf here: handlers get and send
 * serialized messages.
 *
 * Three layers, usable on their own:
 *   - replica_grpc_dec: an incremental decoder of the 5-byte framing;
 *   - replica_grpc_send/replica_grpc_finish: messages and the status out
 *     on any replica_req, with response metadata (headers, trailers);
 *   - replica_grpc_handler: a replica_handler that dispatches calls by
 *     path to a table of methods, for the four kinds of RPC.
 * Compressed messages (flag 1) are refused with UNIMPLEMENTED: the
 * replica announces no grpc-accept-encoding, so clients do not send them.
 */
#ifndef INGRESSD_REPLICA_GRPC_H
#define INGRESSD_REPLICA_GRPC_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "replica.h"

/* Status codes (grpc/doc/statuscodes.md). */
enum replica_grpc_code {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_ALREADY_EXISTS = 6,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_ABORTED = 10,
	GRPC_OUT_OF_RANGE = 11,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
	GRPC_DATA_LOSS = 15,
	GRPC_UNAUTHENTICATED = 16,
};

#define REPLICA_GRPC_PREFIX	5
#define REPLICA_GRPC_MAX_MESSAGE (4u << 20)	/* gRPC's usual default */
/* A call's response metadata, headers and trailers together, each field
 * counted as name + value + 32 (HTTP/2's measure): gRPC's usual limit. */
#define REPLICA_GRPC_MAX_METADATA (8u << 10)

/*
 * The decoder: feed body pieces of any size; on_message gets each whole
 * message (the bytes are valid during the call only).  Returns 0, or a
 * gRPC code when the stream is bad: RESOURCE_EXHAUSTED for a message over
 * max, UNIMPLEMENTED for a compressed one, INTERNAL out of memory, or
 * whatever non-zero code on_message returned (decoding stops there).
 */
struct replica_grpc_dec;
typedef int	(*replica_grpc_msg_cb)(void *arg, const void *msg, size_t n);

struct replica_grpc_dec *replica_grpc_dec_new(size_t max,
		    replica_grpc_msg_cb, void *arg);
void		 replica_grpc_dec_free(struct replica_grpc_dec *);
int		 replica_grpc_dec_feed(struct replica_grpc_dec *,
		    const void *p, size_t n);
/* Bytes of a message begun and not complete: non-zero at the end of the
 * request body means it was cut short. */
size_t		 replica_grpc_dec_partial(const struct replica_grpc_dec *);

/*
 * The answer.  replica_grpc_send() sends the response head (200,
 * content-type application/grpc) before the first message if not yet
 * sent, then the message with its prefix.  replica_grpc_finish() ends the
 * call with a status: trailers after messages, Trailers-Only when none
 * went out.  message may be NULL; it is percent-encoded as gRPC wants.
 * Each returns 0, or -1 as replica_write() does.
 */
int	replica_grpc_send(struct replica_req *, const void *msg, size_t n);
int	replica_grpc_finish(struct replica_req *, int code, const char *message);

/*
 * Response metadata, on any replica_req.  replica_grpc_header_add() adds
 * a field to the response head (gRPC's initial metadata): before the
 * first replica_grpc_send().  replica_grpc_trailer_add() adds one to the
 * trailers (trailing metadata): before replica_grpc_finish().  A call
 * that finishes without sending a message (Trailers-Only) carries both in
 * its one head, beside grpc-status.  Fields go out in the order added;
 * a name may repeat.
 *
 * name: a lowercase token (0-9 a-z - _ .), not grpc-* (gRPC's own) and
 * not content-type or an HTTP/2 connection field (te, connection, ...).
 * value: printable ASCII (0x20..0x7e); for a name ending in -bin, base64
 * (padded or not), as gRPC carries binary values.  The _bin variants
 * take a -bin name and raw bytes and encode them (unpadded).
 * Each returns 0, or -1: a bad name or value, too late (the head is out,
 * the call is over), over REPLICA_GRPC_MAX_METADATA, out of memory.
 */
int	replica_grpc_header_add(struct replica_req *, const char *name,
	    const char *value);
int	replica_grpc_header_add_bin(struct replica_req *, const char *name,
	    const void *p, size_t n);
int	replica_grpc_trailer_add(struct replica_req *, const char *name,
	    const char *value);
int	replica_grpc_trailer_add_bin(struct replica_req *, const char *name,
	    const void *p, size_t n);
/* 0 when name and value would be accepted by the calls above, else -1. */
int	replica_grpc_metadata_check(const char *name, const char *value);
/*
 * A -bin metadata value (request metadata arrives as sent: base64) as
 * bytes: decoded into out, their count returned; -1 when it is not
 * base64 or does not fit in len.
 */
ssize_t	replica_grpc_metadata_decode(const char *value, void *out,
	    size_t len);

/* Percent-encodes s for grpc-message into out (always NUL-terminated,
 * cut at a whole escape); returns the length it needed. */
size_t	replica_grpc_percent_encode(const char *s, char *out, size_t len);

/*
 * The dispatcher.  A method's handlers, by kind:
 *   unary, server streaming: on_unary gets the one request message when
 *     the request ends (none, or more than one: the call ends INTERNAL,
 *     as gRPC servers answer);
 *   client, bidi streaming: on_message for each message as it arrives,
 *     then on_end when the client is done sending.
 * The handler answers with replica_grpc_send() and replica_grpc_finish(),
 * at once or later (timers on replica_base()).  on_cancel: the call is
 * gone (client cancel, deadline); the req is freed when it returns.
 * Per-call user data: replica_grpc_set_user()/replica_grpc_user() (the
 * dispatcher keeps its own state in the req's user pointer: do not call
 * replica_req_set_user() on its calls).  A call the handler leaves to
 * on_message/on_end without finishing ends OK when on_end is NULL.
 * on_writable (optional, any kind): response body queued for want of
 * credit has all gone out (replica.h's on_writable): a handler that
 * produces a long stream sends while replica_req_pending() is 0 and
 * resumes here, so at most one message waits inside the library.
 */
struct replica_grpc_method {
	const char	*path;		/* "/package.Service/Method" */
	void	(*on_unary)(struct replica_req *, const void *msg, size_t n,
		    void *arg);
	void	(*on_message)(struct replica_req *, const void *msg, size_t n,
		    void *arg);
	void	(*on_end)(struct replica_req *, void *arg);
	void	(*on_cancel)(struct replica_req *, void *arg);
	void	(*on_writable)(struct replica_req *, void *arg);
};

struct replica_grpc_server {
	const struct replica_grpc_method *methods;
	size_t		 nmethods;
	size_t		 max_message;	/* 0: REPLICA_GRPC_MAX_MESSAGE */
	void		*arg;		/* handed to every handler */
};

/* Pass with a struct replica_grpc_server * as arg to replica_new() or
 * replica_main().  Unknown paths are answered UNIMPLEMENTED, a request
 * that is not POST application/grpc... with HTTP 415. */
extern const struct replica_handler replica_grpc_handler;

void	 replica_grpc_set_user(struct replica_req *, void *);
void	*replica_grpc_user(struct replica_req *);

#endif
