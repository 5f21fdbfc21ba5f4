/*
 * check_http1_scan.c -- the raw pre-scanner alone: clean lengths, the
 * end of a section, each verdict and limit, and that the verdict does not
 * depend on how the bytes are split.  Also the one tchar table.
 */

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "http1_scan.h"
#include "tchar.h"

struct verdict {
	size_t		 clean;		/* bytes taken before stopping */
	int		 end;
	int		 status;
	const char	*reason;
};

/* Run s through a fresh scanner, step bytes at a time. */
static struct verdict
scan_by(const char *s, size_t step, int trailer)
{
	struct http1_scan	 sc;
	struct verdict		 v = { 0, 0, 0, NULL };
	size_t			 n = strlen(s), k, got;

	http1_scan_init(&sc, 64, 128, 4);
	if (trailer)
		http1_scan_trailer(&sc);
	while (v.clean < n) {
		k = n - v.clean < step ? n - v.clean : step;
		got = http1_scan_run(&sc, s + v.clean, k, &v.end);
		v.clean += got;
		if (v.end || http1_scan_status(&sc) != 0)
			break;
		ck_assert_uint_eq(got, k);
	}
	v.status = http1_scan_status(&sc);
	v.reason = http1_scan_reason(&sc);
	return v;
}

static struct verdict
scan_both(const char *s, int trailer)
{
	struct verdict	 a = scan_by(s, strlen(s), trailer);
	struct verdict	 b = scan_by(s, 1, trailer);

	ck_assert_uint_eq(a.clean, b.clean);
	ck_assert_int_eq(a.end, b.end);
	ck_assert_int_eq(a.status, b.status);
	return a;
}

static void
expect_bad(const char *s, size_t at, int status, const char *reason)
{
	struct verdict	 v = scan_both(s, 0);

	ck_assert_int_eq(v.status, status);
	ck_assert_str_eq(v.reason, reason);
	ck_assert_uint_eq(v.clean, at);
	ck_assert_int_eq(v.end, 0);
}

START_TEST(clean_head)
{
	const char	*s = "GET /a?b HTTP/1.1\r\nHost: x\r\nX-Y:  v \r\n\r\n";
	struct http1_scan sc;
	int		 end;

	struct verdict	 v = scan_both(s, 0);
	ck_assert_int_eq(v.status, 0);
	ck_assert_int_eq(v.end, 1);
	ck_assert_uint_eq(v.clean, strlen(s));
	/* Stops right after the empty line: the body is not its business. */
	http1_scan_init(&sc, 64, 128, 4);
	ck_assert_uint_eq(http1_scan_run(&sc, "GET / HTTP/1.0\r\n\r\nxyz", 21,
	    &end), 18);
	ck_assert_int_eq(end, 1);
	ck_assert_int_eq(http1_scan_major(&sc), 1);
	ck_assert_int_eq(http1_scan_minor(&sc), 0);
}
END_TEST

START_TEST(start_state)
{
	struct http1_scan sc;
	int		 end;

	http1_scan_init(&sc, 64, 128, 4);
	ck_assert_int_eq(http1_scan_at_start(&sc), 1);
	ck_assert_uint_eq(http1_scan_run(&sc, "\r\n\r\nG", 5, &end), 5);
	ck_assert_int_eq(http1_scan_at_start(&sc), 0);
	http1_scan_head(&sc);
	ck_assert_int_eq(http1_scan_at_start(&sc), 1);
	ck_assert_int_eq(http1_scan_minor(&sc), 0);
}
END_TEST

START_TEST(rejections)
{
	expect_bad("GET / HTTP/1.1\nHost: x\r\n\r\n", 14, 400,
	    "bare LF in request line");
	expect_bad("GET / HTTP/1.1\r\nHost: x\n\r\n", 23, 400,
	    "bare LF in header");
	expect_bad("GET / HTTP/1.1\r\nHost: x\rY", 24, 400, "bare CR in header");
	expect_bad("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 22, 400,
	    "obs-fold in header");
	expect_bad("GET / HTTP/1.1\r\nA : b\r\n\r\n", 17, 400,
	    "whitespace before colon");
	expect_bad("GET / HTTP/1.1\r\n: b\r\n\r\n", 16, 400,
	    "empty header name");
	expect_bad("GET / HTTP/1.1\r\nA(: b\r\n\r\n", 17, 400,
	    "invalid char in header name");
	expect_bad("GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 20, 400,
	    "invalid char in header value");
	expect_bad("GET /a#b HTTP/1.1\r\n\r\n", 6, 400,
	    "invalid request target");
	expect_bad("GET  / HTTP/1.1\r\n\r\n", 4, 400, "invalid request target");
	expect_bad("G(T / HTTP/1.1\r\n\r\n", 1, 400, "invalid method");
	expect_bad("GET / HTTP/2.0\r\n\r\n", 13, 505,
	    "unsupported HTTP version");
	expect_bad("GET / http/1.1\r\n\r\n", 6, 400, "malformed HTTP version");
	expect_bad("GET / HTTP/1.1 \r\n\r\n", 14, 400,
	    "malformed request line");
	expect_bad("\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET", 17, 400,
	    "too many empty lines");
}
END_TEST

START_TEST(limits)
{
	char	 buf[512];

	/* max_request_line 64 */
	memset(buf, 0, sizeof buf);
	memcpy(buf, "GET /", 5);
	memset(buf + 5, 'a', 70);
	expect_bad(buf, 64, 414, "request line too long");
	/* max_headers 4 */
	expect_bad("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n",
	    40, 431, "too many header fields");
	/* max_header_bytes 128 */
	snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nA: %0130d\r\n\r\n", 0);
	expect_bad(buf, 16 + 128, 431, "header section too large");
}
END_TEST

START_TEST(trailer_section)
{
	char		 buf[256];
	struct verdict	 v = scan_both("X-T: 1\r\n\r\n", 1);

	ck_assert_int_eq(v.status, 0);
	ck_assert_int_eq(v.end, 1);
	ck_assert_uint_eq(v.clean, 10);
	v = scan_both("X-T: 1\n\r\n", 1);
	ck_assert_int_eq(v.status, 400);
	snprintf(buf, sizeof buf, "A: %0140d\r\n\r\n", 0);
	v = scan_both(buf, 1);
	ck_assert_int_eq(v.status, 431);
	ck_assert_str_eq(v.reason, "trailer section too large");
}
END_TEST

START_TEST(tchar_table)
{
	unsigned	 c;
	int		 want;

	for (c = 0; c < 256; c++) {
		want = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || (c != 0 &&
		    strchr("!#$%&'*+-.^_`|~", (int)c) != NULL);
		ck_assert_int_eq(tchar_is((unsigned char)c), want);
		want = (c >= 0x20 && c != 0x7f) || c == '\t';
		ck_assert_int_eq((tchar_class[c] & TCHAR_VALUE) != 0, want);
		want = c >= 0x21 && c <= 0x7e && c != '#';
		ck_assert_int_eq((tchar_class[c] & TCHAR_TARGET) != 0, want);
	}
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("http1_scan");
	TCase	*t = tcase_create("scan");
	SRunner	*sr;
	int	 nf;

	tcase_add_test(t, clean_head);
	tcase_add_test(t, start_state);
	tcase_add_test(t, rejections);
	tcase_add_test(t, limits);
	tcase_add_test(t, trailer_section);
	tcase_add_test(t, tchar_table);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? 0 : 1;
}
