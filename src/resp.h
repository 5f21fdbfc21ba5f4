/*
 * resp.h -- response heads, chunked framing and error responses.  Pure
 * formatting into evbuffers; the front decides what and when.
 */
#ifndef INGRESSD_RESP_H
#define INGRESSD_RESP_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct wire_field;

enum resp_framing {
	RESP_LENGTH,		/* Content-Length given */
	RESP_CHUNKED,		/* HTTP/1.1, length unknown */
	RESP_CLOSE,		/* HTTP/1.0, length unknown: close ends it */
	RESP_NONE,		/* HEAD, 204, 304: no body */
};

const char	*resp_reason(int status);
/*
 * Status line and headers from a replica's RESPONSE: hop-by-hop fields are
 * dropped, Content-Length is kept (and returned in *clen, else -1),
 * X-Request-Id added if the replica did not set it, then the framing
 * header and Connection.
 */
void		 resp_head(struct evbuffer *, int minor, int status,
		    const struct wire_field *, unsigned n, const char *request_id,
		    enum resp_framing, int64_t clen, int keep_alive);
/* Find Content-Length among the fields: the value, -1 if none, -2 if bad. */
int64_t		 resp_content_length(const struct wire_field *, unsigned n);
void		 resp_chunk(struct evbuffer *out, struct evbuffer *data);
void		 resp_chunk_end(struct evbuffer *out);
/*
 * The last chunk with a trailer section: "0", the fields a trailer may
 * carry (not hop-by-hop, Content-Length, Host, nor a name that is not a
 * token or a value with a byte a field may not hold), then the blank line.
 * Returns the bytes written.
 */
size_t		 resp_chunk_trailers(struct evbuffer *out,
		    const struct wire_field *, unsigned n);
/* A TE field value names "trailers" (RFC 9110 10.1.4): the client takes
 * a trailer section. */
int		 resp_te_trailers(const char *value, size_t len);
/* A complete error response: text body naming the status and why. */
void		 resp_error(struct evbuffer *, int minor, int status,
		    const char *why, const char *request_id, int keep_alive,
		    int head_only);
/* A complete small response with a body (admin JSON). */
void		 resp_simple(struct evbuffer *, int minor, int status,
		    const char *ctype, const char *body, size_t len,
		    const char *request_id, int keep_alive, int head_only);

#endif
