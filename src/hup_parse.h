/*
 * hup_parse.h -- HTTP/1.1 responses from an upstream server, parsed
 * without I/O (the HTTP upstream edge's parser; fuzzed by
 * tests/fuzz/fuzz_hup.c).
 *
 * The same rules as requests at the front (docs/http.md, "Responses from
 * HTTP replicas"): the head is checked byte by byte by our own scanner
 * (CRLF line ends only: no bare LF or CR; no NUL or other controls; no
 * obs-fold; field names are tokens, no space before the colon), then
 * parsed by llhttp in strict mode, which owns the body framing.  Refused:
 * Content-Length with Transfer-Encoding, more than one Content-Length
 * (even equal), Transfer-Encoding other than exactly "chunked", bad
 * chunking, a head over the limit, a 1xx other than 100 and 103 (those
 * two are dropped: the final response follows), a body on a response to
 * HEAD and any byte after a complete response.  Any fault is final: the
 * connection is not to be used again.
 *
 * Body bytes are handed out as they are parsed, so a caller that feeds at
 * most n bytes gets at most n body bytes (flow control).
 */
#ifndef INGRESSD_HUP_PARSE_H
#define INGRESSD_HUP_PARSE_H

#include <stddef.h>
#include <stdint.h>

struct hup_parse;
struct wire_field;

#define HUP_MAX_HEAD	(64 * 1024)	/* status line and fields */
#define HUP_MAX_FIELDS	128

/* The response head, valid until the next hup_parse_start(). */
struct hup_resp {
	int		 status;
	int		 minor;		/* HTTP/1.0 or 1.1 */
	/* End-to-end fields: hop-by-hop ones and those named in
	 * Connection removed; Content-Length kept. */
	const struct wire_field *fields;
	unsigned	 nfields;
	int64_t		 content_length; /* -1: none */
	int		 chunked;
	int		 complete;	/* no body follows (HEAD, 204, 304,
					 * Content-Length 0): done with it */
};

enum hup_parse_rc {
	HUP_MORE,		/* used everything, wants more */
	HUP_HEAD,		/* the head is in (hup_parse_resp) */
	HUP_DONE,		/* the response is complete */
	HUP_ERROR,		/* hup_parse_error() says why */
};

/* on_body: a piece of body, pointing into the bytes fed. */
struct hup_parse	*hup_parse_new(void (*on_body)(void *, const char *,
			    size_t), void *arg);
void			 hup_parse_free(struct hup_parse *);
/* Expect a response to a request (is_head: to HEAD). */
void			 hup_parse_start(struct hup_parse *, int is_head);
/* Parse what fits; *used says how much of p was consumed.  Stops after
 * the head (HUP_HEAD) and after the end of the response (HUP_DONE). */
enum hup_parse_rc	 hup_parse_feed(struct hup_parse *, const char *p,
			    size_t n, size_t *used);
/* The server closed the connection: HUP_DONE if that ended a body read
 * until close, else HUP_ERROR. */
enum hup_parse_rc	 hup_parse_eof(struct hup_parse *);
const struct hup_resp	*hup_parse_resp(const struct hup_parse *);
const char		*hup_parse_error(const struct hup_parse *);
/* After HUP_DONE: may the connection carry another request? */
int			 hup_parse_keep_alive(const struct hup_parse *);
/* Nothing of a response read yet. */
int			 hup_parse_idle(const struct hup_parse *);

#endif
