/*
 * http1.h -- HTTP/1.1 request parsing on llhttp, without I/O.
 *
 * The caller feeds bytes; the parser calls back with the request head, body
 * pieces and the end of the message, and stops after each complete message
 * so the caller answers requests one at a time, in order (pipelined bytes
 * stay unconsumed until http1_next()).  It applies the checks llhttp leaves
 * to us (see docs/http.md): bare LF, obs-fold, whitespace before the colon,
 * trailing whitespace in values, both Content-Length and Transfer-Encoding,
 * differing Content-Lengths, Transfer-Encoding on HTTP/1.0 or not ending in
 * chunked, missing Host on HTTP/1.1, and the limits.  Any failure is final
 * for the connection: the caller answers http1_error_status() and closes.
 */
#ifndef INGRESSD_HTTP1_H
#define INGRESSD_HTTP1_H

#include <stddef.h>
#include <stdint.h>

struct http1;

struct http1_limits {
	size_t		 max_request_line;	/* 414 */
	size_t		 max_header_bytes;	/* 431: all header lines together */
	unsigned	 max_headers;		/* 431 */
	uint64_t	 max_body;		/* 413 */
};

struct http1_field {
	const char	*name;		/* NUL-terminated copies owned by the */
	size_t		 name_len;	/* parser, valid until http1_next() */
	const char	*value;
	size_t		 value_len;
};

struct http1_request {
	const char	*method;	/* "GET"; NUL-terminated */
	size_t		 method_len;
	const char	*target;	/* origin-form: "/p/a?q=1" (from an */
					/* absolute-form target: its path) */
	size_t		 target_len;
	size_t		 path_len;	/* target up to '?' */
	int		 major, minor;	/* 1.0 or 1.1 */
	struct http1_field *fields;
	unsigned	 nfields;
	const char	*host;		/* absolute-form authority, else the */
					/* Host header, else NULL */
	size_t		 host_len;
	int64_t		 content_length; /* -1 when none */
	int		 chunked;
	int		 keep_alive;	/* llhttp's verdict for this message */
	int		 expect_continue; /* "Expect: 100-continue" */
	int		 is_head;
	int		 has_body;	/* content_length > 0 or chunked */
};

struct http1_callbacks {
	/* The head is complete.  Return 0 to go on, or an HTTP status
	 * (e.g. 404) to stop: the parser then stops with that as error. */
	int	(*on_head)(void *arg, struct http1_request *);
	/* A piece of body, pointing into the bytes given to http1_feed(). */
	int	(*on_body)(void *arg, const char *p, size_t n);
	/* The whole message has been read; the parser is now paused. */
	int	(*on_end)(void *arg);
};

enum http1_state {
	HTTP1_MORE = 0,		/* consumed all it was given, wants more */
	HTTP1_DONE,		/* a message ended: stopped after it */
	HTTP1_ERROR,		/* see http1_error_status/_reason */
};

struct http1	*http1_new(const struct http1_limits *,
		    const struct http1_callbacks *, void *arg);
void		 http1_free(struct http1 *);
/* Feed bytes; *consumed says how many were used (all, unless it stopped). */
enum http1_state http1_feed(struct http1 *, const char *p, size_t n,
		    size_t *consumed);
/* The client closed its side: completes an HTTP/1.0 style read or errors. */
enum http1_state http1_finish(struct http1 *);
/* Start on the next message after HTTP1_DONE. */
void		 http1_next(struct http1 *);
int		 http1_error_status(const struct http1 *);	/* 400, 413... */
const char	*http1_error_reason(const struct http1 *);
/* True when the parser is between messages (nothing of the next read). */
int		 http1_idle(const struct http1 *);
const struct http1_request *http1_request(const struct http1 *);

#endif
