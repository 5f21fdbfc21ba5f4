/*
 * h2up_impl.h -- the HTTP/2 upstream edge's private structs and the calls
 * its files share.  Only src/h2up*.c include it.
 *
 * Layers inside the edge, each calling only down:
 *   h2up.c         the edge's upconn ops; a worker's replica (struct h2up):
 *                  its state (connecting, warming, ready, down), the
 *                  current connection and the ones draining after GOAWAY,
 *                  the PING tick, backoff
 *   h2up_conn.c    one connection: the nghttp2 client session over a sock
 *                  (mem_recv/mem_send, one read and one flush per pass),
 *                  SETTINGS and PING, GOAWAY, its streams' table; it tells
 *                  the replica what happened through hooks
 *   h2up_stream.c  one request as an HTTP/2 stream: the request head from
 *                  the stream's REQUEST, the body provider, the carrier,
 *                  the response head, body and trailers to the stream
 */
#ifndef INGRESSD_H2UP_IMPL_H
#define INGRESSD_H2UP_IMPL_H

#include <sys/queue.h>
#include <stdint.h>

#include <event2/event.h>
#include <nghttp2/nghttp2.h>

#include "registry.h"
#include "upconn.h"

struct h2up_conn;
struct h2ups;
struct sock;
struct stream;
struct wctx;

/* How a connection tells its replica (h2up.c fills these in). */
struct h2up_hooks {
	/* Proven: the server's SETTINGS and the answer to our PING. */
	void	(*ready)(struct h2up_conn *);
	/* GOAWAY from the server: no new streams on this connection. */
	void	(*goaway)(struct h2up_conn *);
	/* One of its streams is over (the stream told already). */
	void	(*stream_done)(struct h2up_conn *);
	/* It is closed (no more I/O); lost: the streams it still carried,
	 * failed or retried right after this call. */
	void	(*closed)(struct h2up_conn *, const char *why, int fault,
		    unsigned lost);
};

LIST_HEAD(h2up_conn_list, h2up_conn);

/* One worker's replica: the upconn the core sees. */
struct h2up {
	struct wctx	*w;
	struct reg_endpoint *ep;
	struct ep_stats	*st;
	const struct h2up_hooks *hooks;
	enum reg_estate	 state;
	struct h2up_conn *cur;		/* takes new streams once ready */
	struct h2up_conn_list conns;	/* all, the dying ones included */
	unsigned	 nconns;	/* open (cur and draining) */
	unsigned	 in_flight;	/* streams on all of them */
	LIST_HEAD(, upconn_watch) watchers;
	LIST_HEAD(, upconn_watch) waiters;
	unsigned	 nwatch;
	int		 released;
	struct event	*timer;		/* the next thing due */
	unsigned	 backoff_ms;
	double		 retry_at;	/* DOWN: try again then */
	double		 warm_by;	/* WARMING/CONNECTING: proven by then */
	double		 next_tick;	/* READY: the PING tick */
	double		 warned_at;
	char		 authority[136];	/* for requests without Host */
	LIST_ENTRY(h2up) link;
};

TAILQ_HEAD(h2ups_q, h2ups);

struct h2up_conn {
	struct h2up	*pool;
	struct sock	*sock;
	nghttp2_session	*ss;
	struct event	*resume;	/* deferred: credit, flush, free */
	int		 connected;
	int		 settings_rx;	/* the server's SETTINGS arrived */
	int		 proven;	/* SETTINGS and PONG: ready told */
	int		 ping_out;	/* a PING is unanswered */
	int		 misses;	/* ticks that ended with it so */
	int		 rx;		/* something arrived since the tick */
	int		 goaway;	/* the server's GOAWAY came */
	int		 dead;		/* closed: freed from resume */
	unsigned	 nstreams;
	LIST_HEAD(h2ups_list, h2ups) streams;
	struct h2ups_list lost;		/* while closing */
	struct h2ups_q	 credit;	/* request bytes to credit back */
	uint64_t	 out_added;	/* bytes ever queued on the socket */
	LIST_ENTRY(h2up_conn) link;
};

/* Run the connection's deferred work (credit, flush, free) this pass. */
static inline void
h2up_schedule(struct h2up_conn *c)
{
	event_active(c->resume, 0, 0);
}

/* h2up_conn.c */
struct h2up_conn *h2up_conn_open(struct h2up *);
/* Close now: its streams are retried when the server cannot have seen
 * them, else failed with 502.  Safe inside nghttp2 callbacks. */
void		 h2up_conn_close(struct h2up_conn *, const char *why, int fault);
void		 h2up_conn_ping(struct h2up_conn *);
/* The server's SETTINGS_MAX_CONCURRENT_STREAMS. */
uint32_t	 h2up_conn_max_streams(const struct h2up_conn *);
void		 h2up_conn_free(struct h2up_conn *);

/* h2up_stream.c */
/* s on c as a new stream: 0 taken, 1 answered by us (431), -1 not taken
 * (s untouched). */
int		 h2ups_submit(struct h2up_conn *, struct stream *);
/* A response field; an nghttp2 return code. */
int		 h2ups_header(struct h2ups *, const uint8_t *, size_t,
		    const uint8_t *, size_t);
/* A HEADERS frame is in (a head, or trailers); end: END_STREAM. */
void		 h2ups_headers_done(struct h2ups *, int end);
void		 h2ups_data(struct h2ups *, const uint8_t *, size_t);
void		 h2ups_data_end(struct h2ups *);
/* Its HEADERS left nghttp2 for the socket's output. */
void		 h2ups_head_sent(struct h2ups *);
/* nghttp2 closed it (error: the RST code, or 0); freed. */
void		 h2ups_closed(struct h2ups *, uint32_t error);
/* After a send pass: request bytes nghttp2 took go back as credit. */
void		 h2ups_credit_all(struct h2up_conn *);
/* Closing: every stream out of nghttp2's hands onto c->lost; then each
 * retried or failed (written: bytes that left the socket) and freed. */
void		 h2ups_unlink_all(struct h2up_conn *);
void		 h2ups_lose_all(struct h2up_conn *, uint64_t written,
		    const char *why);

#endif
