/*
 * check_hfield.c -- header-field policy: the name compare, the hop-by-hop
 * set, Connection-named fields, and the fields forwarded upstream
 * (dropped, Host replaced, X-Forwarded-For appended, -Proto set, the max).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hfield.h"

/* A front edge's own layout, as hfield_req.get reads it. */
struct pair {
	const char	*name, *value;
};

static void
get(const void *src, unsigned i, struct hfield *out)
{
	const struct pair *p = (const struct pair *)src + i;

	out->name = p->name;
	out->name_len = strlen(p->name);
	out->value = p->value;
	out->value_len = strlen(p->value);
}

#define MAXOUT	64

/* What came out, as "name: value" lines. */
struct got {
	char		 line[MAXOUT][512];
	unsigned	 n;
};

static void
put(void *arg, const struct hfield *f)
{
	struct got *g = arg;

	ck_assert_uint_lt(g->n, MAXOUT);
	snprintf(g->line[g->n++], sizeof g->line[0], "%.*s: %.*s",
	    (int)f->name_len, f->name, (int)f->value_len, f->value);
}

/* Forward n pairs from peer 10.0.0.9 over proto; max fields out. */
static void
forward(const struct pair *in, unsigned n, const char *host, unsigned max,
    struct got *g)
{
	struct hfield_req req = { get, in, n, host, host ? strlen(host) : 0,
	    "10.0.0.9", "https", NULL };
	struct hfield_out out;

	memset(g, 0, sizeof(*g));
	out.emit = put;
	out.arg = g;
	out.max = max;
	ck_assert_int_eq(hfield_forward(&req, &out), 0);
	hfield_out_free(&out);
}

START_TEST(test_name_is)
{
	ck_assert(hfield_name_is("Content-Length", 14, "content-length"));
	ck_assert(hfield_name_is("HOST", 4, "host"));
	/* Only len bytes count, and all of the literal must match. */
	ck_assert(hfield_name_is("hostname", 4, "host"));
	ck_assert(!hfield_name_is("hos", 3, "host"));
	ck_assert(!hfield_name_is("hosts", 5, "host"));
	ck_assert(!hfield_name_is("", 0, "host"));
	ck_assert(hfield_name_is("", 0, ""));
}
END_TEST

START_TEST(test_hop_by_hop)
{
	static const char *hop[] = { "connection", "Connection", "KEEP-ALIVE",
	    "te", "TE", "trailer", "upgrade", "proxy-connection",
	    "transfer-encoding", "Transfer-Encoding", "proxy-authenticate",
	    "proxy-authorization" };
	static const char *end2end[] = { "content-length", "content-type",
	    "t", "tex", "trailers", "upgrade-insecure-requests", "connectio",
	    "connection-x", "x-connection", "keep-alive2", "host", "" };
	size_t i;

	for (i = 0; i < sizeof hop / sizeof hop[0]; i++)
		ck_assert_msg(hfield_hop_by_hop(hop[i], strlen(hop[i])),
		    "%s", hop[i]);
	for (i = 0; i < sizeof end2end / sizeof end2end[0]; i++)
		ck_assert_msg(!hfield_hop_by_hop(end2end[i],
		    strlen(end2end[i])), "%s", end2end[i]);
	/* Only len bytes count: a prefix of a longer buffer. */
	ck_assert(hfield_hop_by_hop("te-extra", 2));
	ck_assert(!hfield_hop_by_hop("connection", 9));
}
END_TEST

START_TEST(test_conn_listed)
{
	const char *v = " close,X-Secret ,\tfoo-bar,,";

	ck_assert(hfield_conn_listed(v, strlen(v), "x-secret", 8));
	ck_assert(hfield_conn_listed(v, strlen(v), "Foo-Bar", 7));
	ck_assert(hfield_conn_listed(v, strlen(v), "close", 5));
	ck_assert(!hfield_conn_listed(v, strlen(v), "x-secre", 7));
	ck_assert(!hfield_conn_listed(v, strlen(v), "foo", 3));
	ck_assert(!hfield_conn_listed("", 0, "foo", 3));
	/* Only clen bytes of the value count. */
	ck_assert(!hfield_conn_listed("a, secret", 4, "secret", 6));
}
END_TEST

START_TEST(test_forward_policy)
{
	static const struct pair in[] = {
		{ "Host", "example.com" }, { "Accept", "*/*" },
		{ "Connection", "keep-alive, X-Hop" }, { "X-Hop", "1" },
		{ "Keep-Alive", "timeout=5" }, { "TE", "trailers" },
		{ "X-Forwarded-Proto", "gopher" }, { "X-Request-Id", "abc" },
		{ "x-forwarded-for", "192.0.2.1" }, { "Cookie", "a=1" },
	};
	struct got g;

	forward(in, sizeof in / sizeof in[0], "example.com", 256, &g);
	ck_assert_uint_eq(g.n, 5);
	ck_assert_str_eq(g.line[0], "Host: example.com");
	ck_assert_str_eq(g.line[1], "Accept: */*");
	ck_assert_str_eq(g.line[2], "Cookie: a=1");
	ck_assert_str_eq(g.line[3], "x-forwarded-for: 192.0.2.1, 10.0.0.9");
	ck_assert_str_eq(g.line[4], "x-forwarded-proto: https");
}
END_TEST

START_TEST(test_forward_host)
{
	static const struct pair in[] = {
		{ "Host", "wrong" }, { "A", "1" }, { "host", "again" },
	};
	static const struct pair nohost[] = { { "A", "1" } };
	struct got g;

	/* An absolute-form authority replaces Host, sent once in place. */
	forward(in, 3, "right:8080", 256, &g);
	ck_assert_uint_eq(g.n, 4);
	ck_assert_str_eq(g.line[0], "Host: right:8080");
	ck_assert_str_eq(g.line[1], "A: 1");
	ck_assert_str_eq(g.line[2], "x-forwarded-for: 10.0.0.9");
	/* No Host field (HTTP/1.0 absolute-form): one added at the end. */
	forward(nohost, 1, "right", 256, &g);
	ck_assert_uint_eq(g.n, 4);
	ck_assert_str_eq(g.line[1], "host: right");
	/* Neither: none. */
	forward(nohost, 1, NULL, 256, &g);
	ck_assert_uint_eq(g.n, 3);
	ck_assert_str_eq(g.line[0], "A: 1");
}
END_TEST

START_TEST(test_forward_max)
{
	static const struct pair in[] = {
		{ "A", "1" }, { "B", "2" }, { "C", "3" }, { "D", "4" },
		{ "X-Forwarded-For", "192.0.2.7" },
	};
	struct got g;

	/* The client's fields give way, never ours; the X-Forwarded-For
	 * past the cut still counts. */
	forward(in, 5, NULL, 4, &g);
	ck_assert_uint_eq(g.n, 4);
	ck_assert_str_eq(g.line[0], "A: 1");
	ck_assert_str_eq(g.line[1], "B: 2");
	ck_assert_str_eq(g.line[2], "x-forwarded-for: 192.0.2.7, 10.0.0.9");
	ck_assert_str_eq(g.line[3], "x-forwarded-proto: https");
}
END_TEST

START_TEST(test_forward_xff_repeated)
{
	static const struct pair in[] = {
		{ "X-Forwarded-For", "192.0.2.1, 192.0.2.2" }, { "A", "1" },
		{ "x-forwarded-for", "192.0.2.3" },
	};
	struct got g;

	/* Repeated fields are one list, in order: none is lost. */
	forward(in, 3, NULL, 256, &g);
	ck_assert_uint_eq(g.n, 3);
	ck_assert_str_eq(g.line[1],
	    "x-forwarded-for: 192.0.2.1, 192.0.2.2, 192.0.2.3, 10.0.0.9");
}
END_TEST

START_TEST(test_forward_long_xff)
{
	static char big[400];
	struct pair in[1] = { { "X-Forwarded-For", big } };
	struct got g;

	/* Longer than the inline buffer: the value goes to the heap. */
	memset(big, 'a', sizeof big - 1);
	forward(in, 1, NULL, 256, &g);
	ck_assert_uint_eq(g.n, 2);
	ck_assert_uint_eq(strlen(g.line[0]), 17 + 399 + 2 + 8);
	ck_assert_str_eq(g.line[0] + strlen(g.line[0]) - 10, ", 10.0.0.9");
}
END_TEST

static Suite *
hfield_suite(void)
{
	Suite	*s = suite_create("hfield");
	TCase	*tc = tcase_create("hfield");

	tcase_add_test(tc, test_name_is);
	tcase_add_test(tc, test_hop_by_hop);
	tcase_add_test(tc, test_conn_listed);
	tcase_add_test(tc, test_forward_policy);
	tcase_add_test(tc, test_forward_host);
	tcase_add_test(tc, test_forward_max);
	tcase_add_test(tc, test_forward_xff_repeated);
	tcase_add_test(tc, test_forward_long_xff);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(hfield_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
