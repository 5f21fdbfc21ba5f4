/*
 * hup_parse.c -- HTTP/1.1 responses from upstream servers (hup_parse.h).
 *
 * Two passes over the head, as http1.c does for requests: our scanner
 * copies the head into a buffer of its own while checking every byte
 * (llhttp 8.1 lets bare LF, obs-fold and some controls through even in
 * strict mode), then checks the lines and the framing fields; llhttp then
 * parses the same head and owns the body.  The fields handed out point
 * into our copy, so they stay valid while the body streams.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "llhttp.h"

#include "hfield.h"
#include "hup_parse.h"
#include "resp.h"
#include "tchar.h"
#include "wire.h"

enum hup_phase {
	HP_IDLE,	/* between responses: a byte now is a fault */
	HP_HEAD,	/* reading the head into buf */
	HP_BODY,	/* llhttp alone */
	HP_DONE,	/* complete; a byte now is a fault */
	HP_ERROR,
};

struct hup_parse {
	llhttp_t	 ll;
	llhttp_settings_t settings;
	enum hup_phase	 phase;
	int		 is_head;
	int		 complete;	/* llhttp's on_message_complete ran */
	int		 keep_alive;
	const char	*error;
	void		(*on_body)(void *, const char *, size_t);
	void		*arg;
	char		*buf;		/* the head, as received; grows */
	size_t		 len;		/* to HUP_MAX_HEAD, kept for reuse */
	size_t		 line;		/* bytes of the line being read */
	size_t		 cap;
	struct wire_field fields[HUP_MAX_FIELDS];
	struct hup_resp	 resp;
};

static int
hup_on_headers_complete(llhttp_t *ll)
{
	struct hup_parse *p = ll->data;

	/* 1: no body, whatever the fields say (a response to HEAD). */
	return p->is_head ? 1 : 0;
}

static int
hup_on_body(llhttp_t *ll, const char *at, size_t n)
{
	struct hup_parse *p = ll->data;

	p->on_body(p->arg, at, n);
	return 0;
}

/* Stop right after the message: bytes after it are the caller's to judge. */
static int
hup_on_message_complete(llhttp_t *ll)
{
	struct hup_parse *p = ll->data;

	p->complete = 1;
	p->keep_alive = llhttp_should_keep_alive(ll);
	return HPE_PAUSED;
}

struct hup_parse *
hup_parse_new(void (*on_body)(void *, const char *, size_t), void *arg)
{
	struct hup_parse *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	llhttp_settings_init(&p->settings);
	p->settings.on_headers_complete = hup_on_headers_complete;
	p->settings.on_body = hup_on_body;
	p->settings.on_message_complete = hup_on_message_complete;
	p->on_body = on_body;
	p->arg = arg;
	p->phase = HP_IDLE;
	return p;
}

void
hup_parse_free(struct hup_parse *p)
{
	if (p != NULL)
		free(p->buf);
	free(p);
}

/* Room for need more head bytes: 0, or -1 (no memory). */
static int
hup_reserve(struct hup_parse *p, size_t need)
{
	size_t ncap;
	char *nb;

	if (p->len + need <= p->cap)
		return 0;
	for (ncap = p->cap ? p->cap : 1024; ncap < p->len + need; ncap *= 2)
		continue;
	if (ncap > HUP_MAX_HEAD)
		ncap = HUP_MAX_HEAD;
	if ((nb = realloc(p->buf, ncap)) == NULL)
		return -1;
	p->buf = nb;
	p->cap = ncap;
	return 0;
}

void
hup_parse_start(struct hup_parse *p, int is_head)
{
	llhttp_init(&p->ll, HTTP_RESPONSE, &p->settings);
	p->ll.data = p;
	p->phase = HP_HEAD;
	p->is_head = is_head;
	p->complete = 0;
	p->keep_alive = 0;
	p->error = NULL;
	p->len = 0;
	p->line = 0;
	memset(&p->resp, 0, sizeof(p->resp));
}

static enum hup_parse_rc
hup_fail(struct hup_parse *p, const char *why)
{
	p->phase = HP_ERROR;
	p->error = why;
	return HUP_ERROR;
}

/*
 * Check head bytes, then copy them: CRLF only, no NUL or other control
 * but HTAB.  Returns how many bytes of q were taken; *end is set when the
 * empty line ending the head was.  One pass over the bytes, one copy.
 */
static size_t
hup_scan(struct hup_parse *p, const char *q, size_t n, int *end)
{
	size_t i, take = n;
	unsigned char c, prev = p->len > 0 ?
	    (unsigned char)p->buf[p->len - 1] : 0;
	const char *why = NULL;

	*end = 0;
	if (take > HUP_MAX_HEAD - p->len)
		take = HUP_MAX_HEAD - p->len;
	for (i = 0; i < take && why == NULL; i++, prev = c) {
		c = (unsigned char)q[i];
		p->line++;
		if (prev == '\r' && c != '\n')
			why = "bare CR in the response head";
		else if (c >= 0x20 && c != 0x7f)
			continue;
		else if (c == '\n') {
			if (prev != '\r')
				why = "bare LF in the response head";
			else if (p->line == 2 && p->len + i + 1 >= 4) {
				*end = 1;
				take = i + 1;
			}
			p->line = 0;
		} else if (c != '\r' && c != '\t')
			why = c == 0 ? "NUL in the response head" :
			    "control character in the response head";
	}
	if (why != NULL) {
		hup_fail(p, why);
		return i - 1;
	}
	if (!*end && take < n)
		why = "response head too large";
	if (why == NULL && hup_reserve(p, take) == -1)
		why = "response head too large";
	if (why != NULL) {
		hup_fail(p, why);
		return take;
	}
	memcpy(p->buf + p->len, q, take);
	p->len += take;
	return take;
}

/* "HTTP/1.x NNN reason": the version and the status, or -1. */
static int
hup_status_line(struct hup_parse *p, const char *l, size_t n)
{
	size_t i;

	if (n < 12 || memcmp(l, "HTTP/1.", 7) != 0 ||
	    (l[7] != '0' && l[7] != '1') || l[8] != ' ' ||
	    l[9] < '1' || l[9] > '9' || l[10] < '0' || l[10] > '9' ||
	    l[11] < '0' || l[11] > '9' || (n > 12 && l[12] != ' '))
		return -1;
	for (i = 13; i < n; i++) {
		if (!(tchar_class[(unsigned char)l[i]] & TCHAR_VALUE))
			return -1;
	}
	p->resp.minor = l[7] - '0';
	p->resp.status = (l[9] - '0') * 100 + (l[10] - '0') * 10 +
	    (l[11] - '0');
	return 0;
}

static int
hup_name_is(const struct wire_field *f, const char *name)
{
	return hfield_name_is(f->name.p, f->name.len, name);
}

/* One field line "name: value": a token, no space before the colon
 * (obs-fold, a line starting with SP or HTAB, fails here too). */
static const char *
hup_field(struct wire_field *f, const char *l, size_t n)
{
	size_t i, a, b;

	for (i = 0; i < n && l[i] != ':'; i++)
		if (!tchar_is((unsigned char)l[i]))
			return l[i] == ' ' || l[i] == '\t' ? (i == 0 ?
			    "obs-fold in the response head" :
			    "space before a colon") : "bad field name";
	if (i == 0 || i == n)
		return "bad field line";
	for (a = i + 1; a < n && tchar_is_ows(l[a]); a++)
		continue;
	for (b = n; b > a && tchar_is_ows(l[b - 1]); b--)
		continue;
	f->name.p = l;
	f->name.len = i;
	f->value.p = l + a;
	f->value.len = b - a;
	return NULL;
}

/* The framing fields: one Content-Length of digits, or Transfer-Encoding
 * exactly "chunked", never both. */
static const char *
hup_framing(struct hup_parse *p, const struct wire_field *f, unsigned n)
{
	unsigned i, ncl = 0, nte = 0;
	int64_t cl = -1;
	size_t k;

	for (i = 0; i < n; i++) {
		if (hup_name_is(&f[i], "content-length")) {
			if (ncl++ > 0)
				return "more than one Content-Length";
			if (f[i].value.len == 0 || f[i].value.len > 15)
				return "bad Content-Length";
			for (cl = 0, k = 0; k < f[i].value.len; k++) {
				if (f[i].value.p[k] < '0' ||
				    f[i].value.p[k] > '9')
					return "bad Content-Length";
				cl = cl * 10 + (f[i].value.p[k] - '0');
			}
		} else if (hup_name_is(&f[i], "transfer-encoding")) {
			if (nte++ > 0 || f[i].value.len != 7 ||
			    strncasecmp(f[i].value.p, "chunked", 7) != 0)
				return "Transfer-Encoding other than chunked";
		}
	}
	if (ncl > 0 && nte > 0)
		return "both Content-Length and Transfer-Encoding";
	p->resp.content_length = cl;
	p->resp.chunked = nte > 0;
	return NULL;
}

/* The lines of a complete head: status line, fields; then what is
 * forwarded (end-to-end fields only). */
static const char *
hup_lines(struct hup_parse *p)
{
	const char *s = p->buf, *e = p->buf + p->len - 2, *eol, *why;
	struct wire_field all[HUP_MAX_FIELDS];
	const struct wire_field *conn = NULL;
	unsigned n = 0, i, k = 0;

	eol = memchr(s, '\r', (size_t)(e - s));
	if (hup_status_line(p, s, (size_t)(eol - s)) == -1)
		return "bad status line";
	for (s = eol + 2; s < e; s = eol + 2) {
		eol = memchr(s, '\r', (size_t)(e - s));
		if (n == HUP_MAX_FIELDS)
			return "too many fields in the response head";
		if ((why = hup_field(&all[n], s, (size_t)(eol - s))) != NULL)
			return why;
		if (hup_name_is(&all[n], "connection"))
			conn = &all[n];
		n++;
	}
	if ((why = hup_framing(p, all, n)) != NULL)
		return why;
	for (i = 0; i < n; i++) {
		if (hfield_hop_by_hop(all[i].name.p, all[i].name.len) ||
		    (conn != NULL && hfield_conn_listed(conn->value.p,
		    conn->value.len, all[i].name.p, all[i].name.len)))
			continue;
		p->fields[k++] = all[i];
	}
	p->resp.fields = p->fields;
	p->resp.nfields = k;
	return NULL;
}

/* A whole head is in buf: check it, then let llhttp parse it. */
static enum hup_parse_rc
hup_head(struct hup_parse *p)
{
	const char *why;
	llhttp_errno_t e;

	if ((why = hup_lines(p)) != NULL)
		return hup_fail(p, why);
	if (p->resp.status < 200) {
		/* 100 Continue, 103 Early Hints: informational, dropped; the
		 * final response follows.  Any other 1xx (101 Switching
		 * Protocols ...) is nothing we asked for. */
		if (p->resp.status != 100 && p->resp.status != 103)
			return hup_fail(p, "1xx response other than 100/103");
		if (p->resp.content_length >= 0 || p->resp.chunked)
			return hup_fail(p, "1xx response with a body");
		p->len = 0;
		p->line = 0;
		return HUP_MORE;
	}
	e = llhttp_execute(&p->ll, p->buf, p->len);
	if (e != HPE_OK && !(e == HPE_PAUSED && p->complete))
		return hup_fail(p, llhttp_get_error_reason(&p->ll) != NULL ?
		    llhttp_get_error_reason(&p->ll) : llhttp_errno_name(e));
	if (p->complete && llhttp_get_error_pos(&p->ll) != p->buf + p->len)
		return hup_fail(p, "bytes after a complete response");
	p->resp.complete = p->complete;
	p->phase = p->complete ? HP_DONE : HP_BODY;
	return HUP_HEAD;
}

static enum hup_parse_rc
hup_body(struct hup_parse *p, const char *q, size_t n, size_t *used)
{
	llhttp_errno_t e;

	e = llhttp_execute(&p->ll, q, n);
	if (e == HPE_OK) {
		*used = n;
		return HUP_MORE;
	}
	if (e == HPE_PAUSED && p->complete) {
		/* Bytes past the end stay unused: the caller judges them (a
		 * next feed fails), after the response went out whole. */
		*used = (size_t)(llhttp_get_error_pos(&p->ll) - q);
		p->phase = HP_DONE;
		return HUP_DONE;
	}
	*used = 0;
	return hup_fail(p, llhttp_get_error_reason(&p->ll) != NULL ?
	    llhttp_get_error_reason(&p->ll) : llhttp_errno_name(e));
}

enum hup_parse_rc
hup_parse_feed(struct hup_parse *p, const char *q, size_t n, size_t *used)
{
	size_t k, off = 0;
	enum hup_parse_rc rc;
	int end;

	*used = 0;
	switch (p->phase) {
	case HP_IDLE:
	case HP_DONE:
		return n == 0 ? HUP_MORE :
		    hup_fail(p, "bytes after a complete response");
	case HP_ERROR:
		return HUP_ERROR;
	case HP_BODY:
		return hup_body(p, q, n, used);
	case HP_HEAD:
		break;
	}
	/* Heads (after a 100 or 103, another one) until the final one. */
	while (off < n) {
		k = hup_scan(p, q + off, n - off, &end);
		off += k;
		*used = off;
		if (p->phase == HP_ERROR)
			return HUP_ERROR;
		if (!end)
			return HUP_MORE;
		if ((rc = hup_head(p)) != HUP_MORE)
			return rc;
	}
	return HUP_MORE;
}

enum hup_parse_rc
hup_parse_eof(struct hup_parse *p)
{
	llhttp_errno_t e;

	if (p->phase == HP_DONE)
		return HUP_DONE;
	if (p->phase != HP_BODY)
		return hup_fail(p, p->phase == HP_HEAD && p->len == 0 ?
		    "connection closed before a response" :
		    "connection closed in the response head");
	e = llhttp_finish(&p->ll);
	if ((e == HPE_OK || e == HPE_PAUSED) && p->complete) {
		p->phase = HP_DONE;
		p->keep_alive = 0;
		return HUP_DONE;
	}
	return hup_fail(p, "connection closed mid-body");
}

const struct hup_resp *
hup_parse_resp(const struct hup_parse *p)
{
	return &p->resp;
}

const char *
hup_parse_error(const struct hup_parse *p)
{
	return p->error != NULL ? p->error : "no error";
}

int
hup_parse_keep_alive(const struct hup_parse *p)
{
	return p->phase == HP_DONE && p->keep_alive;
}

int
hup_parse_idle(const struct hup_parse *p)
{
	return p->phase == HP_IDLE || (p->phase == HP_HEAD && p->len == 0);
}
