/*
 * admin.h -- the /-/ endpoints: healthz, routes, deployments, metrics.
 *
 * Served by the front door: all of them on the admin listener; healthz,
 * routes and deployments on the public listeners too, metrics
 * (Prometheus text) only on the admin listener.
 *
 * Registration, on the admin listener only:
 *   PUT    /-/deployments/NAME/replicas/ID  {"address": "127.0.0.1:9000",
 *                                            "max_ongoing_requests": 100}
 *   DELETE /-/deployments/NAME/replicas/ID
 * GET /-/deployments/NAME is one name's entry of /-/deployments.
 */
#ifndef INGRESSD_ADMIN_H
#define INGRESSD_ADMIN_H

#include <stddef.h>

struct http1_request;
struct worker;

/* Is this path an admin path ("/-/...", and /metrics on the admin
 * listener)? */
int	admin_is_admin_path(const char *path, size_t len, int admin);
/* Request bodies larger than this are refused (413). */
#define ADMIN_MAX_BODY	(64 * 1024)
/* Answer: returns the status, *body malloc'd (caller frees), *ctype static.
 * reqbody: the request's body (reqlen bytes, maybe none). */
int	admin_handle(struct worker *, const struct http1_request *, int admin,
	    const char *reqbody, size_t reqlen, char **body, size_t *len,
	    const char **ctype);

#endif
