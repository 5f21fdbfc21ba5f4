/*
 * hup_req.h -- the request head an HTTP upstream is sent, and its body
 * framing; pure formatting into an evbuffer.
 *
 * The head is made from the stream's protocol-free request (the REQUEST
 * the stream encodes for any edge, decoded): method, target, end-to-end
 * fields with X-Forwarded-For/-Proto already set and hop-by-hop ones
 * already removed by the stream; X-Request-Id added.  The body goes as the
 * client framed it: with its Content-Length raw, else chunked.
 */
#ifndef INGRESSD_HUP_REQ_H
#define INGRESSD_HUP_REQ_H

#include <stddef.h>

struct evbuffer;
struct wire_request;

/* The request head into out.  has_body: a body follows (END not set);
 * *chunked set when it must go chunked (no Content-Length).  host: for a
 * request without Host (HTTP/1.0 clients). */
void	 hup_req_head(struct evbuffer *out, const struct wire_request *,
	    int has_body, const char *host, int *chunked);
/* A body piece, chunked or raw; the end of a chunked body. */
void	 hup_req_body(struct evbuffer *out, int chunked, const void *,
	    size_t);
void	 hup_req_end(struct evbuffer *out, int chunked);
/* An active health check: GET path. */
void	 hup_req_probe(struct evbuffer *out, const char *path,
	    const char *host);
/* Is the method HEAD (its response has no body)? */
int	 hup_req_is_head(const struct wire_request *);
/* Is the method idempotent (RFC 9110 9.2.2: GET HEAD OPTIONS PUT DELETE
 * TRACE)? */
int	 hup_req_is_idempotent(const struct wire_request *);

#endif
