/*
 * route.c -- host + longest path prefix.
 *
 * The table is the conf's routes sorted so that the first match is the
 * right one: longer prefixes first, then routes with a host before
 * host-less ones, then conf order.  A linear scan with a length check and
 * one memcmp per candidate is fast enough for hundreds of routes.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "http1.h"
#include "route.h"

struct route_entry {
	const struct conf_route	*route;
	size_t			 hostlen;	/* 0: any host */
	unsigned		 order;		/* position in the conf */
};

struct route_table {
	struct route_entry	*entries;
	size_t			 n;
};

static int
route_cmp(const void *a, const void *b)
{
	const struct route_entry	*x = a, *y = b;

	if (x->route->prefix_len != y->route->prefix_len)
		return (x->route->prefix_len > y->route->prefix_len ? -1 : 1);
	if ((x->hostlen == 0) != (y->hostlen == 0))
		return (x->hostlen != 0 ? -1 : 1);
	return (x->order < y->order ? -1 : x->order > y->order);
}

struct route_table *
route_table_new(const struct conf *conf)
{
	struct route_table	*rt;
	struct route_entry	*e;
	unsigned		 i;

	if ((rt = calloc(1, sizeof *rt)) == NULL)
		return (NULL);
	if (conf->nroutes == 0)
		return (rt);
	rt->entries = calloc(conf->nroutes, sizeof *rt->entries);
	if (rt->entries == NULL) {
		free(rt);
		return (NULL);
	}
	for (i = 0; i < conf->nroutes; i++) {
		e = &rt->entries[i];
		e->route = &conf->routes[i];
		e->hostlen = e->route->host != NULL ? strlen(e->route->host) : 0;
		e->order = i;
	}
	rt->n = conf->nroutes;
	qsort(rt->entries, rt->n, sizeof *rt->entries, route_cmp);
	return (rt);
}

void
route_table_free(struct route_table *rt)
{
	if (rt == NULL)
		return;
	free(rt->entries);
	free(rt);
}

/* The length of a Host value without its ":port" ("[v6]:port" too). */
static size_t
route_host_len(const char *host, size_t len)
{
	const char	*end;

	if (len > 0 && host[0] == '[') {
		end = memchr(host, ']', len);
		return (end != NULL ? (size_t)(end - host) + 1 : len);
	}
	end = memchr(host, ':', len);
	return (end != NULL ? (size_t)(end - host) : len);
}

/* Prefix on a segment boundary: "/echo" takes "/echo/x", not "/echoes". */
static int
route_prefix_ok(const struct conf_route *r, const char *path, size_t len)
{
	size_t	plen = r->prefix_len;

	if (len < plen || memcmp(path, r->prefix, plen) != 0)
		return (0);
	return (len == plen || plen == 0 || r->prefix[plen - 1] == '/' ||
	    path[plen] == '/' || path[plen] == '?');
}

const struct conf_route *
route_match(const struct route_table *rt, const char *host, size_t hostlen,
    const char *path, size_t pathlen)
{
	const struct route_entry	*e;
	size_t				 i;

	hostlen = host != NULL ? route_host_len(host, hostlen) : 0;
	for (i = 0; i < rt->n; i++) {
		e = &rt->entries[i];
		if (e->hostlen != 0 && (e->hostlen != hostlen ||
		    strncasecmp(e->route->host, host, hostlen) != 0))
			continue;
		if (route_prefix_ok(e->route, path, pathlen))
			return (e->route);
	}
	return (NULL);
}

int
route_name_ok(const char *s, size_t len)
{
	size_t	i;

	if (len == 0 || len > ROUTE_NAME_MAX)
		return (0);
	for (i = 0; i < len; i++) {
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return (0);
	}
	return (1);
}

/* The segment after the prefix names the deployment; the rest goes on. */
static int
route_pick_path(const struct conf_route *rt, const struct http1_request *r,
    struct route_pick *pk)
{
	const char	*p = r->target + rt->prefix_len;
	const char	*end = r->target + r->path_len;

	if (r->path_len < rt->prefix_len)
		return (-1);
	/* Prefix "/models" before "/models/foo"; "/models/" is at "foo". */
	if (rt->prefix[rt->prefix_len - 1] != '/' && p < end && *p == '/')
		p++;
	pk->name = p;
	while (p < end && *p != '/')
		p++;
	pk->name_len = (size_t)(p - pk->name);
	pk->rest = p;
	pk->rest_len = r->target_len - (size_t)(p - r->target);
	pk->slash = pk->rest_len == 0 || *p != '/';
	return (route_name_ok(pk->name, pk->name_len) ? 0 : -1);
}

static int
route_pick_header(const struct conf_route *rt, const struct http1_request *r,
    struct route_pick *pk)
{
	const struct http1_field	*f;
	unsigned			 i;

	for (i = 0; i < r->nfields; i++) {
		f = &r->fields[i];
		if (f->name_len != rt->from_header_len ||
		    strncasecmp(f->name, rt->from_header, f->name_len) != 0)
			continue;
		pk->name = f->value;
		pk->name_len = f->value_len;
		return (route_name_ok(f->value, f->value_len) ? 0 : -1);
	}
	return (-1);
}

int
route_pick(const struct conf_route *rt, const struct http1_request *r,
    struct route_pick *pk)
{
	memset(pk, 0, sizeof *pk);
	switch (rt->from) {
	case CONF_FROM_PATH:
		return (route_pick_path(rt, r, pk));
	case CONF_FROM_HEADER:
		return (route_pick_header(rt, r, pk));
	default:
		pk->name = rt->deployment;
		pk->name_len = strlen(rt->deployment);
		return (0);
	}
}

size_t
route_strip(const struct conf_route *rt, const char *target, size_t len,
    char *out)
{
	const char *rest = target + rt->prefix_len;
	size_t restlen = len - rt->prefix_len;

	if (rt->prefix[rt->prefix_len - 1] == '/') {
		rest--;		/* keep the slash the prefix ended with */
		restlen++;
	}
	if (restlen == 0 || rest[0] != '/') {
		out[0] = '/';
		memcpy(out + 1, rest, restlen);
		return restlen + 1;
	}
	memcpy(out, rest, restlen);
	return restlen;
}
