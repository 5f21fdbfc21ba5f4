/*
 * conf.c -- load, validate and snapshot the configuration.
 *
 * The schema is tables of keys walked by conf_walk.c (conf_walk.h).  This
 * file has the top-level table, the small sections (admin, workers, logs,
 * limits, timeouts, http2, resolver, trusted_proxies, registry), load,
 * defaults and free; "deployments" and "routes" are in conf_deploy.c,
 * "listen" and its TLS keys in conf_listen.c (conf_impl.h).  Defaults are
 * set before a walk; a walk only overwrites them.
 *
 * Error handling: a handler returns -1 after conf_error() wrote the message;
 * everything allocated so far hangs off the conf and conf_free() releases
 * it, so no handler needs its own cleanup.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "conf_impl.h"

static int	conf_admin(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
static int	conf_workers(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_log_level(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_log_file(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_access_format(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_limits(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_timeouts(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_http2(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_resolver(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_token_file(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_nameservers(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_registry(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_etcd(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_etcd_endpoints(struct conf_ctx *,
		    const struct conf_key *, json_t *, void *);
static int	conf_etcd_path(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_trusted_proxies(struct conf_ctx *,
		    const struct conf_key *, json_t *, void *);

#define T(f)	offsetof(struct conf, f)
static const struct conf_key conf_top_keys[] = {
	{ "listen", conf_listen, 0, 0, 0, 0 },
	{ "admin", conf_admin, 0, 0, 0, 0 },
	{ "workers", conf_workers, T(workers), 1, CONF_MAX_WORKERS, 0 },
	{ "runtime_dir", conf_string, T(runtime_dir), 0, 0, 0 },
	{ "log_level", conf_log_level, 0, 0, 0, 0 },
	{ "error_log", conf_log_file, T(error_log), 0, 0, 0 },
	{ "access_log", conf_log_file, T(access_log), 0, 0, 0 },
	{ "access_log_format", conf_access_format, T(access_log_format), 0, 0,
	    0 },
	{ "limits", conf_limits, T(limits), 0, 0, 0 },
	{ "timeouts", conf_timeouts, T(timeouts), 0, 0, 0 },
	{ "http2", conf_http2, T(http2), 0, 0, 0 },
	{ "handle_idle_ttl", conf_seconds, T(handle_idle_ttl), 0, 0,
	    CONF_ZERO_OK },
	{ "resolver", conf_resolver, 0, 0, 0, 0 },
	{ "admin_on_public", conf_bool, T(admin_on_public), 0, 0, 0 },
	{ "admin_token_file", conf_token_file, T(admin_token), 0, 0, 0 },
	{ "trusted_proxies", conf_trusted_proxies, 0, 0, 0, 0 },
	{ "registry", conf_registry, 0, 0, 0, 0 },
	/* Before routes: a route must name a known deployment. */
	{ "deployments", conf_deployments, 0, 0, 0, CONF_REQUIRED },
	{ "routes", conf_routes, 0, 0, 0, CONF_REQUIRED },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef T

#define L(f)	offsetof(struct conf_limits, f)
static const struct conf_key conf_limits_keys[] = {
	{ "max_request_line", conf_size, L(max_request_line), 256,
	    1024 * 1024, 0 },
	{ "max_header_bytes", conf_size, L(max_header_bytes), 1024,
	    16 * 1024 * 1024, 0 },
	{ "max_headers", conf_uint, L(max_headers), 1, 1000, 0 },
	{ "max_body", conf_size, L(max_body), 0, 1LL << 40, 0 },
	{ "max_connections", conf_uint, L(max_connections), 1, 10000000, 0 },
	{ "max_connections_per_client", conf_uint,
	    L(max_connections_per_client), 0, 10000000, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef L

#define O(f)	offsetof(struct conf_timeouts, f)
static const struct conf_key conf_timeouts_keys[] = {
	{ "header", conf_seconds, O(header), 0, 0, 0 },
	{ "body", conf_seconds, O(body), 0, 0, 0 },
	{ "keepalive", conf_seconds, O(keepalive), 0, 0, 0 },
	{ "request", conf_seconds, O(request), 0, 0, 0 },
	{ "connect", conf_seconds, O(connect), 0, 0, 0 },
	{ "queue", conf_seconds, O(queue), 0, 0, 0 },
	{ "ping_interval", conf_seconds, O(ping_interval), 0, 0, 0 },
	{ "drain", conf_seconds, O(drain), 0, 0, 0 },
	{ "worker_stall", conf_seconds, O(worker_stall), 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef O

#define H(f)	offsetof(struct conf_http2, f)
static const struct conf_key conf_http2_keys[] = {
	{ "max_concurrent_streams", conf_uint, H(max_concurrent_streams), 1,
	    10000, 0 },
	{ "max_header_list_size", conf_size, H(max_header_list_size), 1024,
	    16 * 1024 * 1024, 0 },
	{ "initial_window_size", conf_uint, H(initial_window_size), 1024,
	    2147483647, 0 },
	{ "max_continuations", conf_uint, H(max_continuations), 0, 1000, 0 },
	{ "max_resets_per_second", conf_uint, H(max_resets_per_second), 1,
	    1000000, 0 },
	{ "max_control_per_second", conf_uint, H(max_control_per_second), 1,
	    1000000, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef H

static const struct conf_key conf_resolver_keys[] = {
	{ "nameservers", conf_nameservers, 0, 0, 0, 0 },
	{ "srv_interval", conf_seconds, offsetof(struct conf, srv_interval),
	    0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};

static const struct conf_key conf_registry_keys[] = {
	{ "etcd", conf_etcd, 0, 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};

#define E(f)	offsetof(struct conf_etcd, f)
static const struct conf_key conf_etcd_keys[] = {
	{ "endpoints", conf_etcd_endpoints, 0, 0, 0, CONF_REQUIRED },
	{ "prefix", conf_etcd_path, E(prefix), 0, 0, 0 },
	{ "snapshot", conf_etcd_path, E(snapshot), 0, 0, 0 },
	{ "watch_timeout", conf_seconds, E(watch_timeout), 0, 0, 0 },
	{ "request_timeout", conf_seconds, E(request_timeout), 0, 0, 0 },
	{ "tls", conf_upstream_tls, E(tls), 0, 0, 0 },
	{ "username", conf_string, E(username), 0, 0, 0 },
	{ "password_file", conf_token_file, E(password), 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef E

static const char *conf_log_levels[] = { "warn", "info", "debug", NULL };
/* In enum conf_access_format's order. */
static const char *conf_access_formats[] = { "combined", "json", NULL };

static int
conf_admin(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf	*conf = base;

	if (json_is_null(v))
		return (0);
	if (!json_is_string(v) && !json_is_object(v))
		return (conf_error(ctx, "must be an address string, a "
		    "listener object {\"address\", \"tls\"} or null"));
	return (conf_listen_one(ctx, v, &conf->admin, &conf->admin_tls));
}

/* "auto" is one worker per online CPU, capped. */
static int
conf_workers(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf	*conf = base;
	long		 ncpu;

	if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0) {
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		if (ncpu < 1)
			ncpu = 1;
		if (ncpu > CONF_MAX_WORKERS)
			ncpu = CONF_MAX_WORKERS;
		conf->workers = (unsigned)ncpu;
		return (0);
	}
	if (!json_is_integer(v) || json_integer_value(v) < k->min ||
	    json_integer_value(v) > k->max)
		return (conf_error(ctx, "must be an integer in %lld..%lld or "
		    "\"auto\"", k->min, k->max));
	conf->workers = (unsigned)json_integer_value(v);
	return (0);
}

static int
conf_log_level(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf	*conf = base;
	size_t		 i;

	for (i = 0; json_is_string(v) && conf_log_levels[i] != NULL; i++) {
		if (strcmp(json_string_value(v), conf_log_levels[i]) == 0) {
			conf->log_level = conf_strdup(conf_log_levels[i]);
			return (0);
		}
	}
	return (conf_error(ctx, "must be one of \"warn\", \"info\", "
	    "\"debug\""));
}

/*
 * A log destination: "stderr", an absolute path, or (access_log only)
 * "off" or null.  Absolute, because a daemon's working directory is "/"
 * under systemd and a relative path would surprise.  The file is opened
 * when the daemon starts or reloads, never here: -t must not create files.
 */
static int
conf_log_file(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	char		**p = (char **)((char *)base + k->off);
	const char	*s;
	int		 access = k->off == offsetof(struct conf, access_log);

	if (access && (json_is_null(v) || (json_is_string(v) &&
	    strcmp(json_string_value(v), "off") == 0)))
		return (0);
	s = json_is_string(v) ? json_string_value(v) : "";
	if (strcmp(s, "stderr") != 0 && (s[0] != '/' || s[1] == '\0'))
		return (conf_error(ctx, access ? "must be \"off\", \"stderr\" "
		    "or an absolute path" : "must be \"stderr\" or an absolute "
		    "path"));
	free(*p);
	*p = conf_strdup(s);
	return (0);
}

/*
 * admin_token_file: read now (at start, -t and every reload), so a
 * rotated token takes effect on SIGHUP.  One token of visible ASCII,
 * trailing whitespace (the editor's newline) dropped.
 */
static int
conf_token_file(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	char		**p = (char **)((char *)base + k->off);
	char		 buf[1025];
	const char	*path;
	FILE		*fp;
	size_t		 n, i;

	if (!json_is_string(v) || (path = json_string_value(v))[0] != '/')
		return (conf_error(ctx, "must be an absolute path"));
	if ((fp = fopen(path, "r")) == NULL)
		return (conf_error(ctx, "%s: %s", path, strerror(errno)));
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	i = (size_t)ferror(fp);
	if (i == 0 && n == sizeof(buf) - 1 && fgetc(fp) != EOF)
		n = sizeof(buf);	/* too long */
	fclose(fp);
	if (i != 0)
		return (conf_error(ctx, "%s: read error", path));
	if (n == sizeof(buf))
		return (conf_error(ctx, "%s: token longer than %zu bytes", path,
		    sizeof(buf) - 1));
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	if (n == 0)
		return (conf_error(ctx, "%s: empty", path));
	for (i = 0; i < n; i++)
		if (buf[i] <= ' ' || buf[i] > '~')
			return (conf_error(ctx, "%s: the token must be one word "
			    "of visible ASCII", path));
	free(*p);
	*p = conf_strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return (0);
}

static int
conf_access_format(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	size_t	i;

	for (i = 0; json_is_string(v) && conf_access_formats[i] != NULL; i++) {
		if (strcmp(json_string_value(v), conf_access_formats[i]) == 0) {
			*(enum conf_access_format *)((char *)base + k->off) =
			    (enum conf_access_format)i;
			return (0);
		}
	}
	return (conf_error(ctx, "must be \"combined\" or \"json\""));
}

static int
conf_limits(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	return (conf_walk(ctx, conf_limits_keys, v, (char *)base + k->off));
}

static int
conf_timeouts(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	return (conf_walk(ctx, conf_timeouts_keys, v, (char *)base + k->off));
}

static int
conf_http2(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	return (conf_walk(ctx, conf_http2_keys, v, (char *)base + k->off));
}
static int
conf_resolver(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	return (conf_walk(ctx, conf_resolver_keys, v, base));
}

/* Name servers are addresses, never names: "127.0.0.1:53", "[::1]:53". */
static int
conf_nameservers(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf	*conf = base;
	struct in_addr	 in;
	const char	*s, *colon;
	char		 host[64];
	size_t		 i, old;

	if (conf_addr_list(ctx, v, 0, &conf->nameservers,
	    &conf->nnameservers) == -1)
		return (-1);
	for (i = 0; i < conf->nnameservers; i++) {
		s = conf->nameservers[i];
		colon = strrchr(s, ':');
		if (s[0] == '[' || colon == NULL ||
		    (size_t)(colon - s) >= sizeof host)
			continue;	/* "[v6]:port", checked already */
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
		if (inet_pton(AF_INET, host, &in) != 1) {
			old = conf_push_index(ctx, i);
			conf_error(ctx, "must be an IP address and port, not "
			    "a name");
			conf_pop(ctx, old);
			return (-1);
		}
	}
	return (0);
}

/*
 * The line of a string value, for an error: jansson keeps positions only
 * for syntax errors, so look for the quoted text after the key.  0 if not
 * found (an escaped string, say).
 */
static int
conf_line_of(const char *path, const char *key, const char *value)
{
	char	 line[1024], q[300];
	FILE	*fp;
	int	 n = 0, found = 0, seen_key = 0;

	snprintf(q, sizeof q, "\"%s\"", value);
	if ((fp = fopen(path, "r")) == NULL)
		return 0;
	while (!found && fgets(line, sizeof line, fp) != NULL) {
		n++;
		if (!seen_key && strstr(line, key) != NULL)
			seen_key = 1;
		if (seen_key && strstr(line, q) != NULL)
			found = 1;
	}
	fclose(fp);
	return found ? n : 0;
}

/* An array of CIDR strings (IPv4 or IPv6); see realip.h. */
static int
conf_trusted_proxies(struct conf_ctx *ctx, const struct conf_key *k,
    json_t *v, void *base)
{
	struct conf	*conf = base;
	const char	*s;
	size_t		 i, old;
	int		 line;

	if (!json_is_array(v))
		return (conf_error(ctx, "must be an array of CIDR strings"));
	if (json_array_size(v) > 0 && (conf->trusted_proxies = calloc(
	    json_array_size(v), sizeof *conf->trusted_proxies)) == NULL)
		abort();
	for (i = 0; i < json_array_size(v); i++) {
		s = json_string_value(json_array_get(v, i));
		if (s != NULL && realip_cidr_parse(s,
		    &conf->trusted_proxies[i]) == 0)
			continue;
		old = conf_push_index(ctx, i);
		if (s == NULL)
			conf_error(ctx, "must be a CIDR string");
		else if ((line = conf_line_of(conf->path, "\"trusted_proxies\"",
		    s)) == 0)
			conf_error(ctx, "bad CIDR \"%s\"", s);
		else {
			/* "FILE:LINE: key: message", as a syntax error. */
			snprintf(ctx->err, ctx->errlen, "%s:%d: %s: bad CIDR "
			    "\"%s\"", conf->path, line, ctx->kpath, s);
			conf_sanitize(ctx->err);
		}
		conf_pop(ctx, old);
		return (-1);
	}
	conf->ntrusted_proxies = (unsigned)json_array_size(v);
	return (0);
}

static int
conf_registry(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	return (conf_walk(ctx, conf_registry_keys, v, base));
}

static int
conf_etcd(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf	*conf = base;

	if (conf_walk(ctx, conf_etcd_keys, v, &conf->etcd) == -1)
		return (-1);
	if (conf->etcd.prefix == NULL)
		conf->etcd.prefix = conf_strdup("/ingressd");
	if (conf->etcd.https && conf->etcd.tls == NULL)
		return (conf_error(ctx, "https:// endpoints need \"tls\": "
		    "{\"ca\": FILE} to verify etcd"));
	if (!conf->etcd.https && conf->etcd.tls != NULL)
		return (conf_error(ctx, "\"tls\" needs https:// endpoints"));
	if ((conf->etcd.username == NULL) != (conf->etcd.password == NULL))
		return (conf_error(ctx, "\"username\" and \"password_file\" "
		    "go together"));
	return (0);
}

/* "http://IP:PORT" or "https://IP:PORT" (one scheme for all): no name
 * (the main loop must not wait on DNS); kept as "IP:PORT". */
static int
conf_etcd_endpoints(struct conf_ctx *ctx, const struct conf_key *k,
    json_t *v, void *base)
{
	struct conf_etcd *e = base;
	struct in_addr	 in;
	const char	*s, *colon;
	char		 host[64];
	json_t		*x;
	size_t		 i, old, hlen;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return (conf_error(ctx, "must be a non-empty array of "
		    "\"http://IP:PORT\" strings"));
	if ((e->endpoints = calloc(json_array_size(v), sizeof(char *))) ==
	    NULL)
		abort();
	json_array_foreach(v, i, x) {
		old = conf_push_index(ctx, i);
		s = json_is_string(x) ? json_string_value(x) : "";
		if (i > 0 && (strstr(s, "https://") == s) != e->https)
			return (conf_error(ctx, "every endpoint must use the "
			    "same scheme (http:// or https://)"));
		if (strstr(s, "https://") == s) {
			e->https = 1;
			s += 8;
		} else if (strncmp(s, "http://", 7) == 0)
			s += 7;
		else
			return (conf_error(ctx, "must be \"http://IP:PORT\" "
			    "or \"https://IP:PORT\""));
		colon = strrchr(s, ':');
		hlen = colon != NULL ? (size_t)(colon - s) : 0;
		if (hlen == 0 || hlen >= sizeof host ||
		    strtoul(colon + 1, NULL, 10) - 1 >= 65535 ||
		    strspn(colon + 1, "0123456789") != strlen(colon + 1))
			return (conf_error(ctx, "must be \"http://IP:PORT\""));
		memcpy(host, s, hlen);
		host[hlen] = '\0';
		if (inet_pton(AF_INET, host, &in) != 1)
			return (conf_error(ctx, "\"%s\": must be an IPv4 "
			    "address, not a name", host));
		e->endpoints[e->nendpoints++] = conf_strdup(s);
		conf_pop(ctx, old);
	}
	return (0);
}

/* An absolute path: a key prefix ("/ingressd", trailing '/' cut) or the
 * snapshot file. */
static int
conf_etcd_path(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	char		**p = (char **)((char *)base + k->off);
	const char	*s = json_is_string(v) ? json_string_value(v) : "";
	size_t		 len = strlen(s);

	if (s[0] != '/' || len < 2 || strchr(s, '\n') != NULL)
		return (conf_error(ctx, "must be an absolute path (\"/...\")"));
	free(*p);
	*p = conf_strdup(s);
	if (k->off == offsetof(struct conf_etcd, prefix))
		while (len > 1 && (*p)[len - 1] == '/')
			(*p)[--len] = '\0';
	return (0);
}

static void
conf_defaults(struct conf *conf)
{
	conf->workers = 1;
	conf->limits.max_request_line = 8192;
	conf->limits.max_header_bytes = 32768;
	conf->limits.max_headers = 100;
	conf->limits.max_body = 16777216;
	conf->limits.max_connections = 10000;
	conf->timeouts.header = 10;
	conf->timeouts.body = 60;
	conf->timeouts.keepalive = 75;
	conf->timeouts.request = 60;
	conf->timeouts.connect = 5;
	conf->timeouts.queue = 5;
	conf->timeouts.ping_interval = 5;
	conf->timeouts.drain = 30;
	conf->timeouts.worker_stall = 1;
	conf->handle_idle_ttl = 300;
	conf->srv_interval = 30;
	conf->etcd.watch_timeout = 30;
	conf->etcd.request_timeout = 5;
	conf->http2.max_concurrent_streams = 100;
	conf->http2.max_header_list_size = 65536;
	conf->http2.initial_window_size = 262144;
	conf->http2.max_continuations = 8;
	conf->http2.max_resets_per_second = 100;
	conf->http2.max_control_per_second = 100;
}

/* Defaults that are allocated: set only if the file did not. */
static void
conf_defaults_after(struct conf *conf)
{
	if (conf->nlisten == 0) {
		free(conf->listen);
		free(conf->listen_tls);
		if ((conf->listen = calloc(1, sizeof *conf->listen)) == NULL ||
		    (conf->listen_tls = calloc(1, sizeof *conf->listen_tls)) ==
		    NULL)
			abort();
		conf->listen[0] = conf_strdup("127.0.0.1:8000");
		conf->nlisten = 1;
	}
	if (conf->log_level == NULL)
		conf->log_level = conf_strdup("info");
}

struct conf *
conf_load(const char *path, char *err, size_t errlen)
{
	struct conf_ctx	 ctx;
	struct conf	*conf;
	json_error_t	 jerr;
	json_t		*root;
	FILE		*fp;

	if ((fp = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return (NULL);
	}
	root = json_loadf(fp, JSON_REJECT_DUPLICATES, &jerr);
	fclose(fp);
	if (root == NULL) {
		snprintf(err, errlen, "%s:%d:%d: %s", path, jerr.line,
		    jerr.column, jerr.text);
		if (errlen > 0)
			conf_sanitize(err);
		return (NULL);
	}

	if ((conf = calloc(1, sizeof *conf)) == NULL)
		abort();
	conf->path = conf_strdup(path);
	conf_defaults(conf);
	memset(&ctx, 0, sizeof ctx);
	ctx.conf = conf;
	ctx.path = conf->path;
	ctx.err = err;
	ctx.errlen = errlen;
	if (!json_is_object(root)) {
		conf_error(&ctx, "must be a JSON object at the top level");
		goto fail;
	}
	if (conf_walk(&ctx, conf_top_keys, root, conf) == -1 ||
	    conf_check_listeners(&ctx, conf) == -1)
		goto fail;
	conf_defaults_after(conf);
	json_decref(root);
	return (conf);

fail:
	json_decref(root);
	conf_free(conf);
	return (NULL);
}

void
conf_free(struct conf *conf)
{
	struct conf_deployment	*d;
	struct conf_route	*r;
	size_t			 i, n;

	if (conf == NULL)
		return;
	for (i = 0; i < conf->nroutes; i++) {
		r = &conf->routes[i];
		free(r->host);
		free(r->prefix);
		free(r->deployment);
		free(r->from_header);
	}
	free(conf->routes);
	for (i = 0; i < conf->ndeployments; i++) {
		d = &conf->deployments[i];
		free(d->name);
		for (n = 0; d->command != NULL && d->command[n] != NULL; n++)
			continue;
		conf_free_strv(d->command, n);
		conf_free_strv(d->endpoints, d->nendpoints);
		free(d->shares);
		free(d->http.health_path);
		free(d->dns);
		conf_upstream_tls_free(d->tls);
		free(d->inproc.module);
		conf_free_strv(d->inproc.args, d->inproc.nargs);
	}
	conf_free_strv(conf->nameservers, conf->nnameservers);
	conf_free_strv(conf->etcd.endpoints, conf->etcd.nendpoints);
	free(conf->etcd.prefix);
	free(conf->etcd.snapshot);
	conf_upstream_tls_free(conf->etcd.tls);
	free(conf->etcd.username);
	if (conf->etcd.password != NULL)
		explicit_bzero(conf->etcd.password, strlen(conf->etcd.password));
	free(conf->etcd.password);
	free(conf->trusted_proxies);
	free(conf->deployments);
	for (i = 0; conf->listen_tls != NULL && i < conf->nlisten; i++)
		conf_tls_free(conf->listen_tls[i]);
	free(conf->listen_tls);
	conf_free_strv(conf->listen, conf->nlisten);
	free(conf->admin);
	conf_tls_free(conf->admin_tls);
	free(conf->runtime_dir);
	free(conf->log_level);
	free(conf->error_log);
	free(conf->access_log);
	if (conf->admin_token != NULL)
		explicit_bzero(conf->admin_token, strlen(conf->admin_token));
	free(conf->admin_token);
	free(conf->path);
	free(conf);
}
