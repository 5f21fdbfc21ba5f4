/*
 * upconn.c -- the table of upstream edges by protocol name (upconn.h).
 *
 * Written only by the main thread before the workers start, read-only
 * afterwards, so workers read it without a lock.
 */
#include <string.h>

#include "upconn.h"

static const struct upconn_ops *upconn_edges[UPCONN_MAX_EDGES];
static unsigned upconn_nedges;

int
upconn_register(const struct upconn_ops *ops)
{
	unsigned i;

	for (i = 0; i < upconn_nedges; i++) {
		if (upconn_edges[i] == ops)
			return (int)i;	/* registered already: harmless */
		if (strcmp(upconn_edges[i]->protocol, ops->protocol) == 0)
			return -1;
	}
	if (upconn_nedges == UPCONN_MAX_EDGES)
		return -1;
	upconn_edges[upconn_nedges] = ops;
	return (int)upconn_nedges++;
}

const struct upconn_ops *
upconn_find(const char *protocol)
{
	unsigned i;

	if (protocol == NULL || *protocol == '\0')
		protocol = "wire";
	for (i = 0; i < upconn_nedges; i++) {
		if (strcmp(upconn_edges[i]->protocol, protocol) == 0 ||
		    (upconn_edges[i]->alias != NULL &&
		    strcmp(upconn_edges[i]->alias, protocol) == 0))
			return upconn_edges[i];
	}
	return NULL;
}

void
upconn_pool_free_all(struct wctx *w)
{
	unsigned i;

	for (i = 0; i < upconn_nedges; i++)
		upconn_edges[i]->pool_free(w);
}
