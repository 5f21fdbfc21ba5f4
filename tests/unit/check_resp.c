/*
 * check_resp.c -- response heads (hop-by-hop dropped, framing headers,
 * X-Request-Id, Connection), Content-Length among fields, chunked framing
 * for many sizes, and error/simple responses.  Error bodies are checked
 * for what they must say (status, why, a matching Content-Length), not
 * byte for byte: their wording may change.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "resp.h"
#include "wire.h"

static struct evbuffer *out;

static void
setup(void)
{
	out = evbuffer_new();
	ck_assert_ptr_nonnull(out);
}

static void
teardown(void)
{
	evbuffer_free(out);
}

/* The whole buffer as a NUL-terminated string (drains it). */
static char *
take(void)
{
	size_t n = evbuffer_get_length(out);
	char *s = malloc(n + 1);

	ck_assert_ptr_nonnull(s);
	evbuffer_remove(out, s, n);
	s[n] = '\0';
	return (s);
}

static struct wire_field
fld(const char *name, const char *value)
{
	struct wire_field f;

	f.name.p = name;
	f.name.len = strlen(name);
	f.value.p = value;
	f.value.len = strlen(value);
	return (f);
}

/* The value of header name in head (case-insensitive), or NULL. */
static const char *
hdr(const char *head, const char *name, char *buf, size_t len)
{
	const char *p = strstr(head, "\r\n"), *e;
	size_t n = strlen(name);

	while (p != NULL && strncmp(p, "\r\n\r\n", 4) != 0) {
		p += 2;
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			p += n + 1;
			while (*p == ' ')
				p++;
			e = strstr(p, "\r\n");
			snprintf(buf, len, "%.*s", (int)(e - p), p);
			return (buf);
		}
		p = strstr(p, "\r\n");
	}
	return (NULL);
}

static int
count(const char *s, const char *sub)
{
	int n = 0;

	while ((s = strcasestr(s, sub)) != NULL) {
		n++;
		s++;
	}
	return (n);
}

START_TEST(test_reason)
{
	ck_assert_str_eq(resp_reason(200), "OK");
	ck_assert_str_eq(resp_reason(404), "Not Found");
	ck_assert_str_eq(resp_reason(413), "Content Too Large");
	ck_assert_str_eq(resp_reason(504), "Gateway Timeout");
	/* Unknown codes get their class. */
	ck_assert_str_eq(resp_reason(199), "Informational");
	ck_assert_str_eq(resp_reason(299), "OK");
	ck_assert_str_eq(resp_reason(399), "Redirect");
	ck_assert_str_eq(resp_reason(499), "Client Error");
	ck_assert_str_eq(resp_reason(599), "Server Error");
}
END_TEST

START_TEST(test_content_length)
{
	struct wire_field f[3];

	f[0] = fld("content-type", "text/plain");
	ck_assert_int_eq(resp_content_length(f, 1), -1);
	ck_assert_int_eq(resp_content_length(f, 0), -1);
	f[1] = fld("Content-Length", "0");
	ck_assert_int_eq(resp_content_length(f, 2), 0);
	f[1] = fld("content-length", "123456789012345678");	/* 18 digits */
	ck_assert_int_eq(resp_content_length(f, 2), 123456789012345678LL);
	f[1] = fld("content-length", "1234567890123456789");	/* 19 */
	ck_assert_int_eq(resp_content_length(f, 2), -2);
	f[1] = fld("content-length", "");
	ck_assert_int_eq(resp_content_length(f, 2), -2);
	f[1] = fld("content-length", "12a");
	ck_assert_int_eq(resp_content_length(f, 2), -2);
	f[1] = fld("content-length", "-1");
	ck_assert_int_eq(resp_content_length(f, 2), -2);
	f[1] = fld("content-length", " 5");
	ck_assert_int_eq(resp_content_length(f, 2), -2);
	/* Repeats must agree. */
	f[1] = fld("content-length", "5");
	f[2] = fld("CONTENT-LENGTH", "5");
	ck_assert_int_eq(resp_content_length(f, 3), 5);
	f[2] = fld("content-length", "6");
	ck_assert_int_eq(resp_content_length(f, 3), -2);
}
END_TEST

START_TEST(test_head_length)
{
	struct wire_field f[5];
	char *s, v[128];

	f[0] = fld("Content-Type", "text/plain");
	f[1] = fld("Connection", "x-secret");
	f[2] = fld("Content-Length", "999");	/* ours replaces it */
	f[3] = fld("Keep-Alive", "timeout=5");
	f[4] = fld("X-Thing", "a: b");
	resp_head(out, 1, 200, f, 5, "rid-1", RESP_LENGTH, 5, 1);
	s = take();
	ck_assert_msg(strncmp(s, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", s);
	ck_assert_int_eq(strcmp(s + strlen(s) - 4, "\r\n\r\n"), 0);
	ck_assert_str_eq(hdr(s, "content-type", v, sizeof v), "text/plain");
	ck_assert_str_eq(hdr(s, "x-thing", v, sizeof v), "a: b");
	ck_assert_str_eq(hdr(s, "content-length", v, sizeof v), "5");
	ck_assert_int_eq(count(s, "content-length:"), 1);
	ck_assert_str_eq(hdr(s, "x-request-id", v, sizeof v), "rid-1");
	ck_assert_ptr_null(hdr(s, "connection", v, sizeof v));
	ck_assert_ptr_null(hdr(s, "keep-alive", v, sizeof v));
	ck_assert_ptr_null(hdr(s, "transfer-encoding", v, sizeof v));
	ck_assert_ptr_null(strstr(s, "x-secret"));
	free(s);
}
END_TEST

START_TEST(test_head_chunked)
{
	struct wire_field f[2];
	char *s, v[128];

	f[0] = fld("Transfer-Encoding", "gzip, chunked");
	f[1] = fld("X-Request-Id", "theirs");
	resp_head(out, 1, 201, f, 2, "ours", RESP_CHUNKED, -1, 1);
	s = take();
	ck_assert_msg(strncmp(s, "HTTP/1.1 201 Created\r\n", 22) == 0, "%s", s);
	ck_assert_str_eq(hdr(s, "transfer-encoding", v, sizeof v), "chunked");
	ck_assert_int_eq(count(s, "transfer-encoding:"), 1);
	ck_assert_ptr_null(strstr(s, "gzip"));
	/* The replica's request id is kept, ours not added. */
	ck_assert_str_eq(hdr(s, "x-request-id", v, sizeof v), "theirs");
	ck_assert_int_eq(count(s, "x-request-id:"), 1);
	ck_assert_ptr_null(hdr(s, "content-length", v, sizeof v));
	free(s);
}
END_TEST

START_TEST(test_head_close_and_10)
{
	char *s, v[128];

	/* HTTP/1.0 with the length unknown: close ends the body. */
	resp_head(out, 0, 200, NULL, 0, NULL, RESP_CLOSE, -1, 0);
	s = take();
	ck_assert_msg(strncmp(s, "HTTP/1.0 200 OK\r\n", 17) == 0, "%s", s);
	ck_assert_str_eq(hdr(s, "connection", v, sizeof v), "close");
	ck_assert_ptr_null(hdr(s, "content-length", v, sizeof v));
	ck_assert_ptr_null(hdr(s, "transfer-encoding", v, sizeof v));
	ck_assert_ptr_null(hdr(s, "x-request-id", v, sizeof v));
	free(s);
	/* HTTP/1.0 kept alive says so. */
	resp_head(out, 0, 200, NULL, 0, "r", RESP_LENGTH, 0, 1);
	s = take();
	ck_assert_str_eq(hdr(s, "connection", v, sizeof v), "keep-alive");
	ck_assert_str_eq(hdr(s, "content-length", v, sizeof v), "0");
	free(s);
	/* HTTP/1.1 closing. */
	resp_head(out, 1, 500, NULL, 0, "r", RESP_LENGTH, 3, 0);
	s = take();
	ck_assert_str_eq(hdr(s, "connection", v, sizeof v), "close");
	free(s);
}
END_TEST

/* HEAD and 304 keep the length the GET would have had; 204 none. */
START_TEST(test_head_none)
{
	char *s, v[128];

	resp_head(out, 1, 200, NULL, 0, "r", RESP_NONE, 42, 1);
	s = take();
	ck_assert_str_eq(hdr(s, "content-length", v, sizeof v), "42");
	ck_assert_ptr_null(hdr(s, "transfer-encoding", v, sizeof v));
	free(s);
	resp_head(out, 1, 204, NULL, 0, "r", RESP_NONE, -1, 1);
	s = take();
	ck_assert_msg(strncmp(s, "HTTP/1.1 204 No Content\r\n", 25) == 0, "%s",
	    s);
	ck_assert_ptr_null(hdr(s, "content-length", v, sizeof v));
	ck_assert_ptr_null(hdr(s, "transfer-encoding", v, sizeof v));
	free(s);
}
END_TEST

/* Many fields with long values: all fit in the reserved space. */
START_TEST(test_head_big)
{
	static char val[4000];
	struct wire_field f[50];
	char name[50][16], *s;
	int i;

	memset(val, 'v', sizeof val - 1);
	for (i = 0; i < 50; i++) {
		snprintf(name[i], sizeof name[i], "x-f%d", i);
		f[i] = fld(name[i], val);
	}
	resp_head(out, 1, 200, f, 50, "rid", RESP_LENGTH, 7, 1);
	s = take();
	ck_assert_int_eq(count(s, val), 50);
	ck_assert_ptr_nonnull(strstr(s, "\r\nx-f49: v"));
	ck_assert_int_eq(strcmp(s + strlen(s) - 4, "\r\n\r\n"), 0);
	free(s);
}
END_TEST

/* One chunk of n bytes: hex size line, the data, CRLF; data drained. */
static void
chunk_of(size_t n, const char *want_size)
{
	struct evbuffer *data = evbuffer_new();
	char *s, *body = malloc(n + 1);
	size_t hl = strlen(want_size);

	memset(body, 'a', n);
	evbuffer_add(data, body, n);
	resp_chunk(out, data);
	ck_assert_uint_eq(evbuffer_get_length(data), 0);
	ck_assert_uint_eq(evbuffer_get_length(out), hl + 2 + n + 2);
	s = take();
	ck_assert_msg(strncmp(s, want_size, hl) == 0 &&
	    strncmp(s + hl, "\r\n", 2) == 0, "size %zu: %.10s", n, s);
	ck_assert_int_eq(memcmp(s + hl + 2, body, n), 0);
	ck_assert_int_eq(memcmp(s + hl + 2 + n, "\r\n", 2), 0);
	free(s);
	free(body);
	evbuffer_free(data);
}

START_TEST(test_chunks)
{
	struct evbuffer *data = evbuffer_new();

	chunk_of(1, "1");
	chunk_of(9, "9");
	chunk_of(10, "a");
	chunk_of(15, "f");
	chunk_of(16, "10");
	chunk_of(255, "ff");
	chunk_of(256, "100");
	chunk_of(4096, "1000");
	chunk_of(65535, "ffff");
	chunk_of(1048577, "100001");
	/* An empty buffer writes nothing: a 0 chunk would end the body. */
	resp_chunk(out, data);
	ck_assert_uint_eq(evbuffer_get_length(out), 0);
	evbuffer_free(data);
	resp_chunk_end(out);
	ck_assert_uint_eq(evbuffer_get_length(out), 5);
	ck_assert_int_eq(memcmp(evbuffer_pullup(out, -1), "0\r\n\r\n", 5), 0);
}
END_TEST

/* The last chunk with trailers keeps only what a trailer may carry. */
START_TEST(test_chunk_trailers)
{
	struct wire_field f[] = {
		fld("grpc-status", "0"), fld("grpc-message", "a%20b"),
		fld("content-length", "5"), fld("Connection", "close"),
		fld("host", "x"), fld("bad name", "v"), fld("x-bad", "a\r\nb"),
		fld("x-empty", ""),
	};
	const char *want = "0\r\ngrpc-status: 0\r\ngrpc-message: a%20b\r\n"
	    "x-empty: \r\n\r\n";
	size_t n;
	char *s;

	n = resp_chunk_trailers(out, f, sizeof(f) / sizeof(f[0]));
	ck_assert_uint_eq(n, strlen(want));
	s = take();
	ck_assert_str_eq(s, want);
	free(s);
	/* None left: the plain last chunk. */
	ck_assert_uint_eq(resp_chunk_trailers(out, f + 2, 1), 5);
	s = take();
	ck_assert_str_eq(s, "0\r\n\r\n");
	free(s);
}
END_TEST

START_TEST(test_te_trailers)
{
	ck_assert(resp_te_trailers("trailers", 8));
	ck_assert(resp_te_trailers("Trailers", 8));
	ck_assert(resp_te_trailers("gzip;q=0.5, trailers", 20));
	ck_assert(resp_te_trailers(" ,trailers ,", 12));
	ck_assert(!resp_te_trailers("", 0));
	ck_assert(!resp_te_trailers("gzip", 4));
	ck_assert(!resp_te_trailers("trailersx", 9));
	ck_assert(!resp_te_trailers("x;a=trailers", 12));
	ck_assert(!resp_te_trailers("trailer", 7));
}
END_TEST

/* Split a response into head and body; check Content-Length matches. */
static char *
body_of(char *s, char *v, size_t vlen)
{
	char *b = strstr(s, "\r\n\r\n");

	ck_assert_ptr_nonnull(b);
	b += 4;
	ck_assert_ptr_nonnull(hdr(s, "content-length", v, vlen));
	ck_assert_uint_eq(strtoul(v, NULL, 10), strlen(b));
	return (b);
}

START_TEST(test_error)
{
	char *s, *b, v[128], cl[32];

	resp_error(out, 1, 502, "no replica answered", "rid-9", 1, 0);
	s = take();
	ck_assert_msg(strncmp(s, "HTTP/1.1 502 Bad Gateway\r\n", 26) == 0,
	    "%s", s);
	b = body_of(s, v, sizeof v);
	ck_assert_ptr_nonnull(strstr(b, "502"));
	ck_assert_ptr_nonnull(strstr(b, "no replica answered"));
	ck_assert_str_eq(hdr(s, "x-request-id", v, sizeof v), "rid-9");
	ck_assert_ptr_nonnull(hdr(s, "content-type", v, sizeof v));
	ck_assert_ptr_null(hdr(s, "connection", v, sizeof v));
	ck_assert_ptr_null(hdr(s, "retry-after", v, sizeof v));
	free(s);
	/* HEAD: the same head, no body. */
	resp_error(out, 1, 502, "no replica answered", "rid-9", 1, 0);
	s = take();
	hdr(s, "content-length", cl, sizeof cl);
	free(s);
	resp_error(out, 1, 502, "no replica answered", "rid-9", 1, 1);
	s = take();
	ck_assert_int_eq(strcmp(s + strlen(s) - 4, "\r\n\r\n"), 0);
	ck_assert_str_eq(hdr(s, "content-length", v, sizeof v), cl);
	free(s);
}
END_TEST

START_TEST(test_error_variants)
{
	char *s, *b, v[128], why[2000];

	/* 503 asks the client to come back. */
	resp_error(out, 0, 503, NULL, NULL, 0, 0);
	s = take();
	ck_assert_msg(strncmp(s, "HTTP/1.0 503 Service Unavailable\r\n",
	    34) == 0, "%s", s);
	ck_assert_ptr_nonnull(hdr(s, "retry-after", v, sizeof v));
	ck_assert_str_eq(hdr(s, "connection", v, sizeof v), "close");
	ck_assert_ptr_null(hdr(s, "x-request-id", v, sizeof v));
	b = body_of(s, v, sizeof v);
	ck_assert_ptr_nonnull(strstr(b, "503"));
	free(s);
	/* HTTP/1.0 kept alive. */
	resp_error(out, 0, 400, "bad", "", 1, 0);
	s = take();
	ck_assert_str_eq(hdr(s, "connection", v, sizeof v), "keep-alive");
	ck_assert_ptr_null(hdr(s, "x-request-id", v, sizeof v));
	free(s);
	/* A long reason is cut, and the length still matches the body. */
	memset(why, 'w', sizeof why - 1);
	why[sizeof why - 1] = '\0';
	resp_error(out, 1, 400, why, "r", 1, 0);
	s = take();
	b = body_of(s, v, sizeof v);
	ck_assert_uint_lt(strlen(b), sizeof why);
	free(s);
}
END_TEST

START_TEST(test_simple)
{
	static const char json[] = "{\"a\":1}";
	char *s, *b, v[128];

	resp_simple(out, 1, 200, "application/json", json, strlen(json),
	    "rid", 1, 0);
	s = take();
	ck_assert_msg(strncmp(s, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", s);
	ck_assert_str_eq(hdr(s, "content-type", v, sizeof v),
	    "application/json");
	b = body_of(s, v, sizeof v);
	ck_assert_str_eq(b, json);
	free(s);
	resp_simple(out, 1, 200, "application/json", json, strlen(json),
	    NULL, 1, 1);
	s = take();
	ck_assert_int_eq(strcmp(s + strlen(s) - 4, "\r\n\r\n"), 0);
	ck_assert_str_eq(hdr(s, "content-length", v, sizeof v), "7");
	free(s);
}
END_TEST

static Suite *
resp_suite(void)
{
	Suite	*s = suite_create("resp");
	TCase	*tc = tcase_create("resp");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_reason);
	tcase_add_test(tc, test_content_length);
	tcase_add_test(tc, test_head_length);
	tcase_add_test(tc, test_head_chunked);
	tcase_add_test(tc, test_head_close_and_10);
	tcase_add_test(tc, test_head_none);
	tcase_add_test(tc, test_head_big);
	tcase_add_test(tc, test_chunks);
	tcase_add_test(tc, test_error);
	tcase_add_test(tc, test_error_variants);
	tcase_add_test(tc, test_simple);
	tcase_add_test(tc, test_chunk_trailers);
	tcase_add_test(tc, test_te_trailers);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(resp_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
