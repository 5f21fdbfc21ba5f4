/*
 * check_route.c -- route_match: segment boundaries, longest prefix, host
 * rules, ties, no match.  Tables are built from hand-made confs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "http1.h"
#include "route.h"

struct spec {
	const char	*host;
	const char	*prefix;
	const char	*deployment;
};

static struct conf		 conf;
static struct route_table	*rt;

static void
build(const struct spec *s, unsigned n)
{
	unsigned	i;

	memset(&conf, 0, sizeof conf);
	conf.routes = calloc(n + 1, sizeof *conf.routes);
	ck_assert_ptr_nonnull(conf.routes);
	for (i = 0; i < n; i++) {
		conf.routes[i].host = (char *)s[i].host;
		conf.routes[i].prefix = (char *)s[i].prefix;
		conf.routes[i].prefix_len = strlen(s[i].prefix);
		conf.routes[i].deployment = (char *)s[i].deployment;
	}
	conf.nroutes = n;
	rt = route_table_new(&conf);
	ck_assert_ptr_nonnull(rt);
}

static void
unbuild(void)
{
	route_table_free(rt);
	free(conf.routes);
	rt = NULL;
}

/* The deployment chosen for host + path, or NULL. */
static const char *
pick(const char *host, const char *path)
{
	const struct conf_route	*r;

	r = route_match(rt, host, host != NULL ? strlen(host) : 0, path,
	    strlen(path));
	return (r != NULL ? r->deployment : NULL);
}

START_TEST(test_boundary)
{
	static const struct spec s[] = { { NULL, "/echo", "echo" } };

	build(s, 1);
	ck_assert_str_eq(pick(NULL, "/echo"), "echo");
	ck_assert_str_eq(pick(NULL, "/echo/"), "echo");
	ck_assert_str_eq(pick(NULL, "/echo/x/y"), "echo");
	ck_assert_str_eq(pick(NULL, "/echo?q=1"), "echo");
	ck_assert_ptr_null(pick(NULL, "/echoes"));
	ck_assert_ptr_null(pick(NULL, "/ech"));
	ck_assert_ptr_null(pick(NULL, "/"));
	ck_assert_ptr_null(pick(NULL, ""));
	ck_assert_ptr_null(pick(NULL, "/Echo"));
	/* The length given is the path, not the string. */
	ck_assert_ptr_nonnull(route_match(rt, NULL, 0, "/echoes", 5));
	ck_assert_ptr_null(route_match(rt, NULL, 0, "/echo/x", 4));
	unbuild();
}
END_TEST

START_TEST(test_trailing_slash)
{
	static const struct spec s[] = { { NULL, "/api/", "api" } };

	build(s, 1);
	ck_assert_str_eq(pick(NULL, "/api/"), "api");
	ck_assert_str_eq(pick(NULL, "/api/v1"), "api");
	ck_assert_str_eq(pick(NULL, "/api//x"), "api");
	ck_assert_ptr_null(pick(NULL, "/api"));
	ck_assert_ptr_null(pick(NULL, "/apix"));
	unbuild();
}
END_TEST

START_TEST(test_root)
{
	static const struct spec s[] = { { NULL, "/", "root" } };

	build(s, 1);
	ck_assert_str_eq(pick(NULL, "/"), "root");
	ck_assert_str_eq(pick(NULL, "/anything/at/all"), "root");
	ck_assert_str_eq(pick("some.host", "/x"), "root");
	ck_assert_ptr_null(pick(NULL, ""));
	unbuild();
}
END_TEST

START_TEST(test_longest)
{
	/* Conf order is shortest first: the sort must not depend on it. */
	static const struct spec s[] = {
		{ NULL, "/", "root" },
		{ NULL, "/a", "a" },
		{ NULL, "/a/b", "ab" },
		{ NULL, "/a/b/c/", "abc" },
		{ NULL, "/b", "b" },
	};

	build(s, 5);
	ck_assert_str_eq(pick(NULL, "/a/b/x"), "ab");
	ck_assert_str_eq(pick(NULL, "/a/b"), "ab");
	ck_assert_str_eq(pick(NULL, "/a/bc"), "a");
	ck_assert_str_eq(pick(NULL, "/a/b/c"), "ab");
	ck_assert_str_eq(pick(NULL, "/a/b/c/d"), "abc");
	ck_assert_str_eq(pick(NULL, "/a"), "a");
	ck_assert_str_eq(pick(NULL, "/ab"), "root");
	ck_assert_str_eq(pick(NULL, "/b/"), "b");
	ck_assert_str_eq(pick(NULL, "/c"), "root");
	unbuild();
}
END_TEST

START_TEST(test_host)
{
	static const struct spec s[] = {
		{ NULL, "/a", "any-a" },
		{ "example.com", "/a", "ex-a" },
		{ "example.com", "/", "ex-root" },
		{ NULL, "/a/long", "any-long" },
		{ "[::1]", "/", "v6" },
	};

	build(s, 5);
	/* Host-specific beats host-less at equal prefix length. */
	ck_assert_str_eq(pick("example.com", "/a/x"), "ex-a");
	ck_assert_str_eq(pick("EXAMPLE.Com", "/a"), "ex-a");
	ck_assert_str_eq(pick("example.com:8080", "/a"), "ex-a");
	ck_assert_str_eq(pick("example.com", "/b"), "ex-root");
	/* A longer host-less prefix beats a shorter host-specific one. */
	ck_assert_str_eq(pick("example.com", "/a/long/x"), "any-long");
	/* Other hosts (or none) only see host-less routes. */
	ck_assert_str_eq(pick("other.com", "/a"), "any-a");
	ck_assert_str_eq(pick(NULL, "/a"), "any-a");
	ck_assert_str_eq(pick("", "/a"), "any-a");
	ck_assert_ptr_null(pick("other.com", "/b"));
	ck_assert_ptr_null(pick("example.co", "/b"));
	ck_assert_ptr_null(pick("example.com.evil", "/b"));
	ck_assert_ptr_null(pick("xexample.com", "/b"));
	ck_assert_str_eq(pick("[::1]:8000", "/b"), "v6");
	ck_assert_str_eq(pick("[::1]", "/b"), "v6");
	ck_assert_ptr_null(pick("[::2]:8000", "/b"));
	/* hostlen bounds the host like pathlen bounds the path. */
	ck_assert_str_eq(route_match(rt, "example.com.evil", 11, "/b", 2)->
	    deployment, "ex-root");
	unbuild();
}
END_TEST

START_TEST(test_ties)
{
	/* conf_load rejects exact duplicates; the table still must not guess. */
	static const struct spec s[] = {
		{ NULL, "/x", "first" },
		{ "h", "/x", "host-first" },
		{ NULL, "/x", "second" },
		{ "h", "/x", "host-second" },
		{ NULL, "/y", "y" },
	};

	build(s, 5);
	ck_assert_str_eq(pick(NULL, "/x"), "first");
	ck_assert_str_eq(pick("h", "/x"), "host-first");
	ck_assert_str_eq(pick("H:1", "/x/z"), "host-first");
	ck_assert_str_eq(pick("h", "/y"), "y");
	unbuild();
}
END_TEST

START_TEST(test_no_match)
{
	static const struct spec s[] = {
		{ NULL, "/a", "a" },
		{ "h", "/", "h" },
	};

	build(s, 0);
	ck_assert_ptr_null(pick(NULL, "/"));
	ck_assert_ptr_null(pick("h", "/a"));
	unbuild();

	build(s, 2);
	ck_assert_ptr_null(pick(NULL, "/b"));
	ck_assert_ptr_null(pick("g", "/"));
	ck_assert_str_eq(pick("h", "/b"), "h");
	unbuild();
}
END_TEST

/* Hundreds of routes: each path finds its own, in any conf order. */
START_TEST(test_many)
{
	static struct spec	 s[400];
	static char		 names[400][32];
	char			 path[64];
	unsigned		 i, n = 400;

	for (i = 0; i < n; i++) {
		/* Reverse nesting: "/r/5/..." before "/r/5". */
		if (i % 2 == 0)
			snprintf(names[i], sizeof names[i], "/r/%u", i / 2);
		else
			snprintf(names[i], sizeof names[i], "/r/%u/sub", i / 2);
		s[i].prefix = names[i];
		s[i].deployment = names[i];
		s[i].host = (i % 4 == 3) ? "only.host" : NULL;
	}
	build(s, n);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/leaf", names[i]);
		if (s[i].host != NULL) {
			ck_assert_str_eq(pick("only.host", path), names[i]);
			ck_assert_str_eq(pick(NULL, path), names[i - 1]);
		} else
			ck_assert_str_eq(pick(NULL, path), names[i]);
	}
	ck_assert_ptr_null(pick(NULL, "/r/1000"));
	unbuild();
}
END_TEST

/*
 * route_pick on a request for target (with one header, if hname): the
 * name and the forwarded target as "NAME TARGET", "NAME" for header
 * routes (the target is the request's), or "-" when it names none.
 */
static const char *
named(const struct conf_route *r, const char *target, const char *hname,
    const char *hvalue)
{
	static char		 out[512];
	struct http1_request	 req;
	struct http1_field	 f;
	struct route_pick	 pk;
	const char		*q;

	memset(&req, 0, sizeof req);
	req.target = target;
	req.target_len = strlen(target);
	q = strchr(target, '?');
	req.path_len = q != NULL ? (size_t)(q - target) : req.target_len;
	if (hname != NULL) {
		f.name = hname;
		f.name_len = strlen(hname);
		f.value = hvalue;
		f.value_len = strlen(hvalue);
		req.fields = &f;
		req.nfields = 1;
	}
	if (route_pick(r, &req, &pk) == -1)
		return ("-");
	if (pk.rest == NULL)
		snprintf(out, sizeof out, "%.*s", (int)pk.name_len, pk.name);
	else
		snprintf(out, sizeof out, "%.*s %s%.*s", (int)pk.name_len,
		    pk.name, pk.slash ? "/" : "", (int)pk.rest_len, pk.rest);
	return (out);
}

START_TEST(test_pick_path)
{
	struct conf_route	r;
	char			long_name[300], target[320], want[320];

	memset(&r, 0, sizeof r);
	r.prefix = "/models/";
	r.prefix_len = 8;
	r.from = CONF_FROM_PATH;
	ck_assert_str_eq(named(&r, "/models/foo/v1/x?q", NULL, NULL),
	    "foo /v1/x?q");
	ck_assert_str_eq(named(&r, "/models/foo", NULL, NULL), "foo /");
	ck_assert_str_eq(named(&r, "/models/foo/", NULL, NULL), "foo /");
	ck_assert_str_eq(named(&r, "/models/foo?q=1&r", NULL, NULL),
	    "foo /?q=1&r");
	ck_assert_str_eq(named(&r, "/models/a.b_c-D9//x", NULL, NULL),
	    "a.b_c-D9 //x");
	/* No segment, or one that cannot be a name. */
	ck_assert_str_eq(named(&r, "/models/", NULL, NULL), "-");
	ck_assert_str_eq(named(&r, "/models/?q", NULL, NULL), "-");
	ck_assert_str_eq(named(&r, "/models//x", NULL, NULL), "-");
	ck_assert_str_eq(named(&r, "/models/f%6fo/x", NULL, NULL), "-");
	ck_assert_str_eq(named(&r, "/models/f:o/x", NULL, NULL), "-");
	/* The '?' ends the name even inside the query's own slashes. */
	ck_assert_str_eq(named(&r, "/models/foo?a=/b", NULL, NULL),
	    "foo /?a=/b");

	/* A prefix without the trailing slash names the same segment. */
	r.prefix = "/models";
	r.prefix_len = 7;
	ck_assert_str_eq(named(&r, "/models/foo/v1", NULL, NULL), "foo /v1");
	ck_assert_str_eq(named(&r, "/models", NULL, NULL), "-");
	ck_assert_str_eq(named(&r, "/models?x", NULL, NULL), "-");
	r.prefix = "/";
	r.prefix_len = 1;
	ck_assert_str_eq(named(&r, "/bar/baz", NULL, NULL), "bar /baz");

	/* 255 characters is the longest name. */
	memset(long_name, 'n', sizeof long_name);
	long_name[255] = '\0';
	snprintf(target, sizeof target, "/%s/x", long_name);
	snprintf(want, sizeof want, "%s /x", long_name);
	ck_assert_str_eq(named(&r, target, NULL, NULL), want);
	long_name[255] = 'n';
	long_name[256] = '\0';
	snprintf(target, sizeof target, "/%s/x", long_name);
	ck_assert_str_eq(named(&r, target, NULL, NULL), "-");
}
END_TEST

START_TEST(test_pick_header)
{
	struct conf_route	r;

	memset(&r, 0, sizeof r);
	r.prefix = "/v1";
	r.prefix_len = 3;
	r.from = CONF_FROM_HEADER;
	r.from_header = "x-model";
	r.from_header_len = 7;
	ck_assert_str_eq(named(&r, "/v1/chat", "X-Model", "llama-3"),
	    "llama-3");
	ck_assert_str_eq(named(&r, "/v1/chat", "x-model", ""), "-");
	ck_assert_str_eq(named(&r, "/v1/chat", "x-model", "a b"), "-");
	ck_assert_str_eq(named(&r, "/v1/chat", "x-models", "m"), "-");
	ck_assert_str_eq(named(&r, "/v1/chat", NULL, NULL), "-");

	/* A route with a fixed deployment names it. */
	memset(&r, 0, sizeof r);
	r.prefix = "/";
	r.prefix_len = 1;
	r.deployment = "fixed";
	ck_assert_str_eq(named(&r, "/x", NULL, NULL), "fixed");
	ck_assert_int_eq(route_name_ok("ok.name-1_", 10), 1);
	ck_assert_int_eq(route_name_ok("", 0), 0);
	ck_assert_int_eq(route_name_ok("bad/", 4), 0);
}
END_TEST

/* What a strip_prefix route forwards, with and without a trailing '/'. */
START_TEST(test_strip)
{
	struct conf_route r;
	char out[64];
	size_t n;

	memset(&r, 0, sizeof(r));
	r.prefix = "/web";
	r.prefix_len = 4;
	n = route_strip(&r, "/web/a/b?q", 10, out);
	ck_assert_int_eq((int)n, 6);
	ck_assert(memcmp(out, "/a/b?q", 6) == 0);
	n = route_strip(&r, "/web?q", 6, out);
	ck_assert(n == 3 && memcmp(out, "/?q", 3) == 0);
	n = route_strip(&r, "/web", 4, out);
	ck_assert(n == 1 && out[0] == '/');
	r.prefix = "/api/";
	r.prefix_len = 5;
	n = route_strip(&r, "/api/x", 6, out);
	ck_assert(n == 2 && memcmp(out, "/x", 2) == 0);
}
END_TEST

static Suite *
route_suite(void)
{
	Suite	*s = suite_create("route");
	TCase	*tc = tcase_create("route");

	tcase_add_test(tc, test_boundary);
	tcase_add_test(tc, test_trailing_slash);
	tcase_add_test(tc, test_root);
	tcase_add_test(tc, test_longest);
	tcase_add_test(tc, test_host);
	tcase_add_test(tc, test_ties);
	tcase_add_test(tc, test_no_match);
	tcase_add_test(tc, test_many);
	tcase_add_test(tc, test_pick_path);
	tcase_add_test(tc, test_pick_header);
	tcase_add_test(tc, test_strip);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(route_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
