/*
 * admin.h -- the /-/ endpoints: healthz, routes, deployments, metrics.
 *
 * Served by the front door: all of them on the admin listener; healthz,
 * routes and deployments on the public listeners too, metrics
 * (Prometheus text) only on the admin listener.
 */
#ifndef INGRESSD_ADMIN_H
#define INGRESSD_ADMIN_H

#include <stddef.h>

struct http1_request;
struct worker;

/* Is this path an admin path ("/-/...", and /metrics on the admin
 * listener)? */
int	admin_is_admin_path(const char *path, size_t len, int admin);
/* Answer: returns the status, *body malloc'd (caller frees), *ctype static. */
int	admin_handle(struct worker *, const struct http1_request *, int admin,
	    char **body, size_t *len, const char **ctype);

#endif
