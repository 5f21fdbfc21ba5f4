/*
 * resp.c -- response heads, chunked framing, error responses (see resp.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "hfield.h"
#include "resp.h"
#include "tchar.h"
#include "wire.h"

struct resp_status {
	int		 code;
	const char	*reason;
};

static const struct resp_status resp_statuses[] = {
	{ 100, "Continue" }, { 101, "Switching Protocols" },
	{ 200, "OK" }, { 201, "Created" }, { 202, "Accepted" },
	{ 203, "Non-Authoritative Information" }, { 204, "No Content" },
	{ 205, "Reset Content" }, { 206, "Partial Content" },
	{ 300, "Multiple Choices" }, { 301, "Moved Permanently" },
	{ 302, "Found" }, { 303, "See Other" }, { 304, "Not Modified" },
	{ 307, "Temporary Redirect" }, { 308, "Permanent Redirect" },
	{ 400, "Bad Request" }, { 401, "Unauthorized" },
	{ 403, "Forbidden" }, { 404, "Not Found" },
	{ 405, "Method Not Allowed" }, { 406, "Not Acceptable" },
	{ 408, "Request Timeout" }, { 409, "Conflict" }, { 410, "Gone" },
	{ 411, "Length Required" }, { 412, "Precondition Failed" },
	{ 413, "Content Too Large" }, { 414, "URI Too Long" },
	{ 415, "Unsupported Media Type" }, { 416, "Range Not Satisfiable" },
	{ 417, "Expectation Failed" }, { 421, "Misdirected Request" },
	{ 422, "Unprocessable Content" }, { 426, "Upgrade Required" },
	{ 428, "Precondition Required" }, { 429, "Too Many Requests" },
	{ 431, "Request Header Fields Too Large" },
	{ 500, "Internal Server Error" }, { 501, "Not Implemented" },
	{ 502, "Bad Gateway" }, { 503, "Service Unavailable" },
	{ 504, "Gateway Timeout" }, { 505, "HTTP Version Not Supported" },
};

/* Decimal digits of v into buf (no NUL); returns the length. */
static size_t
resp_u64(char *buf, uint64_t v)
{
	char tmp[20];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

/* "HTTP/1.x NNN Reason\r\n" without printf: it is on every response. */
static void
resp_status_line(struct evbuffer *out, int minor, int status)
{
	const char *reason = resp_reason(status);
	char line[64];
	size_t n, rlen = strlen(reason);

	memcpy(line, "HTTP/1.1 ", 9);
	line[7] = minor == 0 ? '0' : '1';
	n = 9 + resp_u64(line + 9, (uint64_t)status);
	line[n++] = ' ';
	if (n + rlen + 2 > sizeof(line))
		rlen = sizeof(line) - n - 2;
	memcpy(line + n, reason, rlen);
	n += rlen;
	line[n++] = '\r';
	line[n++] = '\n';
	evbuffer_add(out, line, n);
}

static void
resp_content_length_field(struct evbuffer *out, uint64_t clen)
{
	char line[48];
	size_t n;

	memcpy(line, "content-length: ", 16);
	n = 16 + resp_u64(line + 16, clen);
	line[n++] = '\r';
	line[n++] = '\n';
	evbuffer_add(out, line, n);
}

const char *
resp_reason(int status)
{
	size_t i;

	for (i = 0; i < sizeof(resp_statuses) / sizeof(resp_statuses[0]); i++) {
		if (resp_statuses[i].code == status)
			return resp_statuses[i].reason;
	}
	return status < 200 ? "Informational" : status < 300 ? "OK" :
	    status < 400 ? "Redirect" : status < 500 ? "Client Error" :
	    "Server Error";
}

int64_t
resp_content_length(const struct wire_field *f, unsigned n)
{
	int64_t v = -1, x;
	unsigned i;
	size_t k;

	for (i = 0; i < n; i++) {
		if (!hfield_name_is(f[i].name.p, f[i].name.len,
		    "content-length"))
			continue;
		if (f[i].value.len == 0 || f[i].value.len > 18)
			return -2;
		for (x = 0, k = 0; k < f[i].value.len; k++) {
			if (f[i].value.p[k] < '0' || f[i].value.p[k] > '9')
				return -2;
			x = x * 10 + (f[i].value.p[k] - '0');
		}
		if (v != -1 && v != x)
			return -2;
		v = x;
	}
	return v;
}

/* Bytes appended to a buffer reserved for the whole head. */
struct resp_buf {
	char		*p;
	size_t		 len;
};

static void
resp_put(struct resp_buf *b, const char *s, size_t n)
{
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/*
 * The head is built in space reserved once in the output buffer and
 * committed once: one evbuffer operation per response, not one per piece.
 */
void
resp_head(struct evbuffer *out, int minor, int status,
    const struct wire_field *f, unsigned n, const char *request_id,
    enum resp_framing framing, int64_t clen, int keep_alive)
{
	const char *reason = resp_reason(status);
	struct evbuffer_iovec iov;
	struct resp_buf b;
	size_t size, rlen = strlen(reason), ridlen = 0;
	unsigned i;
	int have_rid = 0;

	if (request_id != NULL)
		ridlen = strlen(request_id);
	size = 16 + rlen + 16 + ridlen + 48 + 30 + 32;
	for (i = 0; i < n; i++)
		size += f[i].name.len + f[i].value.len + 4;
	if (evbuffer_reserve_space(out, (ev_ssize_t)size, &iov, 1) < 1)
		return;
	b.p = iov.iov_base;
	b.len = 0;
	resp_put(&b, minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ", 9);
	b.len += resp_u64(b.p + b.len, (uint64_t)status);
	resp_put(&b, " ", 1);
	resp_put(&b, reason, rlen);
	resp_put(&b, "\r\n", 2);
	for (i = 0; i < n; i++) {
		if (hfield_hop_by_hop(f[i].name.p, f[i].name.len) ||
		    hfield_name_is(f[i].name.p, f[i].name.len,
		    "content-length"))
			continue;
		if (hfield_name_is(f[i].name.p, f[i].name.len, "x-request-id"))
			have_rid = 1;
		resp_put(&b, f[i].name.p, f[i].name.len);
		resp_put(&b, ": ", 2);
		resp_put(&b, f[i].value.p, f[i].value.len);
		resp_put(&b, "\r\n", 2);
	}
	if (!have_rid && request_id != NULL) {
		resp_put(&b, "x-request-id: ", 14);
		resp_put(&b, request_id, ridlen);
		resp_put(&b, "\r\n", 2);
	}
	if (clen >= 0 && (framing == RESP_LENGTH || framing == RESP_NONE)) {
		resp_put(&b, "content-length: ", 16);
		b.len += resp_u64(b.p + b.len, (uint64_t)clen);
		resp_put(&b, "\r\n", 2);
	} else if (framing == RESP_CHUNKED)
		resp_put(&b, "transfer-encoding: chunked\r\n", 28);
	if (!keep_alive)
		resp_put(&b, "connection: close\r\n\r\n", 21);
	else if (minor == 0)
		resp_put(&b, "connection: keep-alive\r\n\r\n", 26);
	else
		resp_put(&b, "\r\n", 2);
	iov.iov_len = b.len;
	evbuffer_commit_space(out, &iov, 1);
}

void
resp_chunk(struct evbuffer *out, struct evbuffer *data)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = evbuffer_get_length(data), k = 0, i;
	char line[20], tmp[16];

	if (n == 0)
		return;
	do {
		tmp[k++] = hex[n & 15];
		n >>= 4;
	} while (n != 0);
	for (i = 0; i < k; i++)
		line[i] = tmp[k - 1 - i];
	line[k++] = '\r';
	line[k++] = '\n';
	evbuffer_add(out, line, k);
	evbuffer_add_buffer(out, data);
	evbuffer_add(out, "\r\n", 2);
}

void
resp_chunk_end(struct evbuffer *out)
{
	evbuffer_add(out, "0\r\n\r\n", 5);
}

/* A field the trailer section may carry, with bytes a field may hold. */
static int
resp_trailer_ok(const struct wire_field *f)
{
	size_t i;

	if (f->name.len == 0 || hfield_hop_by_hop(f->name.p, f->name.len) ||
	    hfield_name_is(f->name.p, f->name.len, "content-length") ||
	    hfield_name_is(f->name.p, f->name.len, "host"))
		return 0;
	for (i = 0; i < f->name.len; i++)
		if (!tchar_is((unsigned char)f->name.p[i]))
			return 0;
	for (i = 0; i < f->value.len; i++)
		if (!(tchar_class[(unsigned char)f->value.p[i]] & TCHAR_VALUE))
			return 0;
	return 1;
}

size_t
resp_chunk_trailers(struct evbuffer *out, const struct wire_field *f,
    unsigned n)
{
	size_t before = evbuffer_get_length(out);
	unsigned i;

	evbuffer_add(out, "0\r\n", 3);
	for (i = 0; i < n; i++) {
		if (!resp_trailer_ok(&f[i]))
			continue;
		evbuffer_add(out, f[i].name.p, f[i].name.len);
		evbuffer_add(out, ": ", 2);
		evbuffer_add(out, f[i].value.p, f[i].value.len);
		evbuffer_add(out, "\r\n", 2);
	}
	evbuffer_add(out, "\r\n", 2);
	return evbuffer_get_length(out) - before;
}

/* A comma-separated list of t-codings, each maybe with parameters. */
int
resp_te_trailers(const char *v, size_t len)
{
	size_t i = 0, start;

	while (i < len) {
		while (i < len && (v[i] == ',' || tchar_is_ows(v[i])))
			i++;
		start = i;
		while (i < len && tchar_is((unsigned char)v[i]))
			i++;
		if (i - start == 8 && strncasecmp(v + start, "trailers", 8) == 0)
			return 1;
		while (i < len && v[i] != ',')
			i++;		/* parameters, or a bad byte */
	}
	return 0;
}

void
resp_simple(struct evbuffer *out, int minor, int status, const char *ctype,
    const char *body, size_t len, const char *request_id, int keep_alive,
    int head_only)
{
	resp_status_line(out, minor, status);
	evbuffer_add(out, "content-type: ", 14);
	evbuffer_add(out, ctype, strlen(ctype));
	evbuffer_add(out, "\r\n", 2);
	resp_content_length_field(out, len);
	if (request_id != NULL && *request_id != '\0') {
		evbuffer_add(out, "x-request-id: ", 14);
		evbuffer_add(out, request_id, strlen(request_id));
		evbuffer_add(out, "\r\n", 2);
	}
	if (status == 503)
		evbuffer_add(out, "retry-after: 1\r\n", 16);
	else if (status == 401)		/* RFC 6750 3: the scheme we take */
		evbuffer_add(out, "www-authenticate: Bearer\r\n", 26);
	if (!keep_alive)
		evbuffer_add(out, "connection: close\r\n", 19);
	else if (minor == 0)
		evbuffer_add(out, "connection: keep-alive\r\n", 24);
	evbuffer_add(out, "\r\n", 2);
	if (!head_only)
		evbuffer_add(out, body, len);
}

void
resp_error(struct evbuffer *out, int minor, int status, const char *why,
    const char *request_id, int keep_alive, int head_only)
{
	char body[512];
	int n;

	n = snprintf(body, sizeof(body), "%d %s%s%s\n", status,
	    resp_reason(status), why != NULL ? ": " : "", why != NULL ? why : "");
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(body))
		n = sizeof(body) - 1;
	resp_simple(out, minor, status, "text/plain; charset=utf-8", body,
	    (size_t)n, request_id, keep_alive, head_only);
}
