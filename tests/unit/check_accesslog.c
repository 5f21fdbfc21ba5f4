/*
 * check_accesslog.c -- the access-log formatters through the public API:
 * lines written by a worker reach the file only on flush; the combined
 * format escapes client bytes as \xHH and fills gaps with "-"; every JSON
 * line parses (jansson) with the fields it names, whatever the client
 * sent; an overlong line is cut but still ends its line; the log can be
 * turned off and reopened after a rename (logrotate).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "accesslog.h"
#include "conf.h"
#include "reqlog.h"

#define T_START	971186136.25	/* 2000-10-10T13:55:36.250Z */

static char path[64];
/* Two workers' access-log slots. */
static struct accesslog_slot *w0, *w1;

static void
log_to(int format)
{
	char err[256];
	int fd;

	fd = accesslog_open_file(path, err, sizeof err);
	ck_assert_msg(fd != -1, "%s", err);
	accesslog_set(path, fd, format);
}

static void
setup(void)
{
	int fd;

	setenv("TZ", "UTC", 1);
	tzset();
	snprintf(path, sizeof path, "/tmp/check_accesslog.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ne(fd, -1);
	close(fd);
	ck_assert_int_eq(accesslog_init(2), 0);
	w0 = accesslog_slot(0);
	w1 = accesslog_slot(1);
}

static void
teardown(void)
{
	char rotated[80];

	accesslog_free();
	unlink(path);
	snprintf(rotated, sizeof rotated, "%s.1", path);
	unlink(rotated);
}

/* The file's contents (caller frees). */
static char *
slurp(const char *p)
{
	FILE *f = fopen(p, "r");
	char *s;
	long n;

	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	s = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	return (s);
}

static struct reqlog
req(void)
{
	struct reqlog r;

	memset(&r, 0, sizeof r);
	r.peer = "127.0.0.1";
	r.method = "GET";
	r.target = "/a/b?c=d";
	r.target_len = strlen(r.target);
	r.minor = 1;
	r.status = 200;
	r.route = "/a";
	r.deployment = "echo";
	r.replica = "echo-1";
	r.request_id = "0123abcd";
	r.user_agent = "curl/8.0";
	r.referer = "http://example.test/";
	r.bytes_in = 3;
	r.bytes_out = 120;
	r.t_start = T_START;
	r.upstream_s = 0.0125;
	r.total_s = 0.0150;
	return (r);
}

START_TEST(test_combined)
{
	struct reqlog r = req();
	char *s;

	log_to(CONF_ACCESS_COMBINED);
	accesslog_write(w0, &r);
	s = slurp(path);
	ck_assert_str_eq(s, "");		/* buffered until a flush */
	free(s);
	accesslog_flush(w0);
	s = slurp(path);
	ck_assert_str_eq(s, "127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "
	    "\"GET /a/b?c=d HTTP/1.1\" 200 120 \"http://example.test/\" "
	    "\"curl/8.0\" rid=0123abcd deployment=echo replica=echo-1 "
	    "upstream_time=0.013 request_time=0.015\n");
	free(s);
}
END_TEST

/* Client bytes never break the line or its quoting. */
START_TEST(test_combined_escapes)
{
	static const char target[] = "/x\"y\\z\r\n\x01\xff";
	struct reqlog r = req();
	char *s;

	r.target = target;
	r.target_len = sizeof target - 1;
	r.user_agent = "evil\" \"ua";
	r.referer = NULL;
	r.request_id = "";
	r.deployment = NULL;
	r.replica = NULL;
	r.upstream_s = -1;
	r.status = 0;			/* the client left first */
	log_to(CONF_ACCESS_COMBINED);
	accesslog_write(w0, &r);
	accesslog_flush(w0);
	s = slurp(path);
	ck_assert_ptr_nonnull(strstr(s,
	    "\"GET /x\\x22y\\x5Cz\\x0D\\x0A\\x01\\xFF HTTP/1.1\" 499 120 "));
	ck_assert_ptr_nonnull(strstr(s, "\"-\" \"evil\\x22 \\x22ua\""));
	ck_assert_ptr_nonnull(strstr(s, " rid=- deployment=- replica=- "
	    "upstream_time=- "));
	ck_assert_ptr_eq(strchr(s, '\n'), s + strlen(s) - 1);
	free(s);
}
END_TEST

/* A request that never parsed: no method, target or protocol. */
START_TEST(test_combined_unparsed)
{
	struct reqlog r = req();
	char *s;

	r.method = NULL;
	r.target = NULL;
	r.target_len = 0;
	r.status = 400;
	log_to(CONF_ACCESS_COMBINED);
	accesslog_write(w0, &r);
	accesslog_flush(w0);
	s = slurp(path);
	ck_assert_ptr_nonnull(strstr(s, "+0000] \"-\" 400 120 "));
	free(s);
}
END_TEST

static json_t *
parse_line(const char *line, size_t len)
{
	json_error_t e;
	json_t *j = json_loadb(line, len, 0, &e);

	ck_assert_msg(j != NULL, "%s: %.*s", e.text, (int)len, line);
	return (j);
}

START_TEST(test_json)
{
	struct reqlog r = req();
	json_t *j;
	char *s;

	r.aborted = 1;
	log_to(CONF_ACCESS_JSON);
	accesslog_write(w0, &r);
	accesslog_flush(w0);
	s = slurp(path);
	ck_assert_ptr_eq(strchr(s, '\n'), s + strlen(s) - 1);
	j = parse_line(s, strlen(s) - 1);
	ck_assert_str_eq(json_string_value(json_object_get(j, "time")),
	    "2000-10-10T13:55:36.250Z");
	ck_assert_str_eq(json_string_value(json_object_get(j, "remote_addr")),
	    "127.0.0.1");
	ck_assert_str_eq(json_string_value(json_object_get(j, "request_id")),
	    "0123abcd");
	ck_assert_str_eq(json_string_value(json_object_get(j, "method")), "GET");
	ck_assert_str_eq(json_string_value(json_object_get(j, "target")),
	    "/a/b?c=d");
	ck_assert_str_eq(json_string_value(json_object_get(j, "protocol")),
	    "HTTP/1.1");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "status")), 200);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "bytes_in")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "bytes_out")),
	    120);
	ck_assert_str_eq(json_string_value(json_object_get(j, "route")), "/a");
	ck_assert_str_eq(json_string_value(json_object_get(j, "deployment")),
	    "echo");
	ck_assert_str_eq(json_string_value(json_object_get(j, "replica")),
	    "echo-1");
	ck_assert_double_eq_tol(json_real_value(json_object_get(j,
	    "upstream_time")), 0.0125, 1e-6);
	ck_assert_double_eq_tol(json_real_value(json_object_get(j,
	    "request_time")), 0.015, 1e-6);
	ck_assert_str_eq(json_string_value(json_object_get(j, "user_agent")),
	    "curl/8.0");
	ck_assert_str_eq(json_string_value(json_object_get(j, "referer")),
	    "http://example.test/");
	ck_assert(json_is_true(json_object_get(j, "aborted")));
	json_decref(j);
	free(s);
}
END_TEST

/* Any client bytes: still one valid JSON object, bytes kept as \u00HH. */
START_TEST(test_json_escapes_and_nulls)
{
	static const char target[] = "/\"\\\t\n\x7f\xc3\xa9";
	struct reqlog r = req();
	json_t *j;
	char *s;

	r.target = target;
	r.target_len = sizeof target - 1;
	r.user_agent = NULL;
	r.referer = NULL;
	r.route = NULL;
	r.deployment = NULL;
	r.replica = NULL;
	r.request_id = "";
	r.upstream_s = -1;
	r.status = 0;
	log_to(CONF_ACCESS_JSON);
	accesslog_write(w0, &r);
	accesslog_flush(w0);
	s = slurp(path);
	j = parse_line(s, strlen(s) - 1);
	ck_assert_str_eq(json_string_value(json_object_get(j, "target")),
	    "/\"\\\t\n\x7f\xc3\x83\xc2\xa9");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "status")), 499);
	ck_assert(json_is_null(json_object_get(j, "user_agent")));
	ck_assert(json_is_null(json_object_get(j, "referer")));
	ck_assert(json_is_null(json_object_get(j, "route")));
	ck_assert(json_is_null(json_object_get(j, "deployment")));
	ck_assert(json_is_null(json_object_get(j, "replica")));
	ck_assert(json_is_null(json_object_get(j, "request_id")));
	ck_assert(json_is_null(json_object_get(j, "upstream_time")));
	ck_assert(json_is_false(json_object_get(j, "aborted")));
	json_decref(j);
	free(s);
	/* Unparsed: method and target null. */
	r.method = NULL;
	accesslog_write(w0, &r);
	accesslog_flush(w0);
	s = slurp(path);
	j = parse_line(strchr(s, '\n') + 1, strlen(strchr(s, '\n') + 1) - 1);
	ck_assert(json_is_null(json_object_get(j, "method")));
	ck_assert(json_is_null(json_object_get(j, "target")));
	json_decref(j);
	free(s);
}
END_TEST

/* A huge User-Agent: the line is cut, ends with \n, the next is whole. */
START_TEST(test_long_line)
{
	static char ua[40000], target[10000];
	struct reqlog r = req();
	char *s, *nl;

	memset(ua, 'u', sizeof ua - 1);
	memset(target, 't', sizeof target - 1);
	target[0] = '/';
	r.user_agent = ua;
	r.target = target;
	r.target_len = sizeof target - 1;
	log_to(CONF_ACCESS_COMBINED);
	accesslog_write(w0, &r);
	r = req();
	accesslog_write(w0, &r);
	accesslog_flush(w0);
	s = slurp(path);
	nl = strchr(s, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_uint_lt((size_t)(nl - s), 16 * 1024);
	/* The target is capped before the user agent. */
	ck_assert_ptr_nonnull(strstr(s, " HTTP/1.1\" 200 "));
	ck_assert_ptr_nonnull(strstr(nl + 1, "127.0.0.1 - - [10/Oct/2000"));
	ck_assert_ptr_nonnull(strstr(nl + 1, "request_time=0.015\n"));
	ck_assert_ptr_eq(strchr(nl + 1, '\n'), s + strlen(s) - 1);
	free(s);
}
END_TEST

/* Enough lines to fill a worker's buffer: it writes them by itself, and
 * two workers' lines never interleave. */
START_TEST(test_fills_and_workers)
{
	struct reqlog r = req();
	char *s, *p, *nl;
	int i, n0 = 0, n1 = 0;

	log_to(CONF_ACCESS_COMBINED);
	for (i = 0; i < 2000; i++) {
		r.replica = "w0";
		accesslog_write(w0, &r);
		r.replica = "w1";
		accesslog_write(w1, &r);
	}
	s = slurp(path);
	ck_assert_uint_gt(strlen(s), 0);	/* written without a flush */
	free(s);
	accesslog_flush(w0);
	accesslog_flush(w1);
	s = slurp(path);
	for (p = s; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		ck_assert_int_eq(strncmp(p, "127.0.0.1 - - [", 15), 0);
		if (strstr(p, "replica=w0 ") != NULL &&
		    strstr(p, "replica=w0 ") < nl)
			n0++;
		else
			n1++;
	}
	ck_assert_str_eq(p, "");
	ck_assert_int_eq(n0, 2000);
	ck_assert_int_eq(n1, 2000);
	free(s);
}
END_TEST

START_TEST(test_off_and_reopen)
{
	struct reqlog r = req();
	char rotated[80], *s;

	log_to(CONF_ACCESS_COMBINED);
	accesslog_write(w0, &r);
	accesslog_flush(w0);
	/* logrotate: rename, then SIGUSR1 reopens the path. */
	snprintf(rotated, sizeof rotated, "%s.1", path);
	ck_assert_int_eq(rename(path, rotated), 0);
	ck_assert_int_eq(accesslog_reopen(NULL, 0), 0);
	r.replica = "after";
	accesslog_write(w0, &r);
	accesslog_flush(w0);
	s = slurp(path);
	ck_assert_ptr_nonnull(strstr(s, "replica=after "));
	ck_assert_ptr_eq(strchr(s, '\n'), s + strlen(s) - 1);
	free(s);
	s = slurp(rotated);
	ck_assert_ptr_null(strstr(s, "replica=after "));
	free(s);
	/* Off: nothing more is written. */
	accesslog_set(NULL, -1, 0);
	r.replica = "off";
	accesslog_write(w0, &r);
	accesslog_flush(w0);
	s = slurp(path);
	ck_assert_ptr_null(strstr(s, "replica=off "));
	free(s);
}
END_TEST

START_TEST(test_open_error)
{
	char err[256] = "";

	ck_assert_int_eq(accesslog_open_file("/nonexistent-dir/x.log", err,
	    sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent-dir/x.log"));
}
END_TEST

static Suite *
accesslog_suite(void)
{
	Suite	*s = suite_create("accesslog");
	TCase	*tc = tcase_create("accesslog");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_combined);
	tcase_add_test(tc, test_combined_escapes);
	tcase_add_test(tc, test_combined_unparsed);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_json_escapes_and_nulls);
	tcase_add_test(tc, test_long_line);
	tcase_add_test(tc, test_fills_and_workers);
	tcase_add_test(tc, test_off_and_reopen);
	tcase_add_test(tc, test_open_error);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(accesslog_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
