/*
 * route.h -- pick a route for a request: host, then longest path prefix.
 *
 * Pure: built from a conf snapshot, no I/O.  A prefix matches on a path
 * segment boundary ("/echo" matches "/echo", "/echo/x" and "/echo?q", not
 * "/echoes"); "/" matches everything.  A route with a host matches only
 * that host (case-insensitive, port ignored) and beats a host-less route
 * of the same prefix length.
 *
 * A route may name its deployment from the request instead of the conf
 * ("deployment_from"): route_pick() says which name, and what target to
 * forward, for a route route_match() chose.
 */
#ifndef INGRESSD_ROUTE_H
#define INGRESSD_ROUTE_H

#include <stddef.h>

struct conf;
struct conf_route;
struct http1_request;
struct route_table;

/* A deployment name must be this and 1..ROUTE_NAME_MAX characters of
 * A-Z a-z 0-9 . _ - (as in the conf). */
#define ROUTE_NAME_MAX	255

/* What a request names: spans into the request, not NUL-terminated. */
struct route_pick {
	const char	*name;
	size_t		 name_len;
	/* Path routes: the target to forward is "/" when slash is set, then
	 * rest (which is empty or starts with '?').  Else rest is NULL: the
	 * target is the request's (strip_prefix applies as usual). */
	int		 slash;
	const char	*rest;
	size_t		 rest_len;
};

struct route_table *route_table_new(const struct conf *);
void		 route_table_free(struct route_table *);
/* path: the request target's path (no query); NULL when nothing matches. */
const struct conf_route *route_match(const struct route_table *,
		    const char *host, size_t hostlen,
		    const char *path, size_t pathlen);
/*
 * For a route with deployment_from: the name the request gives (the path
 * segment after the prefix, or the header's value).  0, or -1 when the
 * request names none or a name that cannot be one.  "/models/foo/v1/x?q"
 * under "/models/" names foo and forwards "/v1/x?q"; "/models/foo?q"
 * forwards "/?q".
 */
int		 route_pick(const struct conf_route *,
		    const struct http1_request *, struct route_pick *);
/*
 * The target a strip_prefix route forwards: target without the route's
 * prefix (keeping the slash it ended with), always starting with '/'.
 * out holds at least len + 2 bytes; returns its length.
 */
size_t		 route_strip(const struct conf_route *, const char *target,
		    size_t len, char *out);
/* Is s (len bytes) a valid deployment name? */
int		 route_name_ok(const char *s, size_t len);

#endif
