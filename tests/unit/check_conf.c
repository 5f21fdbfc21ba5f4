/*
 * check_conf.c -- conf_load: the default conf, defaults, every error
 * message.  Run it under valgrind too: error paths must not leak.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"

static char	tmpdir[] = "/tmp/check_conf.XXXXXX";
static char	path[256];

/* A valid deployment and route block to build test confs around. */
#define DEP	"\"deployments\": {\"echo\": {\"spawn\": {\"command\": [\"x\"]}}}"
#define ROUTES	"\"routes\": [{\"prefix\": \"/\", \"deployment\": \"echo\"}]"
#define BASE	ROUTES ", " DEP

static void
setup(void)
{
	if (mkdtemp(tmpdir) == NULL)
		abort();
	snprintf(path, sizeof path, "%s/x.json", tmpdir);
}

static void
teardown(void)
{
	unlink(path);
	rmdir(tmpdir);
}

static struct conf *
load_text(const char *text, char *err, size_t errlen)
{
	FILE	*fp;

	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fputs(text, fp) >= 0, 1);
	ck_assert_int_eq(fclose(fp), 0);
	err[0] = '\0';
	return (conf_load(path, err, errlen));
}

static struct conf *
load_ok(const char *text)
{
	struct conf	*conf;
	char		 err[1024];

	conf = load_text(text, err, sizeof err);
	ck_assert_msg(conf != NULL, "load failed: %s", err);
	return (conf);
}

/* The message after "FILE: " must be exactly msg. */
static void
expect_error(const char *text, const char *msg)
{
	struct conf	*conf;
	char		 err[1024], want[1024];

	conf = load_text(text, err, sizeof err);
	ck_assert_msg(conf == NULL, "loaded, wanted error: %s", msg);
	snprintf(want, sizeof want, "%s: %s", path, msg);
	ck_assert_str_eq(err, want);
}

START_TEST(test_default_conf)
{
	const struct conf_deployment	*d;
	struct conf			*conf;
	char				 err[1024];

	conf = conf_load("conf/ingressd.json", err, sizeof err);
	ck_assert_msg(conf != NULL, "%s", err);
	ck_assert_str_eq(conf->path, "conf/ingressd.json");
	ck_assert_uint_eq(conf->nlisten, 1);
	ck_assert_str_eq(conf->listen[0], "127.0.0.1:8000");
	ck_assert_str_eq(conf->admin, "127.0.0.1:8001");
	ck_assert_uint_eq(conf->workers, 1);
	ck_assert_str_eq(conf->log_level, "info");
	ck_assert_ptr_null(conf->runtime_dir);
	ck_assert_uint_eq(conf->limits.max_request_line, 8192);
	ck_assert_uint_eq(conf->limits.max_body, 16777216);
	ck_assert_double_eq(conf->timeouts.keepalive, 75);
	ck_assert_double_eq(conf->timeouts.drain, 30);
	ck_assert_uint_eq(conf->nroutes, 5);
	ck_assert_str_eq(conf->routes[3].prefix, "/ingressd.example.Echo/");
	ck_assert_str_eq(conf->routes[3].deployment, "grpc-echo");
	ck_assert_str_eq(conf->routes[1].prefix, "/hello");
	ck_assert_uint_eq(conf->routes[1].prefix_len, 6);
	ck_assert_str_eq(conf->routes[1].deployment, "hello");
	ck_assert_ptr_null(conf->routes[1].host);
	ck_assert_int_eq(conf->routes[1].strip_prefix, 0);
	ck_assert_uint_eq(conf->ndeployments, 5);
	d = conf_find_deployment(conf, "grpc-echo");
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->command[0], "build/replica-grpc-echo");

	d = conf_find_deployment(conf, "echo");
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->name, "echo");
	ck_assert_int_eq(d->source, CONF_SPAWN);
	ck_assert_str_eq(d->command[0], "build/replica-echo");
	ck_assert_ptr_null(d->command[1]);
	ck_assert_uint_eq(d->replicas, 2);
	ck_assert_uint_eq(d->max_ongoing, 256);
	ck_assert_uint_eq(d->queue_max, 1024);
	ck_assert_double_eq(d->queue_timeout, 5);
	ck_assert_double_eq(d->request_timeout, 60);
	ck_assert_int_eq(d->prewarm, 0);
	d = conf_find_deployment(conf, "sleep");
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(d->max_ongoing, 1024);
	ck_assert_int_eq(d->protocol, CONF_PROTO_WIRE);
	/* An unmodified HTTP server behind ingressd (issue 16). */
	d = conf_find_deployment(conf, "web");
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(d->protocol, CONF_PROTO_HTTP);
	ck_assert_str_eq(d->http.health_path, "/");
	ck_assert_double_eq(d->http.health_interval, 5);
	ck_assert_double_eq(d->http.health_timeout, 1);
	ck_assert_double_eq(d->http.idle_timeout, 4);
	ck_assert_uint_eq(d->http.max_5xx, 0);
	ck_assert_ptr_null(conf_find_deployment(conf, "nope"));
	conf_free(conf);
}
END_TEST

START_TEST(test_defaults)
{
	struct conf	*conf;

	conf = load_ok("{\"routes\": [], \"deployments\": {}}");
	ck_assert_uint_eq(conf->nlisten, 1);
	ck_assert_str_eq(conf->listen[0], "127.0.0.1:8000");
	ck_assert_ptr_null(conf->admin);
	ck_assert_uint_eq(conf->workers, 1);
	ck_assert_ptr_null(conf->runtime_dir);
	ck_assert_str_eq(conf->log_level, "info");
	ck_assert_uint_eq(conf->limits.max_request_line, 8192);
	ck_assert_uint_eq(conf->limits.max_header_bytes, 32768);
	ck_assert_uint_eq(conf->limits.max_headers, 100);
	ck_assert_uint_eq(conf->limits.max_body, 16777216);
	ck_assert_uint_eq(conf->limits.max_connections, 10000);
	ck_assert_double_eq(conf->timeouts.header, 10);
	ck_assert_double_eq(conf->timeouts.body, 60);
	ck_assert_double_eq(conf->timeouts.keepalive, 75);
	ck_assert_double_eq(conf->timeouts.request, 60);
	ck_assert_double_eq(conf->timeouts.connect, 5);
	ck_assert_double_eq(conf->timeouts.queue, 5);
	ck_assert_double_eq(conf->timeouts.ping_interval, 5);
	ck_assert_double_eq(conf->timeouts.drain, 30);
	ck_assert_uint_eq(conf->nroutes, 0);
	ck_assert_uint_eq(conf->ndeployments, 0);
	ck_assert_ptr_null(conf->error_log);
	ck_assert_ptr_null(conf->access_log);
	ck_assert_int_eq(conf->access_log_format, CONF_ACCESS_COMBINED);
	ck_assert_double_eq(conf->handle_idle_ttl, 300);
	ck_assert_ptr_null(conf->nameservers);
	ck_assert_uint_eq(conf->nnameservers, 0);
	conf_free(conf);

	conf = load_ok("{" BASE "}");
	ck_assert_uint_eq(conf->deployments[0].replicas, 1);
	ck_assert_uint_eq(conf->deployments[0].max_ongoing, 100);
	ck_assert_uint_eq(conf->deployments[0].queue_max, 1024);
	ck_assert_double_eq(conf->deployments[0].queue_timeout, 5);
	ck_assert_double_eq(conf->deployments[0].request_timeout, 60);
	ck_assert_int_eq(conf->deployments[0].prewarm, 0);
	conf_free(conf);
}
END_TEST

START_TEST(test_full)
{
	const struct conf_deployment	*d;
	struct conf			*conf;
	long				 ncpu;

	conf = load_ok("{\"listen\": \"[::1]:0\", \"admin\": null,"
	    " \"workers\": \"auto\", \"runtime_dir\": \"/run/x\","
	    " \"log_level\": \"debug\","
	    " \"limits\": {\"max_body\": 0, \"max_request_line\": 1048576},"
	    " \"timeouts\": {\"header\": 0.5, \"queue\": 7, \"request\": 86400},"
	    " \"routes\": [{\"prefix\": \"/a/\", \"deployment\": \"e-1.x_y\","
	    "   \"host\": \"Example.COM\", \"strip_prefix\": true}],"
	    " \"deployments\": {"
	    "  \"e-1.x_y\": {\"endpoints\": [\"127.0.0.1:9000\","
	    "   \"replica.example:9001\", \"unix:/tmp/r.sock\"],"
	    "   \"max_ongoing_requests\": 100000, \"queue\": 0,"
	    "   \"queue_timeout\": 2.5, \"prewarm\": true},"
	    "  \"s\": {\"spawn\": {\"command\": [\"bin\", \"-v\", \"\"],"
	    "   \"replicas\": 1024}, \"request_timeout\": 3}}}");
	ck_assert_uint_eq(conf->nlisten, 1);
	ck_assert_str_eq(conf->listen[0], "[::1]:0");
	ck_assert_ptr_null(conf->admin);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	ck_assert_uint_eq(conf->workers, ncpu > 64 ? 64 : ncpu);
	ck_assert_str_eq(conf->runtime_dir, "/run/x");
	ck_assert_str_eq(conf->log_level, "debug");
	ck_assert_uint_eq(conf->limits.max_body, 0);
	ck_assert_uint_eq(conf->limits.max_request_line, 1048576);
	ck_assert_uint_eq(conf->limits.max_headers, 100);
	ck_assert_double_eq(conf->timeouts.header, 0.5);
	ck_assert_double_eq(conf->timeouts.request, 86400);
	ck_assert_str_eq(conf->routes[0].host, "Example.COM");
	ck_assert_int_eq(conf->routes[0].strip_prefix, 1);

	d = conf_find_deployment(conf, "e-1.x_y");
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(d->source, CONF_ENDPOINTS);
	ck_assert_uint_eq(d->nendpoints, 3);
	ck_assert_str_eq(d->endpoints[1], "replica.example:9001");
	ck_assert_str_eq(d->endpoints[2], "unix:/tmp/r.sock");
	ck_assert_ptr_null(d->command);
	ck_assert_uint_eq(d->max_ongoing, 100000);
	ck_assert_uint_eq(d->queue_max, 0);
	ck_assert_double_eq(d->queue_timeout, 2.5);
	ck_assert_double_eq(d->request_timeout, 86400);
	ck_assert_int_eq(d->prewarm, 1);

	d = conf_find_deployment(conf, "s");
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(d->source, CONF_SPAWN);
	ck_assert_str_eq(d->command[1], "-v");
	ck_assert_str_eq(d->command[2], "");
	ck_assert_ptr_null(d->command[3]);
	ck_assert_uint_eq(d->replicas, 1024);
	ck_assert_double_eq(d->queue_timeout, 7);
	ck_assert_double_eq(d->request_timeout, 3);
	conf_free(conf);
}
END_TEST

/* Names from the request, dns deployments, handle TTL, resolver. */
START_TEST(test_names)
{
	const struct conf_deployment	*d;
	struct conf			*conf;

	conf = load_ok("{\"handle_idle_ttl\": 0,"
	    " \"resolver\": {\"nameservers\": [\"127.0.0.1:5353\","
	    "  \"[::1]:53\"]},"
	    " \"routes\": [{\"prefix\": \"/models/\","
	    "   \"deployment_from\": \"path\"},"
	    "  {\"prefix\": \"/v1\", \"deployment_from\": \"header:X-Model\","
	    "   \"strip_prefix\": true},"
	    "  {\"prefix\": \"/d\", \"deployment\": \"svc\"}],"
	    " \"deployments\": {\"svc\": {\"dns\": \"svc.example:9000\","
	    "   \"max_ongoing_requests\": 7}}}");
	ck_assert_double_eq(conf->handle_idle_ttl, 0);
	ck_assert_uint_eq(conf->nnameservers, 2);
	ck_assert_str_eq(conf->nameservers[0], "127.0.0.1:5353");
	ck_assert_str_eq(conf->nameservers[1], "[::1]:53");
	ck_assert_int_eq(conf->routes[0].from, CONF_FROM_PATH);
	ck_assert_ptr_null(conf->routes[0].deployment);
	ck_assert_ptr_null(conf->routes[0].from_header);
	ck_assert_int_eq(conf->routes[1].from, CONF_FROM_HEADER);
	ck_assert_str_eq(conf->routes[1].from_header, "x-model");
	ck_assert_uint_eq(conf->routes[1].from_header_len, 7);
	ck_assert_int_eq(conf->routes[1].strip_prefix, 1);
	ck_assert_int_eq(conf->routes[2].from, CONF_FROM_CONF);
	ck_assert_str_eq(conf->routes[2].deployment, "svc");
	d = conf_find_deployment(conf, "svc");
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(d->source, CONF_DNS);
	ck_assert_str_eq(d->dns, "svc.example:9000");
	ck_assert_uint_eq(d->replicas, 0);
	ck_assert_uint_eq(d->max_ongoing, 7);
	ck_assert_ptr_null(d->command);
	ck_assert_ptr_null(d->endpoints);
	conf_free(conf);
}
END_TEST

START_TEST(test_listen_forms)
{
	struct conf	*conf;

	conf = load_ok("{\"listen\": [\"127.0.0.1:1\", \"localhost:65535\","
	    " \"unix:/tmp/ingressd.sock\"], \"admin\": \"[::1]:8001\", "
	    BASE "}");
	ck_assert_uint_eq(conf->nlisten, 3);
	ck_assert_str_eq(conf->listen[2], "unix:/tmp/ingressd.sock");
	ck_assert_str_eq(conf->admin, "[::1]:8001");
	ck_assert_ptr_null(conf->listen_tls[0]);
	conf_free(conf);
}
END_TEST

/* A listener object: relative files resolved against the conf's
 * directory, defaults for what is not given. */
START_TEST(test_listen_tls)
{
	struct conf	*conf;
	struct conf_tls	*t;

	conf = load_ok("{\"listen\": [\"127.0.0.1:1\", {\"address\": "
	    "\"127.0.0.1:2\", \"tls\": {\"certificates\": [{\"cert\": "
	    "\"c.pem\", \"key\": \"/k.pem\"}], \"verify_client\": "
	    "\"optional\", \"client_ca\": \"/ca.pem\"}}], " BASE "}");
	ck_assert_uint_eq(conf->nlisten, 2);
	ck_assert_str_eq(conf->listen[1], "127.0.0.1:2");
	ck_assert_ptr_null(conf->listen_tls[0]);
	t = conf->listen_tls[1];
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(t->ncerts, 1);
	ck_assert_str_eq(t->certs[0].key, "/k.pem");
	ck_assert(t->certs[0].cert[0] == '/');
	ck_assert(strstr(t->certs[0].cert, "/c.pem") != NULL);
	ck_assert_uint_eq(t->nalpn, 2);
	ck_assert_str_eq(t->alpn[0], "h2");
	ck_assert_int_eq(t->verify_client, CONF_VERIFY_OPTIONAL);
	ck_assert(t->handshake_timeout == 10);
	ck_assert_int_eq(t->session_tickets, 1);
	conf_free(conf);
}
END_TEST

START_TEST(test_name_limits)
{
	struct conf	*conf;
	char		 name[300], text[1024];

	memset(name, 'a', 255);
	name[255] = '\0';
	snprintf(text, sizeof text, "{\"routes\": [], \"deployments\": "
	    "{\"%s\": {\"endpoints\": [\"127.0.0.1:1\"]}}}", name);
	conf = load_ok(text);
	ck_assert_str_eq(conf->deployments[0].name, name);
	conf_free(conf);

	memset(name, 'a', 256);
	name[256] = '\0';
	snprintf(text, sizeof text, "{\"routes\": [], \"deployments\": "
	    "{\"%s\": {\"endpoints\": [\"127.0.0.1:1\"]}}}", name);
	snprintf(text + 600, 400, "deployments.%s: bad deployment name "
	    "(1..255 characters of A-Z a-z 0-9 . _ -)", name);
	expect_error(text, text + 600);
}
END_TEST

START_TEST(test_log_files)
{
	struct conf	*conf;

	conf = load_ok("{\"error_log\": \"/var/log/ingressd/error.log\","
	    " \"access_log\": \"/var/log/ingressd/access.log\","
	    " \"access_log_format\": \"json\", " BASE "}");
	ck_assert_str_eq(conf->error_log, "/var/log/ingressd/error.log");
	ck_assert_str_eq(conf->access_log, "/var/log/ingressd/access.log");
	ck_assert_int_eq(conf->access_log_format, CONF_ACCESS_JSON);
	conf_free(conf);

	conf = load_ok("{\"error_log\": \"stderr\", \"access_log\": "
	    "\"stderr\", \"access_log_format\": \"combined\", " BASE "}");
	ck_assert_str_eq(conf->error_log, "stderr");
	ck_assert_str_eq(conf->access_log, "stderr");
	ck_assert_int_eq(conf->access_log_format, CONF_ACCESS_COMBINED);
	conf_free(conf);

	/* "off" and null both mean no access log. */
	conf = load_ok("{\"access_log\": \"off\", " BASE "}");
	ck_assert_ptr_null(conf->access_log);
	conf_free(conf);
	conf = load_ok("{\"access_log\": null, " BASE "}");
	ck_assert_ptr_null(conf->access_log);
	conf_free(conf);
}
END_TEST

START_TEST(test_routes_distinct)
{
	struct conf	*conf;

	/* Same prefix, different hosts (or none): not duplicates. */
	conf = load_ok("{\"routes\": ["
	    "{\"prefix\": \"/a\", \"deployment\": \"echo\"},"
	    "{\"prefix\": \"/a\", \"deployment\": \"echo\", \"host\": \"x\"},"
	    "{\"prefix\": \"/a\", \"deployment\": \"echo\", \"host\": \"y\"},"
	    "{\"prefix\": \"/a/\", \"deployment\": \"echo\"}], " DEP "}");
	ck_assert_uint_eq(conf->nroutes, 4);
	conf_free(conf);
}
END_TEST

START_TEST(test_syntax_error)
{
	char	err[1024], want[1024];

	ck_assert_ptr_null(load_text("{\n  \"routes\": [,\n", err, sizeof err));
	snprintf(want, sizeof want, "%s:2:14: unexpected token near ','",
	    path);
	ck_assert_str_eq(err, want);

	ck_assert_ptr_null(load_text("{\"routes\": [],\n \"routes\": []}", err,
	    sizeof err));
	snprintf(want, sizeof want, "%s:2:9: duplicate object key near "
	    "'\"routes\"'", path);
	ck_assert_str_eq(err, want);

	ck_assert_ptr_null(load_text("", err, sizeof err));
	snprintf(want, sizeof want, "%s:1:0: '[' or '{' expected near end of "
	    "file", path);
	ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_missing_file)
{
	char	err[1024], want[1024];

	snprintf(want, sizeof want, "%s/none.json", tmpdir);
	ck_assert_ptr_null(conf_load(want, err, sizeof err));
	strcat(want, ": No such file or directory");
	ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_error_truncated)
{
	char	err[16];

	ck_assert_ptr_null(load_text("[]", err, sizeof err));
	ck_assert_uint_eq(strlen(err), sizeof err - 1);
	ck_assert_int_eq(strncmp(err, path, sizeof err - 1), 0);
}
END_TEST

/* Each bad conf and the message after "FILE: ". */
static const struct {
	const char	*text;
	const char	*msg;
} bad[] = {
	{ "[]", "must be a JSON object at the top level" },
	{ "{" ROUTES "}", "deployments: required key missing" },
	{ "{" DEP "}", "routes: required key missing" },
	{ "{\"bogus\": 1, " BASE "}", "bogus: unknown key" },
	/* Control characters from the file never reach the log. */
	{ "{\"a\\nb\": 1, " BASE "}", "a?b: unknown key" },
	{ "{\"limits\": {\"bogus\": 1}, " BASE "}", "limits.bogus: unknown key" },
	{ "{\"timeouts\": {\"x\": 1}, " BASE "}", "timeouts.x: unknown key" },
	{ "{\"routes\": [{\"prefix\": \"/\", \"deployment\": \"echo\","
	    " \"bogus\": 1}], " DEP "}", "routes[0].bogus: unknown key" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": {\"command\":"
	    " [\"x\"], \"bogus\": 1}}}}",
	    "deployments.echo.spawn.bogus: unknown key" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": {\"command\":"
	    " [\"x\"]}, \"bogus\": 1}}}", "deployments.echo.bogus: unknown key" },

	{ "{\"listen\": 5, " BASE "}", "listen: must be an address string, "
	    "a listener object {\"address\", \"tls\"} or a non-empty array "
	    "of them" },
	{ "{\"listen\": [], " BASE "}", "listen: must be an address string, "
	    "a listener object {\"address\", \"tls\"} or a non-empty array "
	    "of them" },
	{ "{\"listen\": [\"127.0.0.1:1\", 5], " BASE "}",
	    "listen[1]: must be an address string or a listener object "
	    "{\"address\", \"tls\"}" },
	{ "{\"listen\": [{\"tls\": {}}], " BASE "}",
	    "listen[0].address: required key missing" },
	{ "{\"listen\": {\"address\": \"127.0.0.1:1\", \"tls\": {}}, "
	    BASE "}", "listen.tls.certificates: required key missing" },
	{ "{\"listen\": {\"address\": \"127.0.0.1:1\", \"tls\": "
	    "{\"certificates\": [{\"cert\": \"/c\"}]}}, " BASE "}",
	    "listen.tls.certificates[0].key: required key missing" },
	{ "{\"listen\": {\"address\": \"127.0.0.1:1\", \"tls\": "
	    "{\"certificates\": [{\"cert\": \"/c\", \"key\": \"/k\"}], "
	    "\"alpn\": [\"spdy\"]}}, " BASE "}",
	    "listen.tls.alpn[0]: must be \"h2\" or \"http/1.1\"" },
	{ "{\"listen\": {\"address\": \"127.0.0.1:1\", \"tls\": "
	    "{\"certificates\": [{\"cert\": \"/c\", \"key\": \"/k\"}], "
	    "\"verify_client\": \"require\"}}, " BASE "}",
	    "listen.tls.verify_client: needs \"client_ca\"" },
	{ "{\"listen\": {\"address\": \"127.0.0.1:1\", \"tls\": "
	    "{\"certificates\": [{\"cert\": \"/c\", \"key\": \"/k\"}], "
	    "\"min_version\": \"TLSv1.1\"}}, " BASE "}",
	    "listen.tls.min_version: must be \"TLSv1.2\" or \"TLSv1.3\"" },
	{ "{\"listen\": [\"x\"], " BASE "}",
	    "listen[0]: bad address \"x\": missing port" },
	{ "{\"listen\": \"127.0.0.1:\", " BASE "}",
	    "listen: bad address \"127.0.0.1:\": missing port" },
	{ "{\"listen\": \"127.0.0.1:70000\", " BASE "}",
	    "listen: bad address \"127.0.0.1:70000\": port out of range" },
	{ "{\"listen\": \"127.0.0.1:8x\", " BASE "}",
	    "listen: bad address \"127.0.0.1:8x\": bad port" },
	{ "{\"listen\": \"host.example:-1\", " BASE "}",
	    "listen: bad address \"host.example:-1\": bad port" },
	{ "{\"listen\": \":80\", " BASE "}",
	    "listen: bad address \":80\": missing host" },
	{ "{\"listen\": \"::1:80\", " BASE "}",
	    "listen: bad address \"::1:80\": an IPv6 address needs brackets" },
	{ "{\"listen\": \"[::1]\", " BASE "}",
	    "listen: bad address \"[::1]\": missing port" },
	{ "{\"listen\": \"bad host:80\", " BASE "}",
	    "listen: bad address \"bad host:80\": bad host name" },
	{ "{\"listen\": \"unix:\", " BASE "}",
	    "listen: bad address \"unix:\": empty unix path" },
	{ "{\"admin\": 5, " BASE "}", "admin: must be an address string, a "
	    "listener object {\"address\", \"tls\"} or null" },
	{ "{\"admin\": {\"address\": \"127.0.0.1:1\", \"tls\": "
	    "{\"certificates\": [{\"cert\": \"/c\", \"key\": \"/k\"}], "
	    "\"verify_client\": \"require\"}}, " BASE "}",
	    "admin.tls.verify_client: needs \"client_ca\"" },
	{ "{\"admin\": {\"tls\": null}, " BASE "}",
	    "admin.address: required key missing" },
	{ "{\"admin\": \"8001\", " BASE "}",
	    "admin: bad address \"8001\": missing port" },
	{ "{\"workers\": 0, " BASE "}",
	    "workers: must be an integer in 1..64 or \"auto\"" },
	{ "{\"workers\": 65, " BASE "}",
	    "workers: must be an integer in 1..64 or \"auto\"" },
	{ "{\"workers\": \"many\", " BASE "}",
	    "workers: must be an integer in 1..64 or \"auto\"" },
	{ "{\"workers\": 2.0, " BASE "}",
	    "workers: must be an integer in 1..64 or \"auto\"" },
	{ "{\"runtime_dir\": \"\", " BASE "}",
	    "runtime_dir: must be a non-empty string" },
	{ "{\"runtime_dir\": [], " BASE "}",
	    "runtime_dir: must be a non-empty string" },
	{ "{\"log_level\": \"loud\", " BASE "}",
	    "log_level: must be one of \"warn\", \"info\", \"debug\"" },
	{ "{\"log_level\": \"INFO\", " BASE "}",
	    "log_level: must be one of \"warn\", \"info\", \"debug\"" },

	{ "{\"limits\": [], " BASE "}", "limits: must be an object" },
	{ "{\"limits\": {\"max_request_line\": 255}, " BASE "}",
	    "limits.max_request_line: must be an integer in 256..1048576" },
	{ "{\"limits\": {\"max_request_line\": 1048577}, " BASE "}",
	    "limits.max_request_line: must be an integer in 256..1048576" },
	{ "{\"limits\": {\"max_header_bytes\": 1023}, " BASE "}",
	    "limits.max_header_bytes: must be an integer in 1024..16777216" },
	{ "{\"limits\": {\"max_header_bytes\": 16777217}, " BASE "}",
	    "limits.max_header_bytes: must be an integer in 1024..16777216" },
	{ "{\"limits\": {\"max_headers\": 0}, " BASE "}",
	    "limits.max_headers: must be an integer in 1..1000" },
	{ "{\"limits\": {\"max_headers\": 1001}, " BASE "}",
	    "limits.max_headers: must be an integer in 1..1000" },
	{ "{\"limits\": {\"max_body\": -1}, " BASE "}",
	    "limits.max_body: must be an integer in 0..1099511627776" },
	{ "{\"limits\": {\"max_body\": 1099511627777}, " BASE "}",
	    "limits.max_body: must be an integer in 0..1099511627776" },
	{ "{\"limits\": {\"max_connections\": 0}, " BASE "}",
	    "limits.max_connections: must be an integer in 1..10000000" },
	{ "{\"limits\": {\"max_connections\": \"10\"}, " BASE "}",
	    "limits.max_connections: must be an integer in 1..10000000" },

	{ "{\"timeouts\": 5, " BASE "}", "timeouts: must be an object" },
	{ "{\"timeouts\": {\"header\": 0}, " BASE "}",
	    "timeouts.header: must be a number of seconds > 0 and <= 86400" },
	{ "{\"timeouts\": {\"drain\": 86400.5}, " BASE "}",
	    "timeouts.drain: must be a number of seconds > 0 and <= 86400" },
	{ "{\"timeouts\": {\"queue\": -1}, " BASE "}",
	    "timeouts.queue: must be a number of seconds > 0 and <= 86400" },
	{ "{\"timeouts\": {\"connect\": \"5\"}, " BASE "}",
	    "timeouts.connect: must be a number of seconds > 0 and <= 86400" },
	{ "{\"timeouts\": {\"ping_interval\": null}, " BASE "}",
	    "timeouts.ping_interval: must be a number of seconds > 0 and "
	    "<= 86400" },

	{ "{\"routes\": {}, " DEP "}", "routes: must be an array" },
	{ "{\"routes\": [5], " DEP "}", "routes[0]: must be an object" },
	{ "{\"routes\": [{\"deployment\": \"echo\"}], " DEP "}",
	    "routes[0].prefix: required key missing" },
	{ "{\"routes\": [{\"prefix\": \"/\"}], " DEP "}",
	    "routes[0]: needs exactly one of \"deployment\" or "
	    "\"deployment_from\"" },
	{ "{\"routes\": [{\"prefix\": \"/\", \"deployment\": \"echo\","
	    " \"deployment_from\": \"path\"}], " DEP "}",
	    "routes[0]: needs exactly one of \"deployment\" or "
	    "\"deployment_from\"" },
	{ "{\"routes\": [{\"prefix\": \"/\", \"deployment_from\": "
	    "\"query\"}], " DEP "}", "routes[0].deployment_from: must be "
	    "\"path\" or \"header:NAME\" (NAME a header name of at most 64 "
	    "characters)" },
	{ "{\"routes\": [{\"prefix\": \"/\", \"deployment_from\": "
	    "\"header:\"}], " DEP "}", "routes[0].deployment_from: must be "
	    "\"path\" or \"header:NAME\" (NAME a header name of at most 64 "
	    "characters)" },
	{ "{\"routes\": [{\"prefix\": \"/\", \"deployment_from\": "
	    "\"header:x model\"}], " DEP "}", "routes[0].deployment_from: "
	    "must be \"path\" or \"header:NAME\" (NAME a header name of at "
	    "most 64 characters)" },
	{ "{\"routes\": [{\"prefix\": \"/m/\", \"deployment_from\": "
	    "\"path\", \"strip_prefix\": true}], " DEP "}",
	    "routes[0].strip_prefix: not with \"deployment_from\": \"path\" "
	    "(the prefix and the name are always stripped)" },
	{ "{\"routes\": [{\"prefix\": \"echo\", \"deployment\": \"echo\"}], "
	    DEP "}", "routes[0].prefix: must be a string starting with '/'" },
	{ "{\"routes\": [{\"prefix\": 1, \"deployment\": \"echo\"}], "
	    DEP "}", "routes[0].prefix: must be a string starting with '/'" },
	{ "{\"routes\": [{\"prefix\": \"/\", \"deployment\": 1}], " DEP "}",
	    "routes[0].deployment: must be a string" },
	{ "{\"routes\": [{\"prefix\": \"/a\", \"deployment\": \"echo\"},"
	    "{\"prefix\": \"/b\", \"deployment\": \"echo\"},"
	    "{\"prefix\": \"/c\", \"deployment\": \"nope\"}], " DEP "}",
	    "routes[2].deployment: no deployment named \"nope\"" },
	{ "{\"routes\": [{\"prefix\": \"/\", \"deployment\": \"echo\","
	    " \"strip_prefix\": \"yes\"}], " DEP "}",
	    "routes[0].strip_prefix: must be true or false" },
	{ "{\"routes\": [{\"prefix\": \"/\", \"deployment\": \"echo\","
	    " \"host\": 5}], " DEP "}", "routes[0].host: must be a non-empty "
	    "string" },
	{ "{\"routes\": [{\"prefix\": \"/\", \"deployment\": \"echo\","
	    " \"host\": \"a.example:80\"}], " DEP "}",
	    "routes[0].host: must be a host name without a port" },
	{ "{\"routes\": [{\"prefix\": \"/\", \"deployment\": \"echo\","
	    " \"host\": \"[::1]:80\"}], " DEP "}",
	    "routes[0].host: must be a host name without a port" },
	/* Found by fuzz_conf: accepted, but no request could match it. */
	{ "{\"routes\": [{\"prefix\": \"/\", \"deployment\": \"echo\","
	    " \"host\": \"[::1]]\"}], " DEP "}",
	    "routes[0].host: must be a host name without a port" },
	{ "{\"routes\": [{\"prefix\": \"/a\", \"deployment\": \"echo\"},"
	    "{\"prefix\": \"/a\", \"deployment\": \"echo\"}], " DEP "}",
	    "routes[1]: same host and prefix as routes[0]" },
	{ "{\"routes\": [{\"prefix\": \"/a\", \"deployment\": \"echo\","
	    " \"host\": \"x\"}, {\"prefix\": \"/b\", \"deployment\": \"echo\"},"
	    "{\"prefix\": \"/a\", \"deployment\": \"echo\", \"host\": \"X\"}],"
	    " " DEP "}", "routes[2]: same host and prefix as routes[0]" },

	{ "{" ROUTES ", \"deployments\": []}", "deployments: must be an "
	    "object" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": 1}}",
	    "deployments.echo: must be an object" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {}}}",
	    "deployments.echo: needs exactly one of \"spawn\", "
	    "\"endpoints\", \"dns\", \"dns_srv\" or \"inproc\"" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": {\"command\":"
	    " [\"x\"]}, \"endpoints\": [\"127.0.0.1:1\"]}}}",
	    "deployments.echo: needs exactly one of \"spawn\", "
	    "\"endpoints\", \"dns\", \"dns_srv\" or \"inproc\"" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"dns\": \"a.example:1\","
	    " \"endpoints\": [\"127.0.0.1:1\"]}}}",
	    "deployments.echo: needs exactly one of \"spawn\", "
	    "\"endpoints\", \"dns\", \"dns_srv\" or \"inproc\"" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"dns_srv\": "
	    "\"a.example:1\"}}}",
	    "deployments.echo.dns_srv: must be an SRV name "
	    "\"_service._proto.name\" (ports come from its records)" },
	{ "{" ROUTES ", \"resolver\": {\"srv_interval\": -1}, "
	    "\"deployments\": {}}",
	    "resolver.srv_interval: must be a number of seconds > 0 and "
	    "<= 86400" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"inproc\": {}}}}",
	    "deployments.echo.inproc.module: required key missing" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"inproc\": "
	    "{\"module\": \"/nonexistent/mod.so\"}}}}",
	    "deployments.echo.inproc.module: /nonexistent/mod.so: No such "
	    "file or directory" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"inproc\": "
	    "{\"module\": \"Makefile\"}}}}",
	    "deployments.echo.inproc.module: ./Makefile: invalid ELF "
	    "header" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"inproc\": "
	    "{\"module\": \"/nonexistent.so\", \"args\": [1]}}}}",
	    "deployments.echo.inproc.module: /nonexistent.so: No such "
	    "file or directory" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"dns\": 5}}}",
	    "deployments.echo.dns: must be \"name:port\" with a DNS name" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"dns\": "
	    "\"a.example\"}}}",
	    "deployments.echo.dns: must be \"name:port\" with a DNS name" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"dns\": "
	    "\"unix:/x:1\"}}}",
	    "deployments.echo.dns: must be \"name:port\" with a DNS name" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"dns\": "
	    "\"[::1]:80\"}}}",
	    "deployments.echo.dns: must be \"name:port\" with a DNS name" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"dns\": "
	    "\"10.0.0.1:80\"}}}", "deployments.echo.dns: \"10.0.0.1:80\" is "
	    "an address, not a name: use \"endpoints\"" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"dns\": "
	    "\"a.example:0\"}}}", "deployments.echo.dns: bad address "
	    "\"a.example:0\": port must be 1..65535" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"dns\": "
	    "\"a b:80\"}}}", "deployments.echo.dns: bad address \"a b:80\": "
	    "bad host name" },
	/* TLS toward HTTP/1.1 and HTTP/2 servers ("protocol" http, h2). */
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\"], \"protocol\": \"spdy\"}}}",
	    "deployments.echo.protocol: must be \"wire\", \"http\", \"h2c\" "
	    "or \"h2\"" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\"], \"protocol\": \"h2\"}}}",
	    "deployments.echo: \"protocol\": \"h2\" is HTTP/2 over TLS and "
	    "needs \"tls\" (\"h2c\" is HTTP/2 in cleartext)" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\"], \"protocol\": \"h2c\", \"tls\": "
	    "{\"ca\": \"/ca.pem\"}}}}",
	    "deployments.echo: \"protocol\": \"h2c\" is HTTP/2 in cleartext: "
	    "with \"tls\" write \"protocol\": \"h2\"" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"dns\": "
	    "\"a.example:443\", \"protocol\": \"http\", \"tls\": "
	    "{\"ca\": \"/ca.pem\"}}}}",
	    "deployments.echo: \"tls\" toward HTTP servers needs "
	    "\"endpoints\" or \"spawn\" (replicas found by DNS are not "
	    "reached over TLS yet)" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\", \"unix:/x.sock\"], \"protocol\": \"h2\", "
	    "\"tls\": {\"ca\": \"/ca.pem\"}}}}",
	    "deployments.echo: \"tls\": endpoint \"unix:/x.sock\" is a unix "
	    "socket (TLS is for TCP endpoints)" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\"], \"protocol\": \"http\", \"tls\": "
	    "{\"ca\": \"/ca.pem\", \"cert\": \"/c.pem\"}}}}",
	    "deployments.echo.tls: \"cert\" and \"key\" go together" },
	{ "{\"handle_idle_ttl\": -1, " BASE "}", "handle_idle_ttl: must be a "
	    "number of seconds in 0..86400" },
	{ "{\"resolver\": [], " BASE "}", "resolver: must be an object" },
	{ "{\"resolver\": {\"x\": 1}, " BASE "}", "resolver.x: unknown key" },
	{ "{\"resolver\": {\"nameservers\": []}, " BASE "}",
	    "resolver.nameservers: must be a non-empty array of address "
	    "strings" },
	{ "{\"resolver\": {\"nameservers\": [\"127.0.0.1:53\", "
	    "\"dns.example:53\"]}, " BASE "}", "resolver.nameservers[1]: must "
	    "be an IP address and port, not a name" },
	{ "{\"routes\": [], \"deployments\": {\"a b\": {}}}",
	    "deployments.a b: bad deployment name (1..255 characters of "
	    "A-Z a-z 0-9 . _ -)" },
	{ "{\"routes\": [], \"deployments\": {\"\": {}}}",
	    "deployments.: bad deployment name (1..255 characters of "
	    "A-Z a-z 0-9 . _ -)" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": []}}}",
	    "deployments.echo.spawn: must be an object" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": {}}}}",
	    "deployments.echo.spawn.command: required key missing" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": {\"command\":"
	    " []}}}}", "deployments.echo.spawn.command: must be a non-empty "
	    "array of strings" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": {\"command\":"
	    " \"x\"}}}}", "deployments.echo.spawn.command: must be a "
	    "non-empty array of strings" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": {\"command\":"
	    " [\"\"]}}}}", "deployments.echo.spawn.command[0]: must be a "
	    "non-empty string" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": {\"command\":"
	    " [\"x\", \"y\", 3]}}}}", "deployments.echo.spawn.command[2]: "
	    "must be a string" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": {\"command\":"
	    " [\"x\"], \"replicas\": 0}}}}",
	    "deployments.echo.spawn.replicas: must be an integer in 1..1024" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": {\"command\":"
	    " [\"x\"], \"replicas\": 1025}}}}",
	    "deployments.echo.spawn.replicas: must be an integer in 1..1024" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": []}}}",
	    "deployments.echo.endpoints: must be a non-empty array of address "
	    "strings or {\"address\", \"weight\", \"priority\"} objects" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "\"127.0.0.1:1\"}}}", "deployments.echo.endpoints: must be a "
	    "non-empty array of address strings or {\"address\", "
	    "\"weight\", \"priority\"} objects" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\", \"nohost\"]}}}",
	    "deployments.echo.endpoints[1]: bad address \"nohost\": missing "
	    "port" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\"], \"max_ongoing_requests\": 0}}}",
	    "deployments.echo.max_ongoing_requests: must be an integer in "
	    "1..100000" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\"], \"max_ongoing_requests\": 100001}}}",
	    "deployments.echo.max_ongoing_requests: must be an integer in "
	    "1..100000" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\"], \"queue\": -1}}}",
	    "deployments.echo.queue: must be an integer in 0..1000000" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\"], \"queue\": 1000001}}}",
	    "deployments.echo.queue: must be an integer in 0..1000000" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\"], \"queue_timeout\": -0.5}}}",
	    "deployments.echo.queue_timeout: must be a number of seconds in "
	    "0..86400" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\"], \"request_timeout\": 86401}}}",
	    "deployments.echo.request_timeout: must be a number of seconds in "
	    "0..86400" },
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"endpoints\": "
	    "[\"127.0.0.1:1\"], \"prewarm\": 1}}}",
	    "deployments.echo.prewarm: must be true or false" },
	{ "{\"error_log\": \"log/error.log\", " BASE "}",
	    "error_log: must be \"stderr\" or an absolute path" },
	{ "{\"error_log\": \"off\", " BASE "}",
	    "error_log: must be \"stderr\" or an absolute path" },
	{ "{\"error_log\": null, " BASE "}",
	    "error_log: must be \"stderr\" or an absolute path" },
	{ "{\"error_log\": \"/\", " BASE "}",
	    "error_log: must be \"stderr\" or an absolute path" },
	{ "{\"access_log\": 1, " BASE "}",
	    "access_log: must be \"off\", \"stderr\" or an absolute path" },
	{ "{\"access_log\": \"\", " BASE "}",
	    "access_log: must be \"off\", \"stderr\" or an absolute path" },
	{ "{\"access_log_format\": \"common\", " BASE "}",
	    "access_log_format: must be \"combined\" or \"json\"" },
	{ "{\"access_log_format\": null, " BASE "}",
	    "access_log_format: must be \"combined\" or \"json\"" },
	/* A later deployment's error frees the earlier ones (valgrind). */
	{ "{" ROUTES ", \"deployments\": {\"echo\": {\"spawn\": {\"command\":"
	    " [\"x\", \"y\"]}}, \"two\": {\"endpoints\": [\"127.0.0.1:1\", "
	    "\"127.0.0.1:x\"]}}}", "deployments.two.endpoints[1]: bad address "
	    "\"127.0.0.1:x\": bad port" },
};

START_TEST(test_errors)
{
	expect_error(bad[_i].text, bad[_i].msg);
}
END_TEST

/* The unix path limit comes from sun_path (108 bytes on Linux). */
START_TEST(test_unix_path_long)
{
	char	text[1024], addr[300], msg[600];

	memset(addr, 'p', sizeof addr);
	memcpy(addr, "unix:/", 6);
	addr[5 + 108] = '\0';	/* a 108-byte path: one too many */
	snprintf(text, sizeof text, "{\"listen\": \"%s\", " BASE "}", addr);
	snprintf(msg, sizeof msg, "listen: bad address \"%s\": unix path "
	    "longer than 107 bytes", addr);
	expect_error(text, msg);

	addr[5 + 107] = '\0';
	snprintf(text, sizeof text, "{\"listen\": \"%s\", " BASE "}", addr);
	conf_free(load_ok(text));
}
END_TEST

static Suite *
conf_suite(void)
{
	Suite	*s = suite_create("conf");
	TCase	*tc = tcase_create("conf");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_default_conf);
	tcase_add_test(tc, test_listen_tls);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_full);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_listen_forms);
	tcase_add_test(tc, test_name_limits);
	tcase_add_test(tc, test_log_files);
	tcase_add_test(tc, test_routes_distinct);
	tcase_add_test(tc, test_syntax_error);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_error_truncated);
	tcase_add_loop_test(tc, test_errors, 0, sizeof bad / sizeof bad[0]);
	tcase_add_test(tc, test_unix_path_long);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(conf_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
