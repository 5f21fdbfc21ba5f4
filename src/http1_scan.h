/*
 * http1_scan.h -- the raw pre-scanner of HTTP/1.1 request heads and
 * trailer sections: bytes in, verdict out, nothing else.
 *
 * It checks the raw syntax llhttp 8.1 lets through even in strict mode
 * (bare LF and CR, obs-fold, whitespace before the colon, control
 * characters, empty names, odd request lines, versions) and counts the
 * limits.  It knows nothing of llhttp or of http1.c: http1.c runs it over
 * what it is fed and lets llhttp parse only the clean bytes before its
 * first error.  The struct is embedded by its user; its fields are private
 * to http1_scan.c.
 */
#ifndef INGRESSD_HTTP1_SCAN_H
#define INGRESSD_HTTP1_SCAN_H

#include <stddef.h>

/* Fixed caps on one item, whatever the limits (see http1_scan.c). */
#define HTTP1_MAX_NAME		255
#define HTTP1_MAX_VALUE		65535
#define HTTP1_MAX_TARGET	65535

struct http1_scan {
	int		 sc;		/* enum scan_state */
	int		 trailer;	/* scanning a trailer section */
	size_t		 max_request_line;
	size_t		 max_header_bytes;
	unsigned	 max_headers;
	size_t		 rl_len;
	size_t		 hdr_bytes;
	size_t		 item_len;	/* target, name or value */
	unsigned	 nlines;
	unsigned	 empty_lines;
	unsigned	 vpos;
	int		 major, minor;
	int		 status;	/* the error it stopped on, or 0 */
	const char	*reason;
};

void	 http1_scan_init(struct http1_scan *, size_t max_request_line,
	    size_t max_header_bytes, unsigned max_headers);
/* Start on a request head (version forgotten), or on a trailer section. */
void	 http1_scan_head(struct http1_scan *);
void	 http1_scan_trailer(struct http1_scan *);
/*
 * How many of the n bytes are clean.  Stops after the empty line ending
 * the section (*end set) or before a bad byte (http1_scan_status set).
 */
size_t	 http1_scan_run(struct http1_scan *, const char *p, size_t n,
	    int *end);
int	 http1_scan_status(const struct http1_scan *);	/* 0, 400, 414... */
const char *http1_scan_reason(const struct http1_scan *);
/* Nothing of a request line read yet (empty lines aside). */
int	 http1_scan_at_start(const struct http1_scan *);
/* The version once the request line is read: 1.0 or 1.1. */
int	 http1_scan_minor(const struct http1_scan *);
int	 http1_scan_major(const struct http1_scan *);

#endif
