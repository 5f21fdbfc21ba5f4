/*
 * http1_scan.c -- the raw pre-scanner of request heads and trailers.
 *
 * Two parsers look at every byte of a request head: this scanner checks
 * the raw syntax llhttp 8.1 lets through even in strict mode, and counts
 * the limits; llhttp then parses the same bytes and owns the framing.
 * The scanner runs first over what was fed and stops at its first error,
 * so the first error by position wins and the verdict does not depend on
 * how the bytes were split.
 *
 * Fixed caps, whatever the configured limits (http1_scan.h): a request is
 * forwarded in one REQUEST frame whose strings are length-prefixed
 * (src/wire.h: field names str8, values and the target str16), so a longer
 * name, value or target could be accepted here and then never be encoded.
 * A value is counted raw, from the colon to the CRLF, OWS included.
 */

#include <stdlib.h>

#include "http1_scan.h"
#include "tchar.h"

/* Empty lines (CRLF) tolerated before a request line (RFC 9112 2.2). */
#define HTTP1_MAX_EMPTY_LINES	8

enum scan_state {
	SC_START,	/* before the request line; empty lines allowed */
	SC_START_LF,
	SC_METHOD,
	SC_TARGET0,	/* first byte of the request target */
	SC_TARGET,
	SC_VERSION,	/* "HTTP/d.d", position in s->vpos */
	SC_RL_CR,
	SC_RL_LF,
	SC_LINE,	/* start of a field line or of the empty line */
	SC_NAME,
	SC_VALUE,
	SC_LINE_LF,
	SC_END_LF,
	SC_END,		/* the empty line ending the section was read */
};

static int
sc_fail(struct http1_scan *s, int status, const char *reason)
{
	s->status = status;
	s->reason = reason;
	return -1;
}

static int
sc_rl_count(struct http1_scan *s)
{
	if (++s->rl_len > s->max_request_line)
		return sc_fail(s, 414, "request line too long");
	return 0;
}

static int
sc_hdr_count(struct http1_scan *s)
{
	if (++s->hdr_bytes > s->max_header_bytes)
		return sc_fail(s, 431, s->trailer ?
		    "trailer section too large" : "header section too large");
	return 0;
}

/* "HTTP/" DIGIT "." DIGIT; anything but 1.0 and 1.1 is 505. */
static int
sc_version(struct http1_scan *s, unsigned char c)
{
	static const char	 proto[] = "HTTP/";

	if (s->vpos < 5) {
		if (c != (unsigned char)proto[s->vpos])
			return sc_fail(s, 400, "malformed HTTP version");
	} else if (s->vpos == 6) {
		if (c != '.')
			return sc_fail(s, 400, "malformed HTTP version");
	} else {
		if (c < '0' || c > '9')
			return sc_fail(s, 400, "malformed HTTP version");
		if (s->vpos == 5)
			s->major = c - '0';
		else {
			s->minor = c - '0';
			if (s->major != 1 || s->minor > 1)
				return sc_fail(s, 505,
				    "unsupported HTTP version");
			s->sc = SC_RL_CR;
		}
	}
	s->vpos++;
	return 0;
}

/* The request line: method SP target SP version CRLF, single spaces. */
static int
sc_request_line(struct http1_scan *s, unsigned char c)
{
	if (s->sc != SC_RL_CR && sc_rl_count(s) == -1)
		return -1;
	switch (s->sc) {
	case SC_METHOD:
		if (c == ' ')
			s->sc = SC_TARGET0;
		else if (c == '\n')
			return sc_fail(s, 400, "bare LF in request line");
		else if (!tchar_is(c))
			return sc_fail(s, 400, "invalid method");
		return 0;
	case SC_TARGET0:
	case SC_TARGET:
		if (c == ' ' && s->sc == SC_TARGET) {
			s->sc = SC_VERSION;
			s->vpos = 0;
		} else if (c < 0x21 || c > 0x7e || c == '#')
			return sc_fail(s, 400, "invalid request target");
		else if (++s->item_len > HTTP1_MAX_TARGET)
			return sc_fail(s, 414, "request target too long");
		else
			s->sc = SC_TARGET;
		return 0;
	case SC_VERSION:
		return sc_version(s, c);
	case SC_RL_CR:
		if (c == '\n')
			return sc_fail(s, 400, "bare LF in request line");
		if (c != '\r')
			return sc_fail(s, 400, "malformed request line");
		s->sc = SC_RL_LF;
		return 0;
	default:
		abort();
	}
}

/* A field line (header or trailer): tchar+ ":" value CRLF, no folding. */
static int
sc_field_line(struct http1_scan *s, unsigned char c)
{
	if (sc_hdr_count(s) == -1)
		return -1;
	switch (s->sc) {
	case SC_LINE:
		if (c == '\n')
			return sc_fail(s, 400, "bare LF in header");
		if (tchar_is_ows(c))
			return sc_fail(s, 400, "obs-fold in header");
		if (++s->nlines > s->max_headers)
			return sc_fail(s, 431, "too many header fields");
		if (c == ':')
			return sc_fail(s, 400, "empty header name");
		if (!tchar_is(c))
			return sc_fail(s, 400, "invalid char in header name");
		s->sc = SC_NAME;
		s->item_len = 1;
		return 0;
	case SC_NAME:
		if (c == ':') {
			s->sc = SC_VALUE;
			s->item_len = 0;
		} else if (tchar_is_ows(c))
			return sc_fail(s, 400, "whitespace before colon");
		else if (c == '\r' || c == '\n')
			return sc_fail(s, 400, "header line without colon");
		else if (!tchar_is(c))
			return sc_fail(s, 400, "invalid char in header name");
		else if (++s->item_len > HTTP1_MAX_NAME)
			return sc_fail(s, 431, "header name too long");
		return 0;
	case SC_VALUE:
		if (c == '\r')
			s->sc = SC_LINE_LF;
		else if (c == '\n')
			return sc_fail(s, 400, "bare LF in header");
		else if ((c < 0x20 && c != '\t') || c == 0x7f)
			return sc_fail(s, 400, "invalid char in header value");
		else if (++s->item_len > HTTP1_MAX_VALUE)
			return sc_fail(s, 431, "header value too long");
		return 0;
	case SC_LINE_LF:
		if (c != '\n')
			return sc_fail(s, 400, "bare CR in header");
		s->sc = SC_LINE;
		return 0;
	default:
		abort();
	}
}

static int
sc_byte(struct http1_scan *s, unsigned char c)
{
	switch (s->sc) {
	case SC_START:
		if (c == '\r') {
			s->sc = SC_START_LF;
			return 0;
		}
		if (c == '\n')
			return sc_fail(s, 400, "bare LF in request line");
		if (!tchar_is(c))
			return sc_fail(s, 400, "invalid method");
		s->sc = SC_METHOD;
		return sc_rl_count(s);
	case SC_START_LF:
		if (c != '\n')
			return sc_fail(s, 400, "bare CR in request line");
		if (++s->empty_lines > HTTP1_MAX_EMPTY_LINES)
			return sc_fail(s, 400, "too many empty lines");
		s->sc = SC_START;
		return 0;
	case SC_RL_LF:
		if (c != '\n')
			return sc_fail(s, 400, "bare CR in request line");
		s->sc = SC_LINE;
		return 0;
	case SC_LINE:
		if (c == '\r') {
			s->sc = SC_END_LF;
			return 0;
		}
		return sc_field_line(s, c);
	case SC_END_LF:
		if (c != '\n')
			return sc_fail(s, 400, "bare CR in header");
		s->sc = SC_END;
		return 0;
	case SC_NAME:
	case SC_VALUE:
	case SC_LINE_LF:
		return sc_field_line(s, c);
	case SC_END:
		abort();
	default:
		return sc_request_line(s, c);
	}
}

/*
 * A run of plain bytes in the current state, taken whole when it stays
 * within every limit; 0 when the byte path must decide.
 */
static size_t
scan_run(struct http1_scan *s, const unsigned char *p, size_t n)
{
	unsigned char cls;
	size_t r = 0, max_item;
	size_t *budget, budget_max;

	switch (s->sc) {
	case SC_NAME:
		cls = TCHAR_TOKEN;
		max_item = HTTP1_MAX_NAME;
		budget = &s->hdr_bytes;
		budget_max = s->max_header_bytes;
		break;
	case SC_VALUE:
		cls = TCHAR_VALUE;
		max_item = HTTP1_MAX_VALUE;
		budget = &s->hdr_bytes;
		budget_max = s->max_header_bytes;
		break;
	case SC_TARGET:
		cls = TCHAR_TARGET;
		max_item = HTTP1_MAX_TARGET;
		budget = &s->rl_len;
		budget_max = s->max_request_line;
		break;
	default:
		return 0;
	}
	while (r < n && (tchar_class[p[r]] & cls))
		r++;
	if (r == 0 || *budget + r > budget_max || s->item_len + r > max_item)
		return 0;
	*budget += r;
	s->item_len += r;
	return r;
}

/*
 * How many of the n bytes are clean.  Stops after the empty line ending the
 * section (*end set) or before a bad byte (s->status set).
 */
size_t
http1_scan_run(struct http1_scan *s, const char *p, size_t n, int *end)
{
	size_t	 i;

	*end = 0;
	for (i = 0; i < n; i++) {
		i += scan_run(s, (const unsigned char *)p + i, n - i);
		if (i == n)
			break;
		if (sc_byte(s, (unsigned char)p[i]) == -1)
			return i;
		if (s->sc == SC_END) {
			*end = 1;
			return i + 1;
		}
	}
	return n;
}

static void
scan_reset(struct http1_scan *s, enum scan_state sc)
{
	s->sc = sc;
	s->rl_len = 0;
	s->hdr_bytes = 0;
	s->item_len = 0;
	s->nlines = 0;
	s->empty_lines = 0;
	s->status = 0;
	s->reason = NULL;
}

void
http1_scan_init(struct http1_scan *s, size_t max_request_line,
    size_t max_header_bytes, unsigned max_headers)
{
	s->max_request_line = max_request_line;
	s->max_header_bytes = max_header_bytes;
	s->max_headers = max_headers;
	http1_scan_head(s);
}

void
http1_scan_head(struct http1_scan *s)
{
	scan_reset(s, SC_START);
	s->trailer = 0;
	s->vpos = 0;
	s->major = s->minor = 0;
}

void
http1_scan_trailer(struct http1_scan *s)
{
	scan_reset(s, SC_LINE);
	s->trailer = 1;
}

int
http1_scan_status(const struct http1_scan *s)
{
	return s->status;
}

const char *
http1_scan_reason(const struct http1_scan *s)
{
	return s->reason;
}

int
http1_scan_at_start(const struct http1_scan *s)
{
	return s->sc == SC_START;
}

int
http1_scan_major(const struct http1_scan *s)
{
	return s->major;
}

int
http1_scan_minor(const struct http1_scan *s)
{
	return s->minor;
}
