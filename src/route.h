/*
 * route.h -- pick a route for a request: host, then longest path prefix.
 *
 * Pure: built from a conf snapshot, no I/O.  A prefix matches on a path
 * segment boundary ("/echo" matches "/echo", "/echo/x" and "/echo?q", not
 * "/echoes"); "/" matches everything.  A route with a host matches only
 * that host (case-insensitive, port ignored) and beats a host-less route
 * of the same prefix length.
 */
#ifndef INGRESSD_ROUTE_H
#define INGRESSD_ROUTE_H

#include <stddef.h>

struct conf;
struct conf_route;
struct route_table;

struct route_table *route_table_new(const struct conf *);
void		 route_table_free(struct route_table *);
/* path: the request target's path (no query); NULL when nothing matches. */
const struct conf_route *route_match(const struct route_table *,
		    const char *host, size_t hostlen,
		    const char *path, size_t pathlen);

#endif
