/*
 * upstream_impl.h -- the wire edge's private struct and the calls its
 * three files share.  Only src/upstream*.c include it.
 *
 * Layers inside the edge, each calling only down:
 *   upstream.c       the edge's ops (upconn.h), the pool, attach, carrier
 *   upstream_read.c  frames from the replica, dispatched
 *   upstream_conn.c  the connection state machine and the stream table
 */
#ifndef INGRESSD_UPSTREAM_IMPL_H
#define INGRESSD_UPSTREAM_IMPL_H

#include <sys/queue.h>
#include <stdint.h>

#include <event2/util.h>

#include "idtab.h"
#include "registry.h"
#include "upconn.h"

struct sock_cbs;
struct stream;
struct wctx;

#define UPSTREAM_IO_CHUNK	(256 * 1024)
#define UPSTREAM_LAST_ID	0x7fff0000u	/* then drain and reconnect */
#define BACKOFF_MIN_MS		20
#define BACKOFF_MAX_MS		2000
#define UPSTREAM_WARN_EVERY	10.0	/* s between "cannot connect" lines */

/* Published as the registry's enum reg_estate, so the values are its. */
enum upstream_state {
	UPSTREAM_IDLE = REG_E_IDLE,
	UPSTREAM_CONNECTING = REG_E_CONNECTING,
	UPSTREAM_WARMING = REG_E_WARMING,
	UPSTREAM_READY = REG_E_READY,
	UPSTREAM_DOWN = REG_E_DOWN,
};

struct upstream {
	struct wctx	*w;		/* the worker's context */
	struct reg_endpoint *ep;
	struct ep_stats	*st;		/* this worker's slot in ep */
	enum upstream_state state;
	struct sock	*sock;
	const struct sock_cbs *cbs;	/* upstream.c's, for each new socket */
	struct event	*timer;		/* connect, ping or backoff */
	unsigned	 backoff_ms;
	int		 hello_seen;
	uint16_t	 version;	/* agreed in HELLO: min(ours, its) */
	int		 goaway;	/* no new streams on this connection */
	int		 released;	/* no handle watches it: stay closed */
	uint64_t	 ping_seq;
	int		 ping_out;	/* PINGs sent and not answered */
	uint8_t		 ping_opaque[8];
	int		 rx;		/* a frame arrived since the last tick */

	struct idtab	 streams;	/* id -> struct stream */
	uint32_t	 next_id;
	unsigned	 in_flight;
	unsigned	 cap;		/* min(conf, HELLO) */

	LIST_HEAD(, upconn_watch) watchers;	/* handles using it */
	LIST_HEAD(, upconn_watch) waiters;	/* ... with requests queued */
	unsigned	 nwatch;			/* on both lists */
	struct evbuffer	*scratch;	/* DATA payloads on their way out */
	uint64_t	 out_added;	/* bytes ever queued on this connection */
	uint64_t	 written_at_close; /* of those, in the socket at a linger */
	double		 warned_at;	/* last failure logged at warn */
	unsigned	 warn_quiet;	/* failures since, logged at debug */
	LIST_ENTRY(upstream) link;	/* the worker's pool */
};


/* upstream_conn.c */
void		 upstream_tell_list(struct upstream *, struct upconn_watch *);
void		 upstream_tell(struct upstream *);
void		 upstream_set_state(struct upstream *, enum upstream_state);
void		 upstream_arm(struct upstream *, double seconds);
void		 upstream_write(struct upstream *, const void *, size_t);
void		 upstream_close(struct upstream *);
void		 upstream_goodbye(struct upstream *, const char *text);
void		 upstream_connect(struct upstream *);
void		 upstream_fail(struct upstream *, const char *why);
void		 upstream_connected_cb(void *);
void		 upstream_error_cb(void *, int eof);
void		 upstream_timer_cb(evutil_socket_t, short, void *);
struct stream	*upstream_lookup(struct upstream *, uint32_t id);
void		 upstream_count_in_flight(struct upstream *);
void		 upstream_detach(struct upstream *, uint32_t id);
void		 upstream_protocol_error(struct upstream *, const char *what,
		    int rc);
void		 upstream_park(struct upstream *);

/* upstream_read.c */
void		 upstream_read_cb(void *);

#endif
