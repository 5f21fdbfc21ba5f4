/*
 * check_http1.c -- the request parser: framing, pipelining, every rejection
 * and limit, and that the verdict does not depend on how bytes are split.
 */

#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http1.h"

#define MAXF	16

/* What the callbacks saw, for one run; reset by run(). */
struct rec {
	char		 log[16384];
	size_t		 loglen;
	int		 heads, bodies, ends, dones;
	char		 body[8192];
	size_t		 body_len;
	int		 body_outside;	/* a piece not inside the fed bytes */
	int		 in_body;	/* the log ends with a body piece */
	const char	*lo, *hi;	/* the bytes of the current feed */

	/* The last head. */
	char		 method[32];
	char		 target[512];
	size_t		 path_len;
	char		 host[128];
	int		 has_host;
	int64_t		 cl;
	int		 chunked, ka, expect, is_head, has_body;
	int		 major, minor;
	unsigned	 nfields;
	char		 name[MAXF][64];
	char		 value[MAXF][256];
	const char	*method_ptr;

	/* What the callbacks return. */
	int		 head_ret, body_ret, end_ret;

	/* The outcome. */
	enum http1_state state;
	int		 status;
	char		 reason[128];
	size_t		 end_off[16];	/* absolute offset after each message */
};

static struct rec R;

static const struct http1_limits LIM = {
	.max_request_line = 256,
	.max_header_bytes = 1024,
	.max_headers = 16,
	.max_body = 1000,
};

static void
logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
logf_(const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	R.in_body = 0;
	va_start(ap, fmt);
	n = vsnprintf(R.log + R.loglen, sizeof R.log - R.loglen, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof R.log - R.loglen)
		R.loglen += n;
}

static int
on_head(void *arg, struct http1_request *r)
{
	unsigned	 i;

	R.heads++;
	snprintf(R.method, sizeof R.method, "%s", r->method);
	snprintf(R.target, sizeof R.target, "%s", r->target);
	ck_assert_uint_eq(strlen(r->method), r->method_len);
	ck_assert_uint_eq(strlen(r->target), r->target_len);
	R.method_ptr = r->method;
	R.path_len = r->path_len;
	R.has_host = r->host != NULL;
	if (r->host != NULL) {
		ck_assert_uint_eq(strlen(r->host), r->host_len);
		snprintf(R.host, sizeof R.host, "%s", r->host);
	}
	R.cl = r->content_length;
	R.chunked = r->chunked;
	R.ka = r->keep_alive;
	R.expect = r->expect_continue;
	R.is_head = r->is_head;
	R.has_body = r->has_body;
	R.major = r->major;
	R.minor = r->minor;
	R.nfields = r->nfields;
	logf_("H[%s %s %d.%d host=%s cl=%lld ch=%d ka=%d ex=%d hd=%d hb=%d]",
	    r->method, r->target, r->major, r->minor,
	    r->host != NULL ? r->host : "-", (long long)r->content_length,
	    r->chunked, r->keep_alive, r->expect_continue, r->is_head,
	    r->has_body);
	for (i = 0; i < r->nfields; i++) {
		ck_assert_uint_eq(strlen(r->fields[i].name),
		    r->fields[i].name_len);
		ck_assert_uint_eq(strlen(r->fields[i].value),
		    r->fields[i].value_len);
		if (i < MAXF) {
			snprintf(R.name[i], sizeof R.name[i], "%s",
			    r->fields[i].name);
			snprintf(R.value[i], sizeof R.value[i], "%s",
			    r->fields[i].value);
		}
		logf_("F[%s=%s]", r->fields[i].name, r->fields[i].value);
	}
	return R.head_ret;
}

static int
on_body(void *arg, const char *p, size_t n)
{
	R.bodies++;
	if (p < R.lo || p + n > R.hi)
		R.body_outside = 1;
	if (n <= sizeof R.body - R.body_len) {
		memcpy(R.body + R.body_len, p, n);
		R.body_len += n;
	}
	/* Pieces depend on how bytes were fed: log the data, not the cuts. */
	if (R.loglen != 0 && R.in_body)
		R.loglen--;
	logf_("%s%.*s]", R.in_body ? "" : "B[", (int)n, p);
	R.in_body = 1;
	return R.body_ret;
}

static int
on_end(void *arg)
{
	R.ends++;
	logf_("E");
	return R.end_ret;
}

static const struct http1_callbacks CB = { on_head, on_body, on_end };

/*
 * Feed s as a client would: bytes arrive in pieces (of `step`, or two pieces
 * cut at `split` when it is non-zero); after DONE call http1_next() and go on
 * from *consumed.
 */
static void
drive(struct http1 *h, const char *s, size_t n, size_t step, size_t split)
{
	size_t		 start = 0, avail, c;
	unsigned	 guard;

	avail = split != 0 ? split : (step < n ? step : n);
	for (guard = 0; guard < 100000; guard++) {
		R.lo = s + start;
		R.hi = s + avail;
		R.state = http1_feed(h, s + start, avail - start, &c);
		ck_assert_uint_le(c, avail - start);
		if (R.state == HTTP1_ERROR)
			break;
		if (R.state == HTTP1_DONE) {
			start += c;
			if (R.dones < 16)
				R.end_off[R.dones] = start;
			R.dones++;
			logf_("D@%zu", start);
			/* Stopped: nothing more is taken before next(). */
			ck_assert_int_eq(http1_feed(h, s + start, avail - start,
			    &c), HTTP1_DONE);
			ck_assert_uint_eq(c, 0);
			http1_next(h);
			if (start < avail)
				continue;
		} else {
			ck_assert_uint_eq(c, avail - start);
			start = avail;
		}
		if (avail == n)
			break;
		if (split != 0)
			avail = n;
		else
			avail = avail + step < n ? avail + step : n;
	}
	/* After the last DONE and http1_next(), the parser wants more. */
	if (R.state == HTTP1_DONE)
		R.state = HTTP1_MORE;
	R.status = http1_error_status(h);
	snprintf(R.reason, sizeof R.reason, "%s", http1_error_reason(h));
	if (R.state == HTTP1_ERROR)
		logf_("X%d:%s", R.status, R.reason);
}

static void
rec_reset(void)
{
	int	 hr = R.head_ret, br = R.body_ret, er = R.end_ret;

	memset(&R, 0, sizeof R);
	R.head_ret = hr;
	R.body_ret = br;
	R.end_ret = er;
}

static enum http1_state
run_lim(const char *s, size_t n, size_t step, const struct http1_limits *lim)
{
	struct http1	*h;

	rec_reset();
	h = http1_new(lim, &CB, NULL);
	ck_assert_ptr_nonnull(h);
	drive(h, s, n, step, 0);
	http1_free(h);
	return R.state;
}

static enum http1_state
run(const char *s)
{
	return run_lim(s, strlen(s), strlen(s), &LIM);
}

/* The verdict for s must be the same fed whole or one byte at a time. */
static void
run_both(const char *s, size_t n)
{
	char	*whole;

	run_lim(s, n, n, &LIM);
	whole = strdup(R.log);
	run_lim(s, n, 1, &LIM);
	ck_assert_str_eq(R.log, whole);
	free(whole);
}

static void
expect_reject(const char *s, int status)
{
	run_both(s, strlen(s));
	ck_assert_int_eq(R.state, HTTP1_ERROR);
	ck_assert_int_eq(R.status, status);
	ck_assert_str_ne(R.reason, "");
}

static void
expect_reject_why(const char *s, int status, const char *reason)
{
	expect_reject(s, status);
	ck_assert_str_eq(R.reason, reason);
}

#define GET11	"GET / HTTP/1.1\r\nHost: a\r\n"
#define POST11	"POST /u HTTP/1.1\r\nHost: a\r\n"

/* --- Basics. ------------------------------------------------------------ */

START_TEST(simple_get)
{
	const char	*s = "GET /p/a?q=1 HTTP/1.1\r\nHost: example.com\r\n"
	    "User-Agent: t\r\n\r\n";

	ck_assert_int_eq(run(s), HTTP1_MORE);
	ck_assert_int_eq(R.dones, 1);
	ck_assert_uint_eq(R.end_off[0], strlen(s));
	ck_assert_int_eq(R.heads, 1);
	ck_assert_int_eq(R.ends, 1);
	ck_assert_int_eq(R.bodies, 0);
	ck_assert_str_eq(R.method, "GET");
	ck_assert_str_eq(R.target, "/p/a?q=1");
	ck_assert_uint_eq(R.path_len, 4);
	ck_assert_str_eq(R.host, "example.com");
	ck_assert_int_eq(R.major, 1);
	ck_assert_int_eq(R.minor, 1);
	ck_assert_int_eq(R.cl, -1);
	ck_assert_int_eq(R.chunked, 0);
	ck_assert_int_eq(R.has_body, 0);
	ck_assert_int_eq(R.ka, 1);
	ck_assert_int_eq(R.is_head, 0);
	ck_assert_uint_eq(R.nfields, 2);
	ck_assert_str_eq(R.name[1], "User-Agent");
	ck_assert_str_eq(R.value[1], "t");
}
END_TEST

START_TEST(fields_as_sent_trimmed)
{
	ck_assert_int_eq(run("GET / HTTP/1.1\r\nhOsT:  a.b:80 \t \r\n"
	    "X-Empty:\r\nX-Sp:   \r\nX-In:\t a  b \r\n\r\n"), HTTP1_MORE);
	ck_assert_uint_eq(R.nfields, 4);
	ck_assert_str_eq(R.name[0], "hOsT");
	ck_assert_str_eq(R.value[0], "a.b:80");
	ck_assert_str_eq(R.host, "a.b:80");
	ck_assert_str_eq(R.value[1], "");
	ck_assert_str_eq(R.value[2], "");
	ck_assert_str_eq(R.value[3], "a  b");
}
END_TEST

START_TEST(obs_text_value_ok)
{
	ck_assert_int_eq(run(GET11 "X: caf\xc3\xa9\r\n\r\n"), HTTP1_MORE);
	ck_assert_str_eq(R.value[1], "caf\xc3\xa9");
}
END_TEST

START_TEST(split_every_boundary)
{
	const char	*s = "POST /x?y HTTP/1.1\r\nHost: h\r\n"
	    "Content-Length: 5\r\nX-Long-Header-Name: some value \r\n\r\n"
	    "hello"
	    "GET /2 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
	size_t		 n = strlen(s), i;
	struct http1	*h;
	char		*whole;

	run_lim(s, n, n, &LIM);
	ck_assert_int_eq(R.dones, 2);
	whole = strdup(R.log);
	for (i = 1; i < n; i++) {
		rec_reset();
		h = http1_new(&LIM, &CB, NULL);
		drive(h, s, n, 0, i);
		http1_free(h);
		ck_assert_msg(strcmp(R.log, whole) == 0, "split at %zu: %s",
		    i, R.log);
		ck_assert_int_eq(R.body_outside, 0);
	}
	run_lim(s, n, 1, &LIM);
	ck_assert_str_eq(R.log, whole);
	ck_assert_str_eq(R.body, "hello");
	ck_assert_int_eq(R.bodies, 5);
	free(whole);
}
END_TEST

START_TEST(pipelined_consumed)
{
	const char	*a = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n";
	const char	*b = "POST /2 HTTP/1.1\r\nHost: a\r\n"
	    "Content-Length: 3\r\n\r\nxyz";
	const char	*c = "GET /3 HTTP/1.1\r\nHost: a\r\n\r\n";
	char		 s[512];
	struct http1	*h;
	size_t		 used, off = 0, n;

	snprintf(s, sizeof s, "%s%s%s", a, b, c);
	n = strlen(s);
	rec_reset();
	h = http1_new(&LIM, &CB, NULL);
	R.lo = s;
	R.hi = s + n;
	ck_assert_int_eq(http1_feed(h, s, n, &used), HTTP1_DONE);
	ck_assert_uint_eq(used, strlen(a));
	ck_assert_str_eq(R.target, "/1");
	ck_assert_int_eq(R.heads, 1);
	ck_assert_int_eq(R.ends, 1);
	ck_assert_int_eq(http1_idle(h), 1);
	ck_assert_ptr_nonnull(http1_request(h));
	http1_next(h);
	ck_assert_ptr_null(http1_request(h));
	off += used;
	ck_assert_int_eq(http1_feed(h, s + off, n - off, &used), HTTP1_DONE);
	ck_assert_uint_eq(used, strlen(b));
	ck_assert_str_eq(R.target, "/2");
	ck_assert_str_eq(R.body, "xyz");
	ck_assert_int_eq(R.heads, 2);
	http1_next(h);
	off += used;
	ck_assert_int_eq(http1_feed(h, s + off, n - off, &used), HTTP1_DONE);
	ck_assert_uint_eq(used, strlen(c));
	ck_assert_uint_eq(off + used, n);
	ck_assert_int_eq(R.heads, 3);
	ck_assert_int_eq(R.ends, 3);
	http1_next(h);
	ck_assert_int_eq(http1_feed(h, s + n, 0, &used), HTTP1_MORE);
	ck_assert_uint_eq(used, 0);
	http1_free(h);
}
END_TEST

START_TEST(pipelined_byte_at_a_time)
{
	const char	*s = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
	    "POST /2 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "3\r\nabc\r\n0\r\n\r\n"
	    "HEAD /3 HTTP/1.1\r\nHost: a\r\n\r\n";

	run_both(s, strlen(s));
	ck_assert_int_eq(R.state, HTTP1_MORE);
	ck_assert_int_eq(R.dones, 3);
	ck_assert_uint_eq(R.end_off[0], 28);
	ck_assert_uint_eq(R.end_off[2], strlen(s));
	ck_assert_str_eq(R.body, "abc");
}
END_TEST

START_TEST(content_length_pieces)
{
	const char	*s = POST11 "Content-Length: 10\r\n\r\n0123456789";

	run_lim(s, strlen(s), 7, &LIM);
	ck_assert_int_eq(R.state, HTTP1_MORE);
	ck_assert_int_eq(R.dones, 1);
	ck_assert_int_eq(R.cl, 10);
	ck_assert_int_eq(R.has_body, 1);
	ck_assert_str_eq(R.body, "0123456789");
	ck_assert_int_gt(R.bodies, 1);
	ck_assert_int_eq(R.body_outside, 0);
}
END_TEST

START_TEST(content_length_zero)
{
	ck_assert_int_eq(run(POST11 "Content-Length: 0\r\n\r\n"), HTTP1_MORE);
	ck_assert_int_eq(R.dones, 1);
	ck_assert_int_eq(R.cl, 0);
	ck_assert_int_eq(R.has_body, 0);
	ck_assert_int_eq(R.bodies, 0);
}
END_TEST

START_TEST(chunked_dechunked)
{
	const char	*s = POST11 "Transfer-Encoding: chunked\r\n\r\n"
	    "5;name=val\r\nhello\r\n"
	    "1;q=\"x y\"\r\n \r\n"
	    "6\r\nworld!\r\n"
	    "0;last\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n";

	run_both(s, strlen(s));
	ck_assert_int_eq(R.state, HTTP1_MORE);
	ck_assert_int_eq(R.dones, 1);
	ck_assert_uint_eq(R.end_off[0], strlen(s));
	ck_assert_int_eq(R.chunked, 1);
	ck_assert_int_eq(R.cl, -1);
	ck_assert_int_eq(R.has_body, 1);
	ck_assert_str_eq(R.body, "hello world!");
	/* Trailers are read and dropped, not added to the head. */
	ck_assert_uint_eq(R.nfields, 2);
	ck_assert_ptr_null(strstr(R.log, "X-Trailer"));
}
END_TEST

START_TEST(chunked_case_insensitive)
{
	ck_assert_int_eq(run(POST11 "Transfer-Encoding: Chunked\r\n\r\n"
	    "0\r\n\r\n"), HTTP1_MORE);
	ck_assert_int_eq(R.chunked, 1);
	ck_assert_int_eq(R.ends, 1);
}
END_TEST

START_TEST(head_request)
{
	ck_assert_int_eq(run("HEAD /x HTTP/1.1\r\nHost: a\r\n\r\n"),
	    HTTP1_MORE);
	ck_assert_int_eq(R.is_head, 1);
	ck_assert_int_eq(R.has_body, 0);
	ck_assert_int_eq(R.dones, 1);
}
END_TEST

START_TEST(options_star)
{
	ck_assert_int_eq(run("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"),
	    HTTP1_MORE);
	ck_assert_str_eq(R.target, "*");
	ck_assert_uint_eq(R.path_len, 1);
}
END_TEST

START_TEST(http10_no_host)
{
	ck_assert_int_eq(run("GET / HTTP/1.0\r\n\r\n"), HTTP1_MORE);
	ck_assert_int_eq(R.has_host, 0);
	ck_assert_int_eq(R.minor, 0);
}
END_TEST

START_TEST(leading_empty_lines)
{
	ck_assert_int_eq(run("\r\n\r\n" GET11 "\r\n"), HTTP1_MORE);
	ck_assert_int_eq(R.dones, 1);
	expect_reject_why("\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n" GET11 "\r\n",
	    400, "too many empty lines");
}
END_TEST

START_TEST(upgrade_ignored)
{
	const char	*s = GET11 "Upgrade: websocket\r\n"
	    "Connection: Upgrade\r\n\r\n" GET11 "\r\n";

	run_both(s, strlen(s));
	ck_assert_int_eq(R.state, HTTP1_MORE);
	ck_assert_int_eq(R.dones, 2);
}
END_TEST

/* --- Keep-alive. --------------------------------------------------------- */

START_TEST(keepalive_10_default_close)
{
	run("GET / HTTP/1.0\r\n\r\n");
	ck_assert_int_eq(R.ka, 0);
}
END_TEST

START_TEST(keepalive_10_keep_alive)
{
	run("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	ck_assert_int_eq(R.ka, 1);
}
END_TEST

START_TEST(keepalive_11_default)
{
	run(GET11 "\r\n");
	ck_assert_int_eq(R.ka, 1);
}
END_TEST

START_TEST(keepalive_11_close)
{
	run(GET11 "Connection: close\r\n\r\n");
	ck_assert_int_eq(R.ka, 0);
	run(GET11 "Connection: keep-alive, Close\r\n\r\n");
	ck_assert_int_eq(R.ka, 0);
}
END_TEST

START_TEST(data_after_close)
{
	expect_reject_why(GET11 "Connection: close\r\n\r\n" GET11 "\r\n", 400,
	    "data after Connection: close");
	ck_assert_int_eq(R.dones, 1);
}
END_TEST

/* --- Expect. ------------------------------------------------------------- */

START_TEST(expect_continue)
{
	run(POST11 "Expect: 100-Continue\r\nContent-Length: 3\r\n\r\nabc");
	ck_assert_int_eq(R.expect, 1);
	ck_assert_int_eq(R.dones, 1);
	/* Nothing to continue to without a body. */
	run(GET11 "Expect: 100-continue\r\n\r\n");
	ck_assert_int_eq(R.expect, 0);
	/* RFC 9110 10.1.1: ignored in HTTP/1.0. */
	run("POST / HTTP/1.0\r\nExpect: 100-continue\r\n"
	    "Content-Length: 1\r\n\r\nx");
	ck_assert_int_eq(R.expect, 0);
	ck_assert_int_eq(R.dones, 1);
}
END_TEST

START_TEST(expect_other_417)
{
	expect_reject_why(GET11 "Expect: something\r\n\r\n", 417,
	    "unsupported Expect");
	ck_assert_int_eq(R.heads, 0);
}
END_TEST

/* --- Raw syntax rejections. ---------------------------------------------- */

START_TEST(reject_bare_lf)
{
	expect_reject_why("GET / HTTP/1.1\nHost: a\r\n\r\n", 400,
	    "bare LF in request line");
	expect_reject_why("GET / HTTP/1.1\r\nHost: a\n\r\n", 400,
	    "bare LF in header");
	expect_reject_why(GET11 "\n", 400, "bare LF in header");
	expect_reject_why("\nGET / HTTP/1.1\r\n", 400,
	    "bare LF in request line");
	expect_reject_why(POST11 "Transfer-Encoding: chunked\r\n\r\n"
	    "0\r\nT: x\n\r\n", 400, "bare LF in header");
	ck_assert_int_eq(R.heads, 1);
	ck_assert_int_eq(R.ends, 0);
}
END_TEST

START_TEST(reject_bare_cr)
{
	expect_reject_why("GET / HTTP/1.1\rHost: a\r\n\r\n", 400,
	    "bare CR in request line");
	expect_reject_why(GET11 "X: a\rb\r\n\r\n", 400, "bare CR in header");
	expect_reject_why(GET11 "\rX\r\n", 400, "bare CR in header");
	expect_reject_why("\rGET / HTTP/1.1\r\n", 400,
	    "bare CR in request line");
}
END_TEST

START_TEST(reject_obs_fold)
{
	expect_reject_why(GET11 "X: a\r\n b\r\n\r\n", 400, "obs-fold in header");
	expect_reject_why(GET11 "X: a\r\n\tb\r\n\r\n", 400,
	    "obs-fold in header");
	expect_reject_why("GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400,
	    "obs-fold in header");
	expect_reject_why(POST11 "Transfer-Encoding: chunked\r\n\r\n"
	    "0\r\nT: x\r\n y\r\n\r\n", 400, "obs-fold in header");
}
END_TEST

START_TEST(reject_space_before_colon)
{
	expect_reject_why("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400,
	    "whitespace before colon");
	expect_reject_why(GET11 "X\t: a\r\n\r\n", 400,
	    "whitespace before colon");
}
END_TEST

START_TEST(reject_bad_name)
{
	expect_reject_why(GET11 "X(y): a\r\n\r\n", 400,
	    "invalid char in header name");
	expect_reject_why(GET11 ": a\r\n\r\n", 400, "empty header name");
	expect_reject_why(GET11 "NoColon\r\n\r\n", 400,
	    "header line without colon");
	expect_reject_why(GET11 "X\xc3\xa9: a\r\n\r\n", 400,
	    "invalid char in header name");
}
END_TEST

START_TEST(reject_ctl_in_value)
{
	static const char	 s[] = GET11 "X: a\0b\r\n\r\n";

	expect_reject_why(GET11 "X: a\001b\r\n\r\n", 400,
	    "invalid char in header value");
	expect_reject_why(GET11 "X: a\177\r\n\r\n", 400,
	    "invalid char in header value");
	run_both(s, sizeof s - 1);
	ck_assert_int_eq(R.status, 400);
	ck_assert_str_eq(R.reason, "invalid char in header value");
	/* HTAB is allowed inside a value. */
	ck_assert_int_eq(run(GET11 "X: a\tb\r\n\r\n"), HTTP1_MORE);
	ck_assert_str_eq(R.value[1], "a\tb");
}
END_TEST

START_TEST(reject_request_line)
{
	expect_reject_why("GET  / HTTP/1.1\r\n\r\n", 400,
	    "invalid request target");
	expect_reject_why("GET /  HTTP/1.1\r\n\r\n", 400,
	    "malformed HTTP version");
	expect_reject_why("GET / HTTP/1.1 \r\n\r\n", 400,
	    "malformed request line");
	expect_reject_why("GET /a#b HTTP/1.1\r\n\r\n", 400,
	    "invalid request target");
	expect_reject_why("GET /a\tb HTTP/1.1\r\n\r\n", 400,
	    "invalid request target");
	expect_reject_why("GET /\xc3\xa9 HTTP/1.1\r\n\r\n", 400,
	    "invalid request target");
	expect_reject_why("G(T / HTTP/1.1\r\n\r\n", 400, "invalid method");
	expect_reject_why("GET\r\n\r\n", 400, "invalid method");
	expect_reject_why("GET / HTTP/1.1x\r\n\r\n", 400,
	    "malformed request line");
	expect_reject_why("GET / http/1.1\r\n\r\n", 400,
	    "malformed HTTP version");
}
END_TEST

START_TEST(reject_version)
{
	expect_reject_why("GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505,
	    "unsupported HTTP version");
	expect_reject("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505);
	expect_reject("GET / HTTP/0.9\r\n\r\n", 505);
	/* The HTTP/2 preface fails on its target first. */
	expect_reject_why("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400,
	    "request target not in origin-form");
	expect_reject_why("GET / HTTP/1.10\r\n\r\n", 400,
	    "malformed request line");
	expect_reject_why("GET / HTTP/11\r\n\r\n", 400,
	    "malformed HTTP version");
}
END_TEST

START_TEST(reject_method)
{
	expect_reject_why("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
	    501, "CONNECT not supported");
	expect_reject_why("FOO / HTTP/1.1\r\nHost: a\r\n\r\n", 501,
	    "unknown method");
	expect_reject_why("get / HTTP/1.1\r\nHost: a\r\n\r\n", 501,
	    "unknown method");
	ck_assert_int_eq(R.heads, 0);
}
END_TEST

START_TEST(reject_target_form)
{
	expect_reject_why("GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400,
	    "request target not in origin-form");
	expect_reject("GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	/* Absolute-form: only http(s), a valid authority, no userinfo. */
	expect_reject_why("GET ftp://a/b HTTP/1.1\r\nHost: a\r\n\r\n", 400,
	    "request target scheme not http");
	expect_reject_why("GET http://u@a/b HTTP/1.1\r\nHost: a\r\n\r\n",
	    400, "userinfo in request target");
	expect_reject_why("GET http://u:p@a/b HTTP/1.1\r\nHost: a\r\n\r\n",
	    400, "userinfo in request target");
	expect_reject("GET http:///b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	expect_reject("GET http://a%2fb|/ HTTP/1.1\r\nHost: a\r\n\r\n",
	    400);
	expect_reject("GET http:/a/b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	ck_assert_int_eq(R.heads, 0);
}
END_TEST

/* RFC 9112 3.2.2: the authority stands for Host, the path is forwarded. */
START_TEST(absolute_form)
{
	ck_assert_int_eq(run("GET http://b.example:8000/p/a?q=1 HTTP/1.1\r\n"
	    "Host: a.example\r\n\r\n"), HTTP1_MORE);
	ck_assert_int_eq(R.dones, 1);
	ck_assert_str_eq(R.target, "/p/a?q=1");
	ck_assert_uint_eq(R.path_len, 4);
	ck_assert_str_eq(R.host, "b.example:8000");
	ck_assert_str_eq(R.value[0], "a.example");	/* the field as sent */
	ck_assert_int_eq(run("GET HTTPS://b?x HTTP/1.1\r\nHost: b\r\n\r\n"),
	    HTTP1_MORE);
	ck_assert_str_eq(R.target, "/?x");
	ck_assert_uint_eq(R.path_len, 1);
	ck_assert_str_eq(R.host, "b");
	ck_assert_int_eq(run("GET http://[::1]:80 HTTP/1.0\r\n\r\n"),
	    HTTP1_MORE);
	ck_assert_str_eq(R.target, "/");
	ck_assert_str_eq(R.host, "[::1]:80");
	/* Host is still required on HTTP/1.1, and still checked. */
	expect_reject_why("GET http://a/ HTTP/1.1\r\n\r\n", 400,
	    "missing Host");
	expect_reject_why("GET http://a/ HTTP/1.1\r\nHost: a/b\r\n\r\n", 400,
	    "invalid Host");
	expect_reject_why("GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: a\r\n"
	    "\r\n", 400, "multiple Host");
	/* Pipelined after an absolute-form request: the arena is reused. */
	ck_assert_int_eq(run("GET http://x/1 HTTP/1.1\r\nHost: x\r\n\r\n"
	    GET11 "\r\n"), HTTP1_MORE);
	ck_assert_int_eq(R.dones, 2);
	ck_assert_str_eq(R.target, "/");
	ck_assert_str_eq(R.host, "a");
}
END_TEST

/* --- Framing and Host. ---------------------------------------------------- */

START_TEST(reject_cl_and_te)
{
	expect_reject_why(POST11 "Content-Length: 3\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", 400,
	    "Content-Length with Transfer-Encoding");
	expect_reject_why(POST11 "Transfer-Encoding: chunked\r\n"
	    "Content-Length: 3\r\n\r\n", 400,
	    "Content-Length with Transfer-Encoding");
	ck_assert_int_eq(R.heads, 0);
}
END_TEST

START_TEST(reject_multiple_cl)
{
	expect_reject_why(POST11 "Content-Length: 3\r\nContent-Length: 4\r\n"
	    "\r\nabcd", 400, "multiple Content-Length");
	/* Identical copies too: simpler, and no client needs them. */
	expect_reject_why(POST11 "Content-Length: 3\r\ncontent-length: 3\r\n"
	    "\r\nabc", 400, "multiple Content-Length");
}
END_TEST

START_TEST(reject_bad_cl)
{
	expect_reject_why(POST11 "Content-Length: 1,1\r\n\r\nx", 400,
	    "invalid Content-Length");
	expect_reject_why(POST11 "Content-Length: -1\r\n\r\n", 400,
	    "invalid Content-Length");
	expect_reject_why(POST11 "Content-Length: \r\n\r\n", 400,
	    "invalid Content-Length");
	expect_reject_why(POST11 "Content-Length: 99999999999999999999999\r\n"
	    "\r\n", 400, "Content-Length overflow");
	expect_reject_why(POST11 "Content-Length: 18446744073709551615\r\n"
	    "\r\n", 400, "Content-Length overflow");
}
END_TEST

START_TEST(reject_te)
{
	expect_reject_why(POST11 "Transfer-Encoding: gzip\r\n\r\n", 400,
	    "unsupported Transfer-Encoding");
	expect_reject_why(POST11 "Transfer-Encoding: gzip, chunked\r\n\r\n"
	    "0\r\n\r\n", 400, "unsupported Transfer-Encoding");
	expect_reject_why(POST11 "Transfer-Encoding: chunked, gzip\r\n\r\n",
	    400, "unsupported Transfer-Encoding");
	expect_reject_why(POST11 "Transfer-Encoding: chunked\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
	    "multiple Transfer-Encoding");
	ck_assert_int_eq(R.heads, 0);
}
END_TEST

START_TEST(reject_te_http10)
{
	expect_reject_why("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n"
	    "\r\n3\r\nabc\r\n0\r\n\r\n", 400, "Transfer-Encoding on HTTP/1.0");
}
END_TEST

START_TEST(reject_host)
{
	expect_reject_why("GET / HTTP/1.1\r\nX: a\r\n\r\n", 400,
	    "missing Host");
	expect_reject_why(GET11 "Host: a\r\n\r\n", 400, "multiple Host");
	expect_reject_why("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400,
	    "multiple Host");
	expect_reject_why("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400,
	    "invalid Host");
	expect_reject_why("GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400,
	    "invalid Host");
	expect_reject_why("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400,
	    "invalid Host");
	ck_assert_int_eq(run("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n"),
	    HTTP1_MORE);
	ck_assert_str_eq(R.host, "[::1]:8080");
}
END_TEST

START_TEST(reject_bad_chunks)
{
	expect_reject_why(POST11 "Transfer-Encoding: chunked\r\n\r\n3\nabc",
	    400, "invalid chunk size");
	expect_reject_why(POST11 "Transfer-Encoding: chunked\r\n\r\n"
	    "3\r\nabcX\r\n", 400, "malformed chunk");
	expect_reject_why(POST11 "Transfer-Encoding: chunked\r\n\r\n"
	    "zz\r\n", 400, "invalid chunk size");
	expect_reject_why(POST11 "Transfer-Encoding: chunked\r\n\r\n"
	    "fffffffffffffffff\r\n", 400, "chunk size overflow");
	ck_assert_int_eq(R.heads, 1);
}
END_TEST

/* --- Limits. -------------------------------------------------------------- */

/* A request whose request line is exactly n bytes long. */
static char *
line_of(size_t n)
{
	char	*s = malloc(n + 64);
	size_t	 path = n - strlen("GET  HTTP/1.1");

	memcpy(s, "GET /", 5);
	memset(s + 5, 'a', path - 1);
	snprintf(s + 4 + path, 64, " HTTP/1.1\r\nHost: a\r\n\r\n");
	return s;
}

START_TEST(limit_request_line)
{
	char	*s = line_of(LIM.max_request_line);

	ck_assert_int_eq(run(s), HTTP1_MORE);
	ck_assert_int_eq(R.dones, 1);
	free(s);
	s = line_of(LIM.max_request_line + 1);
	expect_reject_why(s, 414, "request line too long");
	free(s);
	/* Refused as soon as it is too long, without waiting for the end. */
	s = line_of(LIM.max_request_line * 2);
	s[LIM.max_request_line + 1] = '\0';
	expect_reject(s, 414);
	free(s);
}
END_TEST

/* A header section of exactly n bytes (lines with their CRLFs). */
static char *
headers_of(size_t n)
{
	char	*s = malloc(n + 64);
	size_t	 off;

	off = (size_t)sprintf(s, "GET / HTTP/1.1\r\n");
	off += sprintf(s + off, "Host: a\r\nX: ");
	n -= strlen("Host: a\r\nX: \r\n");
	memset(s + off, 'v', n);
	off += n;
	sprintf(s + off, "\r\n\r\n");
	return s;
}

START_TEST(limit_header_bytes)
{
	char	*s = headers_of(LIM.max_header_bytes);

	ck_assert_int_eq(run(s), HTTP1_MORE);
	ck_assert_int_eq(R.dones, 1);
	free(s);
	s = headers_of(LIM.max_header_bytes + 1);
	expect_reject_why(s, 431, "header section too large");
	ck_assert_int_eq(R.heads, 0);
	free(s);
}
END_TEST

START_TEST(limit_header_count)
{
	char		 s[1024];
	size_t		 off;
	unsigned	 i;

	off = (size_t)sprintf(s, "GET / HTTP/1.1\r\nHost: a\r\n");
	for (i = 1; i < LIM.max_headers; i++)
		off += sprintf(s + off, "X%u: v\r\n", i);
	sprintf(s + off, "\r\n");
	ck_assert_int_eq(run(s), HTTP1_MORE);
	ck_assert_uint_eq(R.nfields, LIM.max_headers);
	sprintf(s + off, "Y: v\r\n\r\n");
	expect_reject_why(s, 431, "too many header fields");
}
END_TEST

START_TEST(limit_body_content_length)
{
	ck_assert_int_eq(run(POST11 "Content-Length: 1000\r\n\r\n"),
	    HTTP1_MORE);
	ck_assert_int_eq(R.heads, 1);
	/* 413 is decided on the head, before on_head sees it. */
	expect_reject_why(POST11 "Content-Length: 1001\r\n\r\n", 413,
	    "body too large");
	ck_assert_int_eq(R.heads, 0);
}
END_TEST

START_TEST(limit_body_chunked)
{
	char	 s[2048], chunk[501];
	size_t	 off;

	memset(chunk, 'c', 500);
	chunk[500] = '\0';
	off = (size_t)snprintf(s, sizeof s, POST11
	    "Transfer-Encoding: chunked\r\n\r\n1f4\r\n%s\r\n", chunk);
	snprintf(s + off, sizeof s - off, "1f4\r\n%s\r\n0\r\n\r\n", chunk);
	run_both(s, strlen(s));
	ck_assert_int_eq(R.state, HTTP1_MORE);
	ck_assert_uint_eq(R.body_len, 1000);
	/* 413 once the running total passes, after on_head and some body. */
	snprintf(s + off, sizeof s - off, "1f5\r\n");
	expect_reject_why(s, 413, "body too large");
	ck_assert_int_eq(R.heads, 1);
	ck_assert_uint_eq(R.body_len, 500);
}
END_TEST

/*
 * Caps from the wire protocol (field names are str8, values and the target
 * str16), whatever the limits say: found by fuzz_front, where a 300-byte
 * name was accepted, could not be encoded and the request hung until the
 * queue deadline (503).
 */
START_TEST(limit_wire_caps)
{
	static const struct http1_limits big = {
		.max_request_line = 200000,
		.max_header_bytes = 200000,
		.max_headers = 16,
		.max_body = 1000,
	};
	size_t	 n = 70000 + 256;
	char	*s = malloc(n + 256), *p;

	/* A name of 255 bytes is fine, 256 is refused. */
	p = s + sprintf(s, GET11);
	memset(p, 'n', 255);
	strcpy(p + 255, ": v\r\n\r\n");
	ck_assert_int_eq(run(s), HTTP1_MORE);
	ck_assert_uint_eq(strlen(R.name[1]), 63);	/* copied cut short */
	memset(p, 'n', 256);
	strcpy(p + 256, ": v\r\n\r\n");
	expect_reject_why(s, 431, "header name too long");
	ck_assert_int_eq(R.heads, 0);

	/* Values: 65535 bytes between colon and CRLF, then one more. */
	p = s + sprintf(s, GET11 "X:");
	memset(p, 'v', 65535);
	strcpy(p + 65535, "\r\n\r\n");
	ck_assert_int_eq(run_lim(s, strlen(s), strlen(s), &big), HTTP1_MORE);
	ck_assert_int_eq(R.dones, 1);
	memset(p, 'v', 65536);
	strcpy(p + 65536, "\r\n\r\n");
	ck_assert_int_eq(run_lim(s, strlen(s), 7, &big), HTTP1_ERROR);
	ck_assert_int_eq(R.status, 431);
	ck_assert_str_eq(R.reason, "header value too long");

	/* The target: 65535 bytes, then one more. */
	p = s + sprintf(s, "GET /");
	memset(p, 't', 65534);
	strcpy(p + 65534, " HTTP/1.1\r\nHost: a\r\n\r\n");
	ck_assert_int_eq(run_lim(s, strlen(s), strlen(s), &big), HTTP1_MORE);
	ck_assert_int_eq(R.dones, 1);
	memset(p, 't', 65535);
	strcpy(p + 65535, " HTTP/1.1\r\nHost: a\r\n\r\n");
	ck_assert_int_eq(run_lim(s, strlen(s), 1000, &big), HTTP1_ERROR);
	ck_assert_int_eq(R.status, 414);
	ck_assert_str_eq(R.reason, "request target too long");
	ck_assert_int_eq(R.heads, 0);
	free(s);
}
END_TEST

/* --- Smuggling vectors (tests/conformance/cases.py, smuggling group). --- */

/* Refused on the head: on_head never runs, so nothing is forwarded. */
START_TEST(smuggle_refused_on_head)
{
	static const char *const v[] = {
		POST11 "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "0\r\n\r\nG",
		POST11 "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
		    "5\r\nhello\r\n0\r\n\r\n",
		POST11 "Content-Length: 5, 5\r\n\r\nhello",
		POST11 "Content-Length: 3, 5\r\n\r\nhello",
		POST11 "Content-Length: +5\r\n\r\nhello",
		POST11 "Content-Length: 0x5\r\n\r\nhello",
		POST11 "Content-Length: 1 0\r\n\r\n0123456789",
		POST11 "Content-Length : 5\r\n\r\nhello",
		POST11 "Transfer-Encoding: chunked \t\r\n\r\n0\r\n\r\n",
		POST11 "Transfer-Encoding: \x0b" "chunked\r\n"
		    "Content-Length: 5\r\n\r\n0\r\n\r\n",
		POST11 "Transfer-Encoding: identity\r\n\r\n",
		POST11 "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
		POST11 "Transfer-Encoding:\r\n chunked\r\nContent-Length: 3\r\n"
		    "\r\n0\r\n\r\n",
		POST11 "Transfer-Encoding : chunked\r\nContent-Length: 5\r\n"
		    "\r\n0\r\n\r\n",
		POST11 "X: a\rTransfer-Encoding: chunked\r\nContent-Length: 5"
		    "\r\n\r\nhello",
		"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "5\r\nhello\r\n0\r\n\r\n",
		NULL,
	};
	unsigned	 i;

	for (i = 0; v[i] != NULL; i++) {
		expect_reject(v[i], 400);
		ck_assert_msg(R.heads == 0, "vector %u reached on_head", i);
	}
}
END_TEST

/* Bad chunk framing: refused in the body, never with on_end. */
START_TEST(smuggle_refused_in_body)
{
	static const char *const v[] = {
		"0x5\r\nhello\r\n0\r\n\r\n",
		" 5\r\nhello\r\n0\r\n\r\n",
		"-5\r\nhello\r\n0\r\n\r\n",
		"3\r\nhello\r\n0\r\n\r\n",
		"5\r\nhello\n0\r\n\r\n",
		"5\r\nhello\r\n0\r\n\n",
		"5;a\rb\r\nhello\r\n0\r\n\r\n",
		"5\r\nhello\r\n0\r\nX: y\r\n z\r\n\r\n",
		NULL,
	};
	char		 s[256];
	unsigned	 i;

	for (i = 0; v[i] != NULL; i++) {
		snprintf(s, sizeof s, POST11 "Transfer-Encoding: chunked\r\n"
		    "\r\n%s", v[i]);
		expect_reject(s, 400);
		ck_assert_msg(R.ends == 0, "vector %u ended a message", i);
	}
}
END_TEST

/* What is not an attack stays what it is. */
START_TEST(smuggle_framing_kept)
{
	/* A Content-Length in the trailers does not change the framing. */
	ck_assert_int_eq(run(POST11 "Transfer-Encoding: chunked\r\n\r\n"
	    "5\r\nhello\r\n0\r\nContent-Length: 50\r\n\r\n" GET11 "\r\n"),
	    HTTP1_MORE);
	ck_assert_int_eq(R.dones, 2);
	ck_assert_uint_eq(R.body_len, 5);
	/* A request inside a GET body is body. */
	ck_assert_int_eq(run(GET11 "Content-Length: 26\r\n\r\n"
	    "GET /x HTTP/1.1\r\nHost: a\r\n"), HTTP1_MORE);
	ck_assert_int_eq(R.heads, 1);
	ck_assert_int_eq(R.dones, 1);
	ck_assert_uint_eq(R.body_len, 26);
	/* Garbage after a complete chunked message is the next request. */
	expect_reject_why(POST11 "Transfer-Encoding: chunked\r\n\r\n"
	    "0\r\n\r\nXYZ\r\n\r\n", 501, "unknown method");
	ck_assert_int_eq(R.dones, 1);
}
END_TEST

/* --- Callbacks. ----------------------------------------------------------- */

START_TEST(on_head_404_stops)
{
	R.head_ret = 404;
	expect_reject_why(POST11 "Content-Length: 3\r\n\r\nabc" GET11 "\r\n",
	    404, "request refused");
	ck_assert_int_eq(R.heads, 1);
	ck_assert_int_eq(R.bodies, 0);
	ck_assert_int_eq(R.ends, 0);
	R.head_ret = -1;
	expect_reject(GET11 "\r\n", 500);
}
END_TEST

START_TEST(on_body_error)
{
	R.body_ret = 1;
	ck_assert_int_eq(run(POST11 "Content-Length: 3\r\n\r\nabc"),
	    HTTP1_ERROR);
	ck_assert_int_eq(R.status, 500);
	ck_assert_str_eq(R.reason, "body refused");
	ck_assert_int_eq(R.bodies, 1);
	ck_assert_int_eq(R.ends, 0);
	R.body_ret = 503;
	ck_assert_int_eq(run(POST11 "Content-Length: 3\r\n\r\nabc"),
	    HTTP1_ERROR);
	ck_assert_int_eq(R.status, 503);
}
END_TEST

START_TEST(on_end_error)
{
	R.end_ret = -1;
	expect_reject_why(GET11 "\r\n", 500, "request end refused");
	ck_assert_int_eq(R.ends, 1);
	ck_assert_int_eq(R.dones, 0);
}
END_TEST

/* --- State: idle, finish, errors are final, the arena. -------------------- */

START_TEST(idle_and_finish)
{
	struct http1	*h;
	size_t		 used;

	rec_reset();
	h = http1_new(&LIM, &CB, NULL);
	ck_assert_int_eq(http1_idle(h), 1);
	ck_assert_int_eq(http1_finish(h), HTTP1_MORE);
	ck_assert_int_eq(http1_feed(h, "\r\n", 2, &used), HTTP1_MORE);
	ck_assert_int_eq(http1_idle(h), 1);
	ck_assert_int_eq(http1_feed(h, "G", 1, &used), HTTP1_MORE);
	ck_assert_int_eq(http1_idle(h), 0);
	ck_assert_int_eq(http1_feed(h, "ET / HTTP/1.1\r\nHost: a\r\n\r\n", 26,
	    &used), HTTP1_DONE);
	ck_assert_uint_eq(used, 26);
	ck_assert_int_eq(http1_idle(h), 1);
	ck_assert_int_eq(http1_finish(h), HTTP1_MORE);
	http1_next(h);
	ck_assert_int_eq(http1_idle(h), 1);
	ck_assert_int_eq(http1_finish(h), HTTP1_MORE);
	http1_free(h);
}
END_TEST

START_TEST(finish_mid_head)
{
	struct http1	*h;
	size_t		 used;

	h = http1_new(&LIM, &CB, NULL);
	ck_assert_int_eq(http1_feed(h, "GET / HT", 8, &used), HTTP1_MORE);
	ck_assert_int_eq(http1_finish(h), HTTP1_ERROR);
	ck_assert_int_eq(http1_error_status(h), 400);
	ck_assert_str_eq(http1_error_reason(h), "incomplete request head");
	http1_free(h);
}
END_TEST

START_TEST(finish_mid_body)
{
	struct http1	*h;
	const char	*s = POST11 "Content-Length: 5\r\n\r\nab";
	size_t		 used;

	rec_reset();
	h = http1_new(&LIM, &CB, NULL);
	ck_assert_int_eq(http1_feed(h, s, strlen(s), &used), HTTP1_MORE);
	ck_assert_uint_eq(used, strlen(s));
	ck_assert_int_eq(http1_idle(h), 0);
	ck_assert_int_eq(http1_finish(h), HTTP1_ERROR);
	ck_assert_int_eq(http1_error_status(h), 400);
	ck_assert_str_eq(http1_error_reason(h), "incomplete request body");
	ck_assert_int_eq(R.ends, 0);
	http1_free(h);
}
END_TEST

START_TEST(error_is_final)
{
	struct http1	*h;
	size_t		 used = 99;

	h = http1_new(&LIM, &CB, NULL);
	ck_assert_int_eq(http1_error_status(h), 0);
	ck_assert_int_eq(http1_feed(h, "GET / HTTP/1.1\n", 15, &used),
	    HTTP1_ERROR);
	ck_assert_uint_le(used, 15);
	ck_assert_int_eq(http1_feed(h, GET11 "\r\n", 27, &used), HTTP1_ERROR);
	ck_assert_uint_eq(used, 0);
	http1_next(h);
	ck_assert_int_eq(http1_feed(h, GET11 "\r\n", 27, &used), HTTP1_ERROR);
	ck_assert_int_eq(http1_finish(h), HTTP1_ERROR);
	ck_assert_int_eq(http1_error_status(h), 400);
	ck_assert_int_eq(http1_idle(h), 0);
	http1_free(h);
}
END_TEST

START_TEST(arena_reused)
{
	const char	*s = GET11 "X-A: 1234567890\r\n\r\n";
	struct http1	*h;
	const char	*first;
	size_t		 used;
	int		 i;

	rec_reset();
	h = http1_new(&LIM, &CB, NULL);
	ck_assert_ptr_null(http1_request(h));
	ck_assert_int_eq(http1_feed(h, s, strlen(s), &used), HTTP1_DONE);
	first = R.method_ptr;
	for (i = 0; i < 100; i++) {
		http1_next(h);
		ck_assert_int_eq(http1_feed(h, s, strlen(s), &used),
		    HTTP1_DONE);
		ck_assert_ptr_eq(R.method_ptr, first);
		ck_assert_ptr_eq(http1_request(h)->method, first);
	}
	ck_assert_int_eq(R.heads, 101);
	http1_free(h);
}
END_TEST

START_TEST(default_limits)
{
	struct http1	*h;
	size_t		 used;
	const char	*s = GET11 "\r\n";

	h = http1_new(NULL, NULL, NULL);
	ck_assert_int_eq(http1_feed(h, s, strlen(s), &used), HTTP1_DONE);
	ck_assert_str_eq(http1_request(h)->target, "/");
	http1_free(h);
	http1_free(NULL);
}
END_TEST

/* Each test starts with a clean record, also under CK_FORK=no. */
static void
setup(void)
{
	memset(&R, 0, sizeof R);
}

static Suite *
http1_suite(void)
{
	Suite	*s = suite_create("http1");
	TCase	*t;

	t = tcase_create("basics");
	tcase_add_test(t, simple_get);
	tcase_add_test(t, fields_as_sent_trimmed);
	tcase_add_test(t, obs_text_value_ok);
	tcase_add_test(t, split_every_boundary);
	tcase_add_test(t, pipelined_consumed);
	tcase_add_test(t, pipelined_byte_at_a_time);
	tcase_add_test(t, content_length_pieces);
	tcase_add_test(t, content_length_zero);
	tcase_add_test(t, chunked_dechunked);
	tcase_add_test(t, chunked_case_insensitive);
	tcase_add_test(t, head_request);
	tcase_add_test(t, options_star);
	tcase_add_test(t, absolute_form);
	tcase_add_test(t, http10_no_host);
	tcase_add_test(t, leading_empty_lines);
	tcase_add_test(t, upgrade_ignored);
	tcase_add_checked_fixture(t, setup, NULL);
	suite_add_tcase(s, t);

	t = tcase_create("keepalive_expect");
	tcase_add_test(t, keepalive_10_default_close);
	tcase_add_test(t, keepalive_10_keep_alive);
	tcase_add_test(t, keepalive_11_default);
	tcase_add_test(t, keepalive_11_close);
	tcase_add_test(t, data_after_close);
	tcase_add_test(t, expect_continue);
	tcase_add_test(t, expect_other_417);
	tcase_add_checked_fixture(t, setup, NULL);
	suite_add_tcase(s, t);

	t = tcase_create("reject");
	tcase_add_test(t, reject_bare_lf);
	tcase_add_test(t, reject_bare_cr);
	tcase_add_test(t, reject_obs_fold);
	tcase_add_test(t, reject_space_before_colon);
	tcase_add_test(t, reject_bad_name);
	tcase_add_test(t, reject_ctl_in_value);
	tcase_add_test(t, reject_request_line);
	tcase_add_test(t, reject_version);
	tcase_add_test(t, reject_method);
	tcase_add_test(t, reject_target_form);
	tcase_add_test(t, reject_cl_and_te);
	tcase_add_test(t, reject_multiple_cl);
	tcase_add_test(t, reject_bad_cl);
	tcase_add_test(t, reject_te);
	tcase_add_test(t, reject_te_http10);
	tcase_add_test(t, reject_host);
	tcase_add_test(t, reject_bad_chunks);
	tcase_add_test(t, smuggle_refused_on_head);
	tcase_add_test(t, smuggle_refused_in_body);
	tcase_add_test(t, smuggle_framing_kept);
	tcase_add_checked_fixture(t, setup, NULL);
	suite_add_tcase(s, t);

	t = tcase_create("limits");
	tcase_add_test(t, limit_request_line);
	tcase_add_test(t, limit_header_bytes);
	tcase_add_test(t, limit_header_count);
	tcase_add_test(t, limit_body_content_length);
	tcase_add_test(t, limit_body_chunked);
	tcase_add_test(t, limit_wire_caps);
	tcase_add_checked_fixture(t, setup, NULL);
	suite_add_tcase(s, t);

	t = tcase_create("state");
	tcase_add_test(t, on_head_404_stops);
	tcase_add_test(t, on_body_error);
	tcase_add_test(t, on_end_error);
	tcase_add_test(t, idle_and_finish);
	tcase_add_test(t, finish_mid_head);
	tcase_add_test(t, finish_mid_body);
	tcase_add_test(t, error_is_final);
	tcase_add_test(t, arena_reused);
	tcase_add_test(t, default_limits);
	tcase_add_checked_fixture(t, setup, NULL);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(http1_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
