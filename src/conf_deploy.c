/*
 * conf_deploy.c -- "deployments" (sources, protocol, health, upstream TLS,
 * inproc) and "routes", which name them.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "conf_impl.h"
#include "inproc_mod.h"
#include "net.h"
#include "tchar.h"

static int	conf_route_host(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_route_prefix(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_route_deployment(struct conf_ctx *,
		    const struct conf_key *, json_t *, void *);
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
static int	conf_endpoint_addr(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);

/* An endpoints entry in its object form, as the walker fills it. */
struct conf_endpoint {
	char		*address;
	struct conf_share share;
};

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

#define E(f)	offsetof(struct conf_endpoint, f)
static const struct conf_key conf_endpoint_keys[] = {
	{ "address", conf_endpoint_addr, 0, 0, 0, CONF_REQUIRED },
	{ "weight", conf_uint, E(share.weight), 1, 65535, 0 },
	{ "priority", conf_uint, E(share.priority), 0, 65535, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef E

#define U(f)	offsetof(struct conf_upstream_tls, f)
static const struct conf_key conf_upstream_tls_keys[] = {
	{ "ca", conf_path, U(ca), 0, 0, CONF_REQUIRED },
	{ "cert", conf_path, U(cert), 0, 0, 0 },
	{ "key", conf_path, U(key), 0, 0, 0 },
	{ "server_name", conf_string, U(server_name), 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef U

int
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

void
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
int
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

/*
 * "tls" toward HTTP and HTTP/2 servers: only where the registry makes a
 * client context, TCP addresses of "endpoints" or "spawn" (never silently
 * in cleartext).  "h2" is HTTP/2 over TLS and "h2c" HTTP/2 in cleartext
 * (RFC 9113's names), so one needs "tls" and the other refuses it.
 */
static int
conf_deployment_tls(struct conf_ctx *ctx, const struct conf_deployment *d)
{
	unsigned i;

	if (d->protocol == CONF_PROTO_H2 && d->tls == NULL)
		return (conf_error(ctx, "\"protocol\": \"h2\" is HTTP/2 over "
		    "TLS and needs \"tls\" (\"h2c\" is HTTP/2 in cleartext)"));
	if (d->protocol == CONF_PROTO_H2C && d->tls != NULL)
		return (conf_error(ctx, "\"protocol\": \"h2c\" is HTTP/2 in "
		    "cleartext: with \"tls\" write \"protocol\": \"h2\""));
	if (d->tls == NULL || d->protocol == CONF_PROTO_WIRE ||
	    d->source == CONF_INPROC)
		return (0);
	if (d->source == CONF_DNS || d->source == CONF_DNS_SRV)
		return (conf_error(ctx, "\"tls\" toward HTTP servers needs "
		    "\"endpoints\" or \"spawn\" (replicas found by DNS are "
		    "not reached over TLS yet)"));
	for (i = 0; i < d->nendpoints; i++)
		if (strncmp(d->endpoints[i], "unix:", 5) == 0)
			return (conf_error(ctx, "\"tls\": endpoint \"%s\" is a "
			    "unix socket (TLS is for TCP endpoints)",
			    d->endpoints[i]));
	return (0);
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
	if (conf_deployment_tls(ctx, d) == -1)
		return (-1);
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

int
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

/* "wire" (the default), "http", "h2c" or "h2". */
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
	else if (strcmp(s, "h2") == 0)
		*(enum conf_protocol *)((char *)base + k->off) = CONF_PROTO_H2;
	else
		return (conf_error(ctx, "must be \"wire\", \"http\", \"h2c\" "
		    "or \"h2\""));
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
conf_endpoint_addr(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_endpoint	*e = base;

	if (!json_is_string(v))
		return (conf_error(ctx, "must be an address string"));
	if (conf_check_addr(ctx, json_string_value(v)) == -1)
		return (-1);
	e->address = conf_strdup(json_string_value(v));
	return (0);
}

/*
 * A non-empty array of entries, each an address string (weight 1,
 * priority 0) or {"address", "weight", "priority"}.  The arrays are
 * counted as filled entry by entry, so conf_free frees what an error
 * leaves.
 */
static int
conf_endpoints(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_deployment	*d = base;
	struct conf_endpoint	 e;
	json_t			*x;
	size_t			 i, old;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return (conf_error(ctx, "must be a non-empty array of address "
		    "strings or {\"address\", \"weight\", \"priority\"} "
		    "objects"));
	d->endpoints = calloc(json_array_size(v), sizeof *d->endpoints);
	d->shares = calloc(json_array_size(v), sizeof *d->shares);
	if (d->endpoints == NULL || d->shares == NULL)
		abort();
	json_array_foreach(v, i, x) {
		old = conf_push_index(ctx, i);
		memset(&e, 0, sizeof e);
		e.share.weight = 1;
		if (json_is_object(x)) {
			if (conf_walk(ctx, conf_endpoint_keys, x, &e) == -1) {
				free(e.address);
				return (-1);
			}
		} else if (!json_is_string(x))
			return (conf_error(ctx, "must be an address string or "
			    "an object {\"address\", \"weight\", "
			    "\"priority\"}"));
		else if (conf_endpoint_addr(ctx, NULL, x, &e) == -1)
			return (-1);
		d->endpoints[i] = e.address;
		d->shares[i] = e.share;
		d->nendpoints++;
		conf_pop(ctx, old);
	}
	return (0);
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
	free(d->dns);	/* dns and dns_srv share it (one-of: later) */
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
	free(d->dns);	/* dns and dns_srv share it (one-of: later) */
	d->dns = conf_strdup(s);
	return (0);
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
