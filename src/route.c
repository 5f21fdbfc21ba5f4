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
