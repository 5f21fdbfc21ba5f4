/*
 * hup_req.c -- request heads and body framing toward HTTP upstreams
 * (hup_req.h).
 */
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "hfield.h"
#include "hup_req.h"
#include "wire.h"

static int
hup_req_name_is(const struct wire_field *f, const char *name)
{
	return hfield_name_is(f->name.p, f->name.len, name);
}

int
hup_req_is_head(const struct wire_request *r)
{
	return r->method.len == 4 && memcmp(r->method.p, "HEAD", 4) == 0;
}

int
hup_req_is_idempotent(const struct wire_request *r)
{
	static const char *const m[] = {
		"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE",
	};
	size_t i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (r->method.len == strlen(m[i]) &&
		    memcmp(r->method.p, m[i], r->method.len) == 0)
			return 1;
	return 0;
}

void
hup_req_head(struct evbuffer *out, const struct wire_request *r,
    int has_body, const char *host, int *chunked)
{
	unsigned i;
	int have_host = 0, have_cl = 0;

	evbuffer_add(out, r->method.p, r->method.len);
	evbuffer_add(out, " ", 1);
	evbuffer_add(out, r->target.p, r->target.len);
	evbuffer_add(out, " HTTP/1.1\r\n", 11);
	for (i = 0; i < r->nfields; i++) {
		const struct wire_field *f = &r->fields[i];

		/* We send the body as it comes: the server's 100 Continue
		 * would only be dropped on the way back. */
		if (hup_req_name_is(f, "expect"))
			continue;
		if (hup_req_name_is(f, "host"))
			have_host = 1;
		else if (hup_req_name_is(f, "content-length"))
			have_cl = 1;
		evbuffer_add(out, f->name.p, f->name.len);
		evbuffer_add(out, ": ", 2);
		evbuffer_add(out, f->value.p, f->value.len);
		evbuffer_add(out, "\r\n", 2);
	}
	if (!have_host)
		evbuffer_add_printf(out, "Host: %s\r\n", host);
	if (r->request_id.len > 0) {
		evbuffer_add(out, "X-Request-Id: ", 14);
		evbuffer_add(out, r->request_id.p, r->request_id.len);
		evbuffer_add(out, "\r\n", 2);
	}
	*chunked = has_body && !have_cl;
	if (*chunked)
		evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
	evbuffer_add(out, "\r\n", 2);
}

void
hup_req_body(struct evbuffer *out, int chunked, const void *p, size_t n)
{
	if (n == 0)
		return;		/* a zero chunk would end the body */
	if (chunked)
		evbuffer_add_printf(out, "%zx\r\n", n);
	evbuffer_add(out, p, n);
	if (chunked)
		evbuffer_add(out, "\r\n", 2);
}

void
hup_req_end(struct evbuffer *out, int chunked)
{
	if (chunked)
		evbuffer_add(out, "0\r\n\r\n", 5);
}

void
hup_req_probe(struct evbuffer *out, const char *path, const char *host)
{
	evbuffer_add_printf(out, "GET %s HTTP/1.1\r\nHost: %s\r\n"
	    "User-Agent: ingressd-health\r\nAccept: */*\r\n\r\n", path, host);
}
