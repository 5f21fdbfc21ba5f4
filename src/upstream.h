/*
 * upstream.h -- one worker's connection to one replica.
 *
 * A connection is a state machine (memcached's proxy backends are the
 * model): IDLE -> CONNECTING -> WARMING (our HELLO and a PING sent) ->
 * READY (their HELLO and the PONG arrived) -> DOWN (backoff, then
 * CONNECTING again).  Only READY connections carry requests.  Each worker
 * keeps one connection per replica address, shared by every handle (name)
 * that resolves to it; many streams are multiplexed on it.
 *
 * Handles watch the upstreams they use and are told when one becomes ready,
 * goes down, or frees a slot after being full.
 */
#ifndef INGRESSD_UPSTREAM_H
#define INGRESSD_UPSTREAM_H

#include <sys/queue.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct handle;
struct reg_endpoint;
struct stream;
struct wctx;
struct upstream;

/*
 * A handle's watch on an upstream: a list node the handle owns and must
 * not move while linked.  Lists, not an array of handles, so watching and
 * unwatching are O(1) however many names share the replica.  Handles with
 * requests queued are on a second list, the only one told that a full
 * connection freed a slot: a completed request costs nothing per idle name.
 * event(h, up) is how the upstream tells: it became ready, went down, or
 * freed a slot.  It may unwatch (this or another watch) and attach
 * streams, but must not free up.
 */
struct upstream_watch {
	struct handle	*h;
	void		(*event)(struct handle *, struct upstream *);
	LIST_ENTRY(upstream_watch) link;
	int		 waiting;	/* on the waiters' list */
};

/* Find this worker's connection to ep, creating (and connecting) it. */
struct upstream	*upstream_get(struct wctx *, struct reg_endpoint *);
void		 upstream_pool_free(struct wctx *);
/* w->h and w->event set by the caller; at most one watch per handle and
 * upstream. */
void		 upstream_watch(struct upstream *, struct upstream_watch *);
void		 upstream_unwatch(struct upstream *, struct upstream_watch *);
/* The handle has requests queued (waiting 1) or no longer (0). */
void		 upstream_wait(struct upstream *, struct upstream_watch *,
		    int waiting);
/* If no handle watches it any more: GOAWAY, close once its streams are
 * done, and stop reconnecting; upstream_get() revives it. */
void		 upstream_release(struct upstream *);

int		 upstream_is_ready(const struct upstream *);
unsigned	 upstream_in_flight(const struct upstream *);
unsigned	 upstream_capacity(const struct upstream *);
const char	*upstream_id(const struct upstream *);

/* Give the stream an id on this connection and send its REQUEST (and any
 * body already buffered); the stream then sends body (DATA, END), credit
 * (WINDOW) and CANCEL through the carrier it is handed (stream.h).  0, or
 * -1 if the connection cannot take it. */
int		 upstream_attach(struct upstream *, struct stream *);

#endif
