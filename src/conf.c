/*
 * conf.c -- load, validate and snapshot the configuration.
 *
 * Each JSON object has a table of the keys it may hold: name, handler,
 * offset of the field it fills, and limits.  conf_walk() rejects keys not
 * in the table, then runs each present key's handler with the key path
 * ("deployments.echo.spawn.replicas") pushed, so every error can say where
 * it is.  Defaults are set before a walk; a walk only overwrites them.
 *
 * Error handling: a handler returns -1 after conf_error() wrote the message;
 * everything allocated so far hangs off the conf and conf_free() releases
 * it, so no handler needs its own cleanup.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "conf.h"
#include "inproc_mod.h"
#include "net.h"
#include "tchar.h"

#define CONF_REQUIRED	0x1	/* the key must be present */
#define CONF_ZERO_OK	0x2	/* seconds: 0 is allowed (means "default") */

#define CONF_MAX_SECONDS 86400
#define CONF_NAME_MAX	255

struct conf_ctx {
	struct conf	*conf;
	char		*err;
	size_t		 errlen;
	char		 kpath[512];	/* "deployments.echo.spawn" */
	size_t		 kplen;
};

struct conf_key;
typedef int (*conf_fn)(struct conf_ctx *, const struct conf_key *, json_t *,
    void *);

struct conf_key {
	const char	*name;
	conf_fn		 fn;
	size_t		 off;		/* field in the object being filled */
	long long	 min;		/* integers only */
	long long	 max;
	int		 flags;
};

static int	conf_error(struct conf_ctx *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static size_t	conf_push(struct conf_ctx *, const char *);
static size_t	conf_push_index(struct conf_ctx *, size_t);
static void	conf_pop(struct conf_ctx *, size_t);
static int	conf_walk(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
static char	*conf_strdup(const char *);
static int	conf_check_addr(struct conf_ctx *, const char *);
static int	conf_check_listeners(struct conf_ctx *, const struct conf *);
static void	conf_free_strv(char **, size_t);
static int	conf_addr_list(struct conf_ctx *, json_t *, int, char ***,
		    unsigned *);

static int	conf_uint(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
static int	conf_size(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
static int	conf_seconds(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_bool(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
static int	conf_string(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_listen(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
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
static int	conf_routes(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_route_host(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_route_prefix(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_route_deployment(struct conf_ctx *,
		    const struct conf_key *, json_t *, void *);
static int	conf_deployments(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_spawn(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
static int	conf_command(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_endpoints(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_dns(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
static int	conf_dns_srv(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_route_from(struct conf_ctx *, const struct conf_key *,
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
static int	conf_protocol(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_health(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_inproc(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_inproc_module(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_inproc_args(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_health_path(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_tls(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
static int	conf_upstream_tls(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);

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

#define R(f)	offsetof(struct conf_route, f)
static const struct conf_key conf_route_keys[] = {
	{ "host", conf_route_host, R(host), 0, 0, 0 },
	{ "prefix", conf_route_prefix, 0, 0, 0, CONF_REQUIRED },
	{ "deployment", conf_route_deployment, R(deployment), 0, 0, 0 },
	{ "deployment_from", conf_route_from, 0, 0, 0, 0 },
	{ "strip_prefix", conf_bool, R(strip_prefix), 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef R

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

#define D(f)	offsetof(struct conf_deployment, f)
static const struct conf_key conf_deployment_keys[] = {
	{ "spawn", conf_spawn, 0, 0, 0, 0 },
	{ "endpoints", conf_endpoints, 0, 0, 0, 0 },
	{ "dns", conf_dns, 0, 0, 0, 0 },
	{ "dns_srv", conf_dns_srv, 0, 0, 0, 0 },
	{ "inproc", conf_inproc, 0, 0, 0, 0 },
	{ "max_ongoing_requests", conf_uint, D(max_ongoing), 1, 100000, 0 },
	{ "queue", conf_uint, D(queue_max), 0, 1000000, 0 },
	{ "queue_timeout", conf_seconds, D(queue_timeout), 0, 0,
	    CONF_ZERO_OK },
	{ "request_timeout", conf_seconds, D(request_timeout), 0, 0,
	    CONF_ZERO_OK },
	{ "prewarm", conf_bool, D(prewarm), 0, 0, 0 },
	{ "protocol", conf_protocol, D(protocol), 0, 0, 0 },
	{ "health", conf_health, 0, 0, 0, 0 },
	{ "idle_timeout", conf_seconds, D(http.idle_timeout), 0, 0, 0 },
	{ "max_consecutive_5xx", conf_uint, D(http.max_5xx), 0, 1000000, 0 },
	{ "retry_idempotent", conf_bool, D(http.retry_idempotent), 0, 0, 0 },
	{ "tls", conf_upstream_tls, D(tls), 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};

static const struct conf_key conf_health_keys[] = {
	{ "path", conf_health_path, 0, 0, 0, CONF_REQUIRED },
	{ "interval", conf_seconds, D(http.health_interval), 0, 0, 0 },
	{ "timeout", conf_seconds, D(http.health_timeout), 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};

static const struct conf_key conf_inproc_keys[] = {
	{ "module", conf_inproc_module, 0, 0, 0, CONF_REQUIRED },
	{ "args", conf_inproc_args, 0, 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};

static const struct conf_key conf_spawn_keys[] = {
	{ "command", conf_command, 0, 0, 0, CONF_REQUIRED },
	{ "replicas", conf_uint, D(replicas), 1, 1024, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef D

static const char *conf_log_levels[] = { "warn", "info", "debug", NULL };
/* In enum conf_access_format's order. */
static const char *conf_access_formats[] = { "combined", "json", NULL };

/*
 * Keys and values quoted in a message come from the file: control
 * characters are replaced so the message stays one line in the log.
 */
static void
conf_sanitize(char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	}
}

/* Write "FILE: key.path: message" into the caller's buffer; returns -1. */
static int
conf_error(struct conf_ctx *ctx, const char *fmt, ...)
{
	char	msg[512];
	va_list	ap;

	if (ctx->errlen == 0)
		return (-1);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (ctx->kplen == 0)
		snprintf(ctx->err, ctx->errlen, "%s: %s", ctx->conf->path, msg);
	else
		snprintf(ctx->err, ctx->errlen, "%s: %s: %s", ctx->conf->path,
		    ctx->kpath, msg);
	conf_sanitize(ctx->err);
	return (-1);
}

/* Key paths longer than the buffer are cut short; conf_pop still works. */
static size_t
conf_push(struct conf_ctx *ctx, const char *name)
{
	size_t	old = ctx->kplen;
	int	n;

	n = snprintf(ctx->kpath + old, sizeof ctx->kpath - old, "%s%s",
	    old == 0 ? "" : ".", name);
	if (n > 0)
		ctx->kplen += (size_t)n;
	if (ctx->kplen >= sizeof ctx->kpath)
		ctx->kplen = sizeof ctx->kpath - 1;
	return (old);
}

static size_t
conf_push_index(struct conf_ctx *ctx, size_t i)
{
	size_t	old = ctx->kplen;
	int	n;

	n = snprintf(ctx->kpath + old, sizeof ctx->kpath - old, "[%zu]", i);
	if (n > 0)
		ctx->kplen += (size_t)n;
	if (ctx->kplen >= sizeof ctx->kpath)
		ctx->kplen = sizeof ctx->kpath - 1;
	return (old);
}

static void
conf_pop(struct conf_ctx *ctx, size_t old)
{
	ctx->kplen = old;
	ctx->kpath[old] = '\0';
}

/*
 * Validate one object against its table and fill base.  Unknown keys are
 * reported first, in the file's order, so a typo is never hidden behind a
 * "missing key" error.
 */
static int
conf_walk(struct conf_ctx *ctx, const struct conf_key *keys, json_t *obj,
    void *base)
{
	const struct conf_key	*k;
	const char		*name;
	json_t			*v;
	size_t			 old;
	int			 rc;

	if (!json_is_object(obj))
		return (conf_error(ctx, "must be an object"));
	json_object_foreach(obj, name, v) {
		for (k = keys; k->name != NULL; k++) {
			if (strcmp(k->name, name) == 0)
				break;
		}
		if (k->name == NULL) {
			conf_push(ctx, name);
			return (conf_error(ctx, "unknown key"));
		}
	}
	for (k = keys; k->name != NULL; k++) {
		old = conf_push(ctx, k->name);
		if ((v = json_object_get(obj, k->name)) == NULL) {
			if (k->flags & CONF_REQUIRED)
				return (conf_error(ctx, "required key missing"));
			conf_pop(ctx, old);
			continue;
		}
		rc = k->fn(ctx, k, v, base);
		if (rc == -1)
			return (-1);
		conf_pop(ctx, old);
	}
	return (0);
}

static char *
conf_strdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		abort();	/* conf is loaded at start-up: no way on */
	return (p);
}

static int
conf_int_value(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    long long *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < k->min ||
	    json_integer_value(v) > k->max)
		return (conf_error(ctx, "must be an integer in %lld..%lld",
		    k->min, k->max));
	*out = json_integer_value(v);
	return (0);
}

static int
conf_uint(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	long long	n = 0;

	if (conf_int_value(ctx, k, v, &n) == -1)
		return (-1);
	*(unsigned *)((char *)base + k->off) = (unsigned)n;
	return (0);
}

static int
conf_size(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	long long	n = 0;

	if (conf_int_value(ctx, k, v, &n) == -1)
		return (-1);
	*(size_t *)((char *)base + k->off) = (size_t)n;
	return (0);
}

/* Seconds: an integer or a real; 0 only where it means "the default". */
static int
conf_seconds(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	double	d;

	d = json_is_number(v) ? json_number_value(v) : -1;
	if (k->flags & CONF_ZERO_OK) {
		if (!(d >= 0 && d <= CONF_MAX_SECONDS))
			return (conf_error(ctx, "must be a number of seconds "
			    "in 0..%d", CONF_MAX_SECONDS));
	} else if (!(d > 0 && d <= CONF_MAX_SECONDS))
		return (conf_error(ctx, "must be a number of seconds > 0 and "
		    "<= %d", CONF_MAX_SECONDS));
	*(double *)((char *)base + k->off) = d;
	return (0);
}

static int
conf_bool(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	if (!json_is_boolean(v))
		return (conf_error(ctx, "must be true or false"));
	*(int *)((char *)base + k->off) = json_is_true(v);
	return (0);
}

static int
conf_string(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	char	**p = (char **)((char *)base + k->off);

	if (!json_is_string(v) || json_string_length(v) == 0)
		return (conf_error(ctx, "must be a non-empty string"));
	free(*p);
	*p = conf_strdup(json_string_value(v));
	return (0);
}

/* Syntax only: conf_load (and "ingressd -t") must not wait on DNS. */
static int
conf_check_addr(struct conf_ctx *ctx, const char *s)
{
	char	msg[512];

	if (net_addr_check(s, msg, sizeof msg) == -1)
		return (conf_error(ctx, "%s", msg));
	return (0);
}

/*
 * Each listener its own address, as written (-t and the start compare the
 * resolved addresses too): a second bind of one address would fail, or
 * with SO_REUSEPORT quietly split its connections, and an admin address
 * that is also public would serve the admin API to everyone.
 */
static int
conf_check_listeners(struct conf_ctx *ctx, const struct conf *conf)
{
	unsigned	i, j;
	size_t		old;
	int		rv = 0;

	old = conf_push(ctx, "listen");
	for (i = 0; i < conf->nlisten && rv == 0; i++) {
		for (j = 0; j < i; j++) {
			if (strcmp(conf->listen[i], conf->listen[j]) != 0)
				continue;
			conf_push_index(ctx, i);
			rv = conf_error(ctx, "\"%s\" is listed twice (also "
			    "listen[%u])", conf->listen[i], j);
			break;
		}
	}
	conf_pop(ctx, old);
	for (i = 0; i < conf->nlisten && rv == 0 && conf->admin != NULL; i++) {
		if (strcmp(conf->admin, conf->listen[i]) != 0)
			continue;
		old = conf_push(ctx, "admin");
		rv = conf_error(ctx, "\"%s\" is also listen[%u]: the admin "
		    "listener needs an address of its own", conf->admin, i);
		conf_pop(ctx, old);
	}
	return (rv);
}

/* A string or a non-empty array of strings, each a valid address. */
static int
conf_addr_list(struct conf_ctx *ctx, json_t *v, int single_ok, char ***list,
    unsigned *n)
{
	json_t	*e;
	size_t	 i, old;

	if (single_ok && json_is_string(v)) {
		if (conf_check_addr(ctx, json_string_value(v)) == -1)
			return (-1);
		*list = calloc(1, sizeof **list);
		if (*list == NULL)
			abort();
		(*list)[0] = conf_strdup(json_string_value(v));
		*n = 1;
		return (0);
	}
	if (!json_is_array(v) || json_array_size(v) == 0)
		return (conf_error(ctx, "must be %sa non-empty array of address "
		    "strings", single_ok ? "an address string or " : ""));
	if ((*list = calloc(json_array_size(v), sizeof **list)) == NULL)
		abort();
	*n = (unsigned)json_array_size(v);
	json_array_foreach(v, i, e) {
		old = conf_push_index(ctx, i);
		if (!json_is_string(e))
			return (conf_error(ctx, "must be an address string"));
		if (conf_check_addr(ctx, json_string_value(e)) == -1)
			return (-1);
		(*list)[i] = conf_strdup(json_string_value(e));
		conf_pop(ctx, old);
	}
	return (0);
}

/* TLS -------------------------------------------------------------------- */

/* A listen entry in its object form. */
struct conf_listener {
	char		*address;
	struct conf_tls	*tls;
};

static int	conf_path(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
static int	conf_tls_certs(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_tls_alpn(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_tls_enum(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_listener_addr(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);

static const char *conf_verify_names[] = { "off", "optional", "require",
    NULL };
static const char *conf_tls_versions[] = { "TLSv1.2", "TLSv1.3", NULL };

static const struct conf_key conf_listener_keys[] = {
	{ "address", conf_listener_addr, 0, 0, 0, CONF_REQUIRED },
	{ "tls", conf_tls, offsetof(struct conf_listener, tls), 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};

#define S(f)	offsetof(struct conf_tls, f)
static const struct conf_key conf_tls_keys[] = {
	{ "certificates", conf_tls_certs, 0, 0, 0, CONF_REQUIRED },
	{ "alpn", conf_tls_alpn, 0, 0, 0, 0 },
	{ "ciphers", conf_string, S(ciphers), 0, 0, 0 },
	{ "ciphersuites", conf_string, S(ciphersuites), 0, 0, 0 },
	{ "min_version", conf_tls_enum, S(min_version), 0, 0, 0 },
	{ "client_ca", conf_path, S(client_ca), 0, 0, 0 },
	{ "verify_client", conf_tls_enum, S(verify_client), 0, 0, 0 },
	{ "handshake_timeout", conf_seconds, S(handshake_timeout), 0, 0, 0 },
	{ "session_tickets", conf_bool, S(session_tickets), 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef S

static const struct conf_key conf_tls_cert_keys[] = {
	{ "cert", conf_path, offsetof(struct conf_tls_cert, cert), 0, 0,
	    CONF_REQUIRED },
	{ "key", conf_path, offsetof(struct conf_tls_cert, key), 0, 0,
	    CONF_REQUIRED },
	{ NULL, NULL, 0, 0, 0, 0 }
};

#define U(f)	offsetof(struct conf_upstream_tls, f)
static const struct conf_key conf_upstream_tls_keys[] = {
	{ "ca", conf_path, U(ca), 0, 0, CONF_REQUIRED },
	{ "cert", conf_path, U(cert), 0, 0, 0 },
	{ "key", conf_path, U(key), 0, 0, 0 },
	{ "server_name", conf_string, U(server_name), 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef U

/* A file: absolute, or relative to the conf file's directory. */
static int
conf_path(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	char		**p = (char **)((char *)base + k->off);
	const char	*s, *slash;
	int		 dlen;

	if (!json_is_string(v) || json_string_length(v) == 0)
		return (conf_error(ctx, "must be a file path"));
	s = json_string_value(v);
	slash = strrchr(ctx->conf->path, '/');
	free(*p);
	if (s[0] == '/' || slash == NULL) {
		*p = conf_strdup(s);
		return (0);
	}
	dlen = (int)(slash - ctx->conf->path);
	if (asprintf(p, "%.*s/%s", dlen, ctx->conf->path, s) == -1)
		abort();
	return (0);
}

static int
conf_tls_certs(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_tls	*t = base;
	json_t		*e;
	size_t		 i, old;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return (conf_error(ctx, "must be a non-empty array of "
		    "{\"cert\": ..., \"key\": ...} (the first is the "
		    "default)"));
	if ((t->certs = calloc(json_array_size(v), sizeof(*t->certs))) == NULL)
		abort();
	json_array_foreach(v, i, e) {
		old = conf_push_index(ctx, i);
		t->ncerts++;
		if (conf_walk(ctx, conf_tls_cert_keys, e, &t->certs[i]) == -1)
			return (-1);
		conf_pop(ctx, old);
	}
	return (0);
}

static int
conf_tls_alpn(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_tls	*t = base;
	const char	*s;
	json_t		*e;
	size_t		 i;

	if (!json_is_array(v))
		return (conf_error(ctx, "must be an array of \"h2\" and "
		    "\"http/1.1\""));
	for (i = 0; i < t->nalpn; i++)
		free(t->alpn[i]);
	free(t->alpn);
	t->nalpn = 0;
	if ((t->alpn = calloc(json_array_size(v) + 1, sizeof(*t->alpn))) ==
	    NULL)
		abort();
	json_array_foreach(v, i, e) {
		s = json_is_string(e) ? json_string_value(e) : "";
		if (strcmp(s, "h2") != 0 && strcmp(s, "http/1.1") != 0) {
			conf_push_index(ctx, i);
			return (conf_error(ctx, "must be \"h2\" or "
			    "\"http/1.1\""));
		}
		t->alpn[t->nalpn++] = conf_strdup(s);
	}
	return (0);
}

/* verify_client (an enum) or min_version (a string), from their names. */
static int
conf_tls_enum(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	int		 verify = k->off == offsetof(struct conf_tls,
			    verify_client);
	const char	**names = verify ? conf_verify_names : conf_tls_versions;
	const char	*s = json_is_string(v) ? json_string_value(v) : "";
	size_t		 i;

	for (i = 0; names[i] != NULL; i++) {
		if (strcmp(s, names[i]) != 0)
			continue;
		if (verify)
			*(enum conf_verify *)((char *)base + k->off) =
			    (enum conf_verify)i;
		else
			*(char **)((char *)base + k->off) = conf_strdup(s);
		return (0);
	}
	return (conf_error(ctx, verify ? "must be \"off\", \"optional\" or "
	    "\"require\"" : "must be \"TLSv1.2\" or \"TLSv1.3\""));
}

static int
conf_tls(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_tls	**tp = (struct conf_tls **)((char *)base + k->off);
	struct conf_tls	*t;
	size_t		 old;

	if ((t = *tp = calloc(1, sizeof(*t))) == NULL ||
	    (t->alpn = calloc(3, sizeof(*t->alpn))) == NULL)
		abort();
	t->handshake_timeout = 10;
	t->session_tickets = 1;
	t->alpn[0] = conf_strdup("h2");
	t->alpn[1] = conf_strdup("http/1.1");
	t->nalpn = 2;
	if (conf_walk(ctx, conf_tls_keys, v, t) == -1)
		return (-1);
	if ((t->verify_client != CONF_VERIFY_OFF) == (t->client_ca == NULL)) {
		old = conf_push(ctx, t->client_ca == NULL ? "verify_client" :
		    "client_ca");
		conf_error(ctx, t->client_ca == NULL ? "needs \"client_ca\"" :
		    "needs \"verify_client\": \"optional\" or \"require\"");
		conf_pop(ctx, old);
		return (-1);
	}
	return (0);
}

static int
conf_upstream_tls(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_upstream_tls **tp = (struct conf_upstream_tls **)
	    ((char *)base + k->off);

	if ((*tp = calloc(1, sizeof(**tp))) == NULL)
		abort();
	if (conf_walk(ctx, conf_upstream_tls_keys, v, *tp) == -1)
		return (-1);
	if (((*tp)->cert == NULL) != ((*tp)->key == NULL))
		return (conf_error(ctx, "\"cert\" and \"key\" go together"));
	return (0);
}

static int
conf_listener_addr(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_listener *l = base;

	if (!json_is_string(v))
		return (conf_error(ctx, "must be an address string"));
	if (conf_check_addr(ctx, json_string_value(v)) == -1)
		return (-1);
	l->address = conf_strdup(json_string_value(v));
	return (0);
}

static void
conf_tls_free(struct conf_tls *t)
{
	unsigned	i;

	if (t == NULL)
		return;
	for (i = 0; i < t->ncerts; i++) {
		free(t->certs[i].cert);
		free(t->certs[i].key);
	}
	free(t->certs);
	conf_free_strv(t->alpn, t->nalpn);
	free(t->ciphers);
	free(t->ciphersuites);
	free(t->min_version);
	free(t->client_ca);
	free(t);
}

static void
conf_upstream_tls_free(struct conf_upstream_tls *t)
{
	if (t == NULL)
		return;
	free(t->ca);
	free(t->cert);
	free(t->key);
	free(t->server_name);
	free(t);
}

/* One listen entry: an address string, or {"address", "tls"}. */
static int
conf_listen_one(struct conf_ctx *ctx, json_t *e, struct conf *conf,
    unsigned i)
{
	struct conf_listener	 l;

	if (json_is_string(e)) {
		if (conf_check_addr(ctx, json_string_value(e)) == -1)
			return (-1);
		conf->listen[i] = conf_strdup(json_string_value(e));
		return (0);
	}
	if (!json_is_object(e))
		return (conf_error(ctx, "must be an address string or a "
		    "listener object {\"address\", \"tls\"}"));
	memset(&l, 0, sizeof(l));
	if (conf_walk(ctx, conf_listener_keys, e, &l) == -1) {
		/* Handed over so conf_free releases it. */
		conf->listen[i] = l.address != NULL ? l.address :
		    conf_strdup("");
		conf->listen_tls[i] = l.tls;
		return (-1);
	}
	conf->listen[i] = l.address;
	conf->listen_tls[i] = l.tls;
	return (0);
}

/* An address string, a listener object, or a non-empty array of them. */
static int
conf_listen(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf	*conf = base;
	json_t		*e;
	size_t		 i, n, old;

	n = json_is_array(v) ? json_array_size(v) : 1;
	if (n == 0 || (!json_is_array(v) && !json_is_string(v) &&
	    !json_is_object(v)))
		return (conf_error(ctx, "must be an address string, a "
		    "listener object {\"address\", \"tls\"} or a non-empty "
		    "array of them"));
	if ((conf->listen = calloc(n, sizeof(*conf->listen))) == NULL ||
	    (conf->listen_tls = calloc(n, sizeof(*conf->listen_tls))) == NULL)
		abort();
	if (!json_is_array(v)) {
		conf->nlisten = 1;
		return (conf_listen_one(ctx, v, conf, 0));
	}
	json_array_foreach(v, i, e) {
		old = conf_push_index(ctx, i);
		conf->nlisten++;
		if (conf_listen_one(ctx, e, conf, (unsigned)i) == -1)
			return (-1);
		conf_pop(ctx, old);
	}
	return (0);
}

static int
conf_admin(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf	*conf = base;

	if (json_is_null(v))
		return (0);
	if (!json_is_string(v))
		return (conf_error(ctx, "must be an address string or null"));
	if (conf_check_addr(ctx, json_string_value(v)) == -1)
		return (-1);
	conf->admin = conf_strdup(json_string_value(v));
	return (0);
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

/*
 * A route host: a name or "[v6]", no port (the request's port is ignored).
 * route_match() cuts a request's host at the first ']' (or ':'), so a
 * "[v6]" host must have its only ']' last, or no request could match it.
 */
static int
conf_route_host(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	const char	*s;
	size_t		 len;

	if (conf_string(ctx, k, v, base) == -1)
		return (-1);
	s = json_string_value(v);
	len = strlen(s);
	if (s[0] == '[' ? strchr(s, ']') != s + len - 1 :
	    strchr(s, ':') != NULL)
		return (conf_error(ctx, "must be a host name without a port"));
	return (0);
}

static int
conf_route_prefix(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_route	*r = base;

	if (!json_is_string(v) || json_string_value(v)[0] != '/')
		return (conf_error(ctx, "must be a string starting with '/'"));
	r->prefix = conf_strdup(json_string_value(v));
	r->prefix_len = strlen(r->prefix);
	return (0);
}

static int
conf_route_deployment(struct conf_ctx *ctx, const struct conf_key *k,
    json_t *v, void *base)
{
	if (!json_is_string(v))
		return (conf_error(ctx, "must be a string"));
	if (conf_find_deployment(ctx->conf, json_string_value(v)) == NULL)
		return (conf_error(ctx, "no deployment named \"%s\"",
		    json_string_value(v)));
	return (conf_string(ctx, k, v, base));
}

/* An HTTP header name (a token), at most this long. */
#define CONF_HEADER_MAX	64

static int
conf_token_ok(const char *s)
{
	size_t	len = strlen(s), i;

	for (i = 0; i < len && tchar_is((unsigned char)s[i]); i++)
		continue;
	return (len > 0 && len <= CONF_HEADER_MAX && i == len);
}

/* "path": the segment after the prefix; "header:NAME": that header. */
static int
conf_route_from(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_route	*r = base;
	const char		*s;
	char			*p;

	s = json_is_string(v) ? json_string_value(v) : "";
	if (strcmp(s, "path") == 0) {
		r->from = CONF_FROM_PATH;
		return (0);
	}
	if (strncmp(s, "header:", 7) != 0 || !conf_token_ok(s + 7))
		return (conf_error(ctx, "must be \"path\" or \"header:NAME\" "
		    "(NAME a header name of at most %d characters)",
		    CONF_HEADER_MAX));
	r->from = CONF_FROM_HEADER;
	r->from_header = conf_strdup(s + 7);
	for (p = r->from_header; *p != '\0'; p++)
		*p = (char)tolower((unsigned char)*p);
	r->from_header_len = strlen(r->from_header);
	return (0);
}

/* A route names its deployment one way; a path route always strips. */
static int
conf_route_check(struct conf_ctx *ctx, const struct conf_route *r)
{
	size_t	old;

	if ((r->deployment != NULL) == (r->from != CONF_FROM_CONF))
		return (conf_error(ctx, "needs exactly one of \"deployment\" "
		    "or \"deployment_from\""));
	if (r->from == CONF_FROM_PATH && r->strip_prefix) {
		old = conf_push(ctx, "strip_prefix");
		conf_error(ctx, "not with \"deployment_from\": \"path\" (the "
		    "prefix and the name are always stripped)");
		conf_pop(ctx, old);
		return (-1);
	}
	return (0);
}

static int
conf_same_host(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a == b);
	return (strcasecmp(a, b) == 0);
}

/* Routes are few (hundreds): a pairwise duplicate check is fine. */
static int
conf_routes(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf		*conf = base;
	struct conf_route	*r, *o;
	json_t			*e;
	size_t			 i, j, old;

	if (!json_is_array(v))
		return (conf_error(ctx, "must be an array"));
	if (json_array_size(v) == 0)
		return (0);
	conf->routes = calloc(json_array_size(v), sizeof *conf->routes);
	if (conf->routes == NULL)
		abort();
	conf->nroutes = (unsigned)json_array_size(v);
	json_array_foreach(v, i, e) {
		old = conf_push_index(ctx, i);
		r = &conf->routes[i];
		if (conf_walk(ctx, conf_route_keys, e, r) == -1 ||
		    conf_route_check(ctx, r) == -1)
			return (-1);
		for (j = 0; j < i; j++) {
			o = &conf->routes[j];
			if (strcmp(o->prefix, r->prefix) == 0 &&
			    conf_same_host(o->host, r->host))
				return (conf_error(ctx, "same host and prefix "
				    "as routes[%zu]", j));
		}
		conf_pop(ctx, old);
	}
	return (0);
}

static int
conf_name_ok(const char *s)
{
	size_t	len = strlen(s);

	if (len == 0 || len > CONF_NAME_MAX)
		return (0);
	return (strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._-") == len);
}

/* Fill one deployment; per-deployment timeouts default to the global ones. */
static int
conf_deployment(struct conf_ctx *ctx, struct conf_deployment *d,
    const char *name, json_t *v)
{
	json_t	*spawn, *endpoints, *dns, *srv, *inproc;
	int	 n;

	if (!conf_name_ok(name))
		return (conf_error(ctx, "bad deployment name (1..%d characters "
		    "of A-Z a-z 0-9 . _ -)", CONF_NAME_MAX));
	d->name = conf_strdup(name);
	d->replicas = 1;
	d->max_ongoing = 100;
	d->queue_max = 1024;
	d->http.health_interval = 5;
	d->http.health_timeout = 1;
	d->http.idle_timeout = 4;
	if (conf_walk(ctx, conf_deployment_keys, v, d) == -1)
		return (-1);
	if (d->protocol != CONF_PROTO_HTTP && (json_object_get(v, "health") ||
	    json_object_get(v, "idle_timeout") ||
	    json_object_get(v, "max_consecutive_5xx") ||
	    json_object_get(v, "retry_idempotent")))
		return (conf_error(ctx, "\"health\", \"idle_timeout\", "
		    "\"max_consecutive_5xx\" and \"retry_idempotent\" need "
		    "\"protocol\": \"http\""));
	if (d->protocol == CONF_PROTO_HTTP && json_object_get(v, "tls"))
		return (conf_error(ctx, "\"tls\" is for the wire protocol: "
		    "HTTP replicas over TLS are not supported yet"));
	spawn = json_object_get(v, "spawn");
	endpoints = json_object_get(v, "endpoints");
	dns = json_object_get(v, "dns");
	srv = json_object_get(v, "dns_srv");
	inproc = json_object_get(v, "inproc");
	n = (spawn != NULL) + (endpoints != NULL) + (dns != NULL) +
	    (srv != NULL) + (inproc != NULL);
	if (n != 1)
		return (conf_error(ctx, "needs exactly one of \"spawn\", "
		    "\"endpoints\", \"dns\", \"dns_srv\" or \"inproc\""));
	if (inproc != NULL && json_object_get(v, "protocol") != NULL)
		return (conf_error(ctx, "\"protocol\" does not apply to "
		    "\"inproc\" (requests are direct calls)"));
	d->source = spawn != NULL ? CONF_SPAWN : endpoints != NULL ?
	    CONF_ENDPOINTS : dns != NULL ? CONF_DNS : srv != NULL ?
	    CONF_DNS_SRV : CONF_INPROC;
	if (d->source == CONF_INPROC)
		d->replicas = 1;	/* one instance in each worker */
	if (d->source == CONF_ENDPOINTS)
		d->replicas = d->nendpoints;
	else if (d->source == CONF_DNS || d->source == CONF_DNS_SRV)
		d->replicas = 0;	/* as many as the name has addresses */
	if (d->queue_timeout == 0)
		d->queue_timeout = ctx->conf->timeouts.queue;
	if (d->request_timeout == 0)
		d->request_timeout = ctx->conf->timeouts.request;
	return (0);
}

static int
conf_deployments(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf	*conf = base;
	const char	*name;
	json_t		*e;
	size_t		 old;

	if (!json_is_object(v))
		return (conf_error(ctx, "must be an object"));
	if (json_object_size(v) == 0)
		return (0);
	conf->deployments = calloc(json_object_size(v),
	    sizeof *conf->deployments);
	if (conf->deployments == NULL)
		abort();
	json_object_foreach(v, name, e) {
		old = conf_push(ctx, name);
		/* Counted as filled before the walk so conf_free sees it. */
		conf->ndeployments++;
		if (conf_deployment(ctx,
		    &conf->deployments[conf->ndeployments - 1], name, e) == -1)
			return (-1);
		conf_pop(ctx, old);
	}
	return (0);
}

/* "wire" (the default), "http" or "h2c". */
static int
conf_protocol(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	const char	*s = json_is_string(v) ? json_string_value(v) : "";

	if (strcmp(s, "wire") == 0)
		*(enum conf_protocol *)((char *)base + k->off) = CONF_PROTO_WIRE;
	else if (strcmp(s, "http") == 0)
		*(enum conf_protocol *)((char *)base + k->off) = CONF_PROTO_HTTP;
	else if (strcmp(s, "h2c") == 0)
		*(enum conf_protocol *)((char *)base + k->off) = CONF_PROTO_H2C;
	else
		return (conf_error(ctx, "must be \"wire\", \"http\" or "
		    "\"h2c\""));
	return (0);
}

static int
conf_health(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_deployment	*d = base;

	if (conf_walk(ctx, conf_health_keys, v, base) == -1)
		return (-1);
	if (d->http.health_timeout > d->http.health_interval)
		return (conf_error(ctx, "\"timeout\" must not exceed "
		    "\"interval\""));
	return (0);
}

/* An origin-form path: "/health", no spaces or controls. */
static int
conf_health_path(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_deployment	*d = base;
	const char		*s = json_is_string(v) ? json_string_value(v) : "";
	size_t			 i;

	if (s[0] != '/' || strlen(s) > 200)
		return (conf_error(ctx, "must be a path starting with \"/\" "
		    "(at most 200 characters)"));
	for (i = 0; s[i] != '\0'; i++) {
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
			return (conf_error(ctx, "must not contain spaces or "
			    "control characters"));
	}
	free(d->http.health_path);
	d->http.health_path = conf_strdup(s);
	return (0);
}

static int
conf_inproc(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_deployment	*d = base;

	if (conf_walk(ctx, conf_inproc_keys, v, base) == -1)
		return (-1);
	if (d->inproc.args == NULL &&
	    (d->inproc.args = calloc(1, sizeof(*d->inproc.args))) == NULL)
		abort();
	return (0);
}

/*
 * The module must be there and speak our ABI now: a wrong module is a
 * conf error (start, -t and reload refuse it), not a replica that never
 * gets ready.  Its identity is kept, so a reload after a rebuild loads
 * the new file.
 */
static int
conf_inproc_module(struct conf_ctx *ctx, const struct conf_key *k,
    json_t *v, void *base)
{
	struct conf_deployment	*d = base;
	const char		*s = json_is_string(v) ? json_string_value(v) : "";
	char			 msg[512];

	if (*s == '\0' || strlen(s) > 255)
		return (conf_error(ctx, "must be the path of a module (.so), "
		    "at most 255 characters"));
	if (inproc_mod_probe(s, d->inproc.file, sizeof(d->inproc.file), msg,
	    sizeof(msg)) == -1)
		return (conf_error(ctx, "%s", msg));
	free(d->inproc.module);
	d->inproc.module = conf_strdup(s);
	return (0);
}

static int
conf_inproc_args(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_deployment	*d = base;
	json_t			*e;
	size_t			 i, old;

	if (!json_is_array(v) || json_array_size(v) > 64)
		return (conf_error(ctx, "must be an array of at most 64 "
		    "strings"));
	d->inproc.args = calloc(json_array_size(v) + 1,
	    sizeof(*d->inproc.args));
	if (d->inproc.args == NULL)
		abort();
	json_array_foreach(v, i, e) {
		old = conf_push_index(ctx, i);
		if (!json_is_string(e) || json_string_length(e) > 255)
			return (conf_error(ctx, "must be a string of at most "
			    "255 characters"));
		d->inproc.args[i] = conf_strdup(json_string_value(e));
		d->inproc.nargs++;
		conf_pop(ctx, old);
	}
	return (0);
}

static int
conf_spawn(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	return (conf_walk(ctx, conf_spawn_keys, v, base));
}

static int
conf_command(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_deployment	*d = base;
	json_t			*e;
	size_t			 i, old;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return (conf_error(ctx, "must be a non-empty array of strings"));
	/* NULL-terminated, so a partly filled argv still frees cleanly. */
	d->command = calloc(json_array_size(v) + 1, sizeof *d->command);
	if (d->command == NULL)
		abort();
	json_array_foreach(v, i, e) {
		old = conf_push_index(ctx, i);
		if (!json_is_string(e) ||
		    (i == 0 && json_string_length(e) == 0))
			return (conf_error(ctx, i == 0 ? "must be a non-empty "
			    "string" : "must be a string"));
		d->command[i] = conf_strdup(json_string_value(e));
		conf_pop(ctx, old);
	}
	return (0);
}

static int
conf_endpoints(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_deployment	*d = base;

	return (conf_addr_list(ctx, v, 0, &d->endpoints, &d->nendpoints));
}

/*
 * "name:port": a DNS name whose every address (A and AAAA) is a replica.
 * Only the shape is checked: nothing is looked up before the daemon runs.
 */
static int
conf_dns(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_deployment	*d = base;
	struct in_addr		 in;
	const char		*s, *colon;
	char			 host[NET_HOST_MAX + 1];
	size_t			 hlen;

	s = json_is_string(v) ? json_string_value(v) : "";
	colon = strrchr(s, ':');
	if (strncmp(s, "unix:", 5) == 0 || s[0] == '[' || colon == NULL ||
	    colon == s || memchr(s, ':', (size_t)(colon - s)) != NULL)
		return (conf_error(ctx, "must be \"name:port\" with a DNS "
		    "name"));
	hlen = (size_t)(colon - s);
	if (hlen < sizeof host) {
		memcpy(host, s, hlen);
		host[hlen] = '\0';
		if (inet_pton(AF_INET, host, &in) == 1)
			return (conf_error(ctx, "\"%s\" is an address, not a "
			    "name: use \"endpoints\"", s));
	}
	if (conf_check_addr(ctx, s) == -1)
		return (-1);
	if (strtoul(colon + 1, NULL, 10) == 0)
		return (conf_error(ctx, "bad address \"%s\": port must be "
		    "1..65535", s));
	d->dns = conf_strdup(s);
	return (0);
}

/*
 * An SRV name: "_service._proto.name" (RFC 2782), which carries the ports;
 * letters, digits, '-', '_' and '.', no empty label, at most 253.
 */
static int
conf_dns_srv(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_deployment	*d = base;
	const char		*s, *p;
	size_t			 len;

	s = json_is_string(v) ? json_string_value(v) : "";
	len = strlen(s);
	if (len > 0 && s[len - 1] == '.')
		len--;		/* a rooted name */
	p = strchr(s, '.');
	if (len == 0 || len > 253 || s[0] != '_' || p == NULL ||
	    p[1] != '_' || strchr(p + 1, '.') == NULL ||
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789-_.") < strlen(s) || strstr(s, "..") != NULL ||
	    s[len - 1] == '.')
		return (conf_error(ctx, "must be an SRV name "
		    "\"_service._proto.name\" (ports come from its records)"));
	d->dns = conf_strdup(s);
	return (0);
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

static void
conf_free_strv(char **v, size_t n)
{
	size_t	i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
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

const struct conf_deployment *
conf_find_deployment(const struct conf *conf, const char *name)
{
	unsigned	i;

	for (i = 0; i < conf->ndeployments; i++) {
		if (conf->deployments[i].name != NULL &&
		    strcmp(conf->deployments[i].name, name) == 0)
			return (&conf->deployments[i]);
	}
	return (NULL);
}
