/*
 * upconn.h -- the upstream interface: how the core (handle.c) reaches
 * any upstream edge's connections without naming an edge.
 *
 * An upstream edge (upstream.c: the wire protocol; hup.c: HTTP/1.1; an
 * in-process edge ...) fills in a struct upconn_ops and registers it under
 * a protocol name ("wire", "http") once, from the main thread, before any
 * worker starts (daemon.c calls each edge's *_register()).  A handle
 * looks the edge up by its endpoint's protocol (reg_endpoint.protocol,
 * "" meaning "wire") and keeps the ops next to the connection it got.
 *
 * A connection (struct upconn) is opaque: one edge's per-worker object
 * for one endpoint, shared by every handle whose names resolve to it.
 * It is a state machine of the edge's own; the core sees only whether it
 * is ready, how many streams it carries and how many it may.
 *
 * Contract:
 * - Threads: every op runs on the worker thread that owns the connection
 *   (the wctx passed to get); nothing is shared between workers.
 * - get(w, ep): this worker's connection to ep, created (and connecting)
 *   on first use, revived if released.  NULL only when out of memory.
 *   The edge owns and frees it (pool_free at worker exit); the core never
 *   frees a connection, it releases it.
 * - watch/unwatch: link a watch the handle owns (and must not move while
 *   linked); at most one watch per handle and connection.  wait(c, w, 1)
 *   moves it to the waiters (the handle has requests queued): only those
 *   hear that a full connection freed a slot.
 * - event(h, c), the watch's callback: the connection became ready, went
 *   down, or freed a slot.  It may run from the edge's read loop or timer,
 *   or from inside attach/cancel of another stream on the same connection
 *   (a slot freed), never from inside get/watch/unwatch/wait/release.
 *   The handle may unwatch (this or another watch) and attach streams
 *   from it, but must not release or free the connection there.
 * - release(c): no handle watches it any more; the edge may close it once
 *   its streams are done (it ignores a release while watched).
 * - is_ready/in_flight/capacity: pure reads; balance picks on them.  A
 *   connection that is ready with in_flight < capacity must accept an
 *   attach.
 * - attach(c, s): 0 when the stream was taken (the edge then calls
 *   stream_attached() with its carrier (stream.h), and sends what the
 *   stream buffered; or it answered the stream itself, e.g. 431, and the
 *   stream is done), -1 when the connection cannot take it now, and the
 *   stream is untouched (the handle keeps it queued).  attach never calls
 *   the handle's dispatch back re-entrantly except through event().
 * - Streams: the edge never frees a stream (the front owns it), removes
 *   it from its own tables before any terminal stream_on_end/on_fail, and
 *   hands a stream it could not deliver back with stream_retry() only if
 *   the replica can have seen none of it.
 * - Credit: the edge honours the carrier's window semantics: request body
 *   comes only up to the credit it gave (stream_on_window), response body
 *   goes to the stream only up to the credit the stream gave back
 *   (carrier window); an edge without flow control of its own (HTTP/1.1)
 *   maps credit to reading and writing its socket.
 */
#ifndef INGRESSD_UPCONN_H
#define INGRESSD_UPCONN_H

#include <sys/queue.h>

#include "wctx.h"

struct handle;
struct reg_endpoint;
struct stream;
struct upconn;
struct wctx;

/* A handle's watch on a connection: a list node the handle owns.  Lists,
 * not arrays, so watching and unwatching are O(1) however many names
 * share the replica. */
struct upconn_watch {
	struct handle	*h;
	void		(*event)(struct handle *, struct upconn *);
	LIST_ENTRY(upconn_watch) link;
	int		 waiting;	/* on the waiters' list */
};

struct upconn_ops {
	const char	*protocol;	/* "wire", "http", ... */
	const char	*alias;		/* another name it answers to, or NULL
					 * ("h2": h2c's edge, over TLS) */
	struct upconn	*(*get)(struct wctx *, struct reg_endpoint *);
	void		(*watch)(struct upconn *, struct upconn_watch *);
	void		(*unwatch)(struct upconn *, struct upconn_watch *);
	void		(*wait)(struct upconn *, struct upconn_watch *,
			    int waiting);
	void		(*release)(struct upconn *);
	int		(*is_ready)(const struct upconn *);
	unsigned	(*in_flight)(const struct upconn *);
	unsigned	(*capacity)(const struct upconn *);
	int		(*attach)(struct upconn *, struct stream *);
	/* The worker is going away: close and free its connections. */
	void		(*pool_free)(struct wctx *);
};

#define UPCONN_MAX_EDGES	WCTX_MAX_EDGES

/* Main thread, before workers start.  The edge's slot (0..), where its
 * per-worker pool may live (wctx.edge_pool[slot]), or -1 (table full, or
 * the name is taken by another edge). */
int		 upconn_register(const struct upconn_ops *);
/* The edge for a protocol name; NULL or "" is "wire".  NULL: none. */
const struct upconn_ops *upconn_find(const char *protocol);
/* Each registered edge's pool_free, for a worker that goes away. */
void		 upconn_pool_free_all(struct wctx *);

#endif
