/*
 * wctx.h -- what a worker's modules share: a plain per-worker context.
 *
 * The worker (worker.c) owns the thread and this struct, fills it in at
 * start-up, updates conf and routes when a reload switches the snapshot,
 * and passes it down to front, handle, stream and upstream.  It has no
 * functions: it is data the thread owns, so modules below the worker read
 * their context here instead of calling back up into worker.c.  Every
 * field is touched only by the worker's own thread.
 */
#ifndef INGRESSD_WCTX_H
#define INGRESSD_WCTX_H

#include <sys/queue.h>
#include <stdint.h>

struct accesslog_slot;
struct conf;
struct event_base;
struct front;
struct h2conn;
struct handle_table;
struct metrics_slot;
struct registry;
struct route_table;
struct upstream;
struct worker;

#define WCTX_MAX_EDGES	8	/* upstream edges (upconn.h) */

struct wctx {
	unsigned	 id;		/* worker number, 0..workers-1 */
	struct event_base *base;
	const struct conf *conf;	/* the current snapshot's */
	const struct route_table *routes; /* the current snapshot's */
	struct registry	*reg;
	struct handle_table *handles;
	LIST_HEAD(wctx_upstreams, upstream) upstreams; /* upstream.c's pool */
	/* Any other upstream edge's per-worker pool, at the slot
	 * upconn_register() gave it; the edge alone knows the type. */
	void		*edge_pool[WCTX_MAX_EDGES];
	LIST_HEAD(wctx_fronts, front) fronts;	/* front.c's connections */
	LIST_HEAD(wctx_h2conns, h2conn) h2conns; /* h2.c's connections */
	uint32_t	 rng;		/* balance_pick's xorshift state */
	uint32_t	 rid_prefix;	/* request ids: random per worker, */
	uint64_t	 rid_counter;	/* then a counter */
	struct metrics_slot *metrics;	/* this worker's, or NULL */
	struct accesslog_slot *alog;	/* this worker's, or NULL */
	struct worker	*worker;	/* the thread that owns this context */
};

#endif
