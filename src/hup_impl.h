/*
 * hup_impl.h -- the HTTP upstream edge's private structs and the calls
 * its files share.  Only src/hup*.c include it.
 *
 * Layers inside the edge, each calling only down:
 *   hup.c        the edge's upconn ops; a worker's pool per endpoint: its
 *                state (connecting, warming, ready, down), active and
 *                passive health, idle expiry, prewarm
 *   hup_conn.c   one keep-alive connection: connect, one exchange at a
 *                time (a request with its stream, or a health check), the
 *                carrier, reading with flow control; it tells the pool
 *                what happened through the hooks the pool set
 *   hup_parse.c, hup_req.c   pure: the response parser, request heads
 */
#ifndef INGRESSD_HUP_IMPL_H
#define INGRESSD_HUP_IMPL_H

#include <sys/queue.h>
#include <stdint.h>

#include "registry.h"
#include "upconn.h"

struct event;
struct evbuffer;
struct hup_conn;
struct hup_parse;
struct sock;
struct stream;
struct wctx;

/* What a connection is doing. */
enum hup_job {
	HJ_NONE,		/* idle (or connecting ahead of need) */
	HJ_REQUEST,		/* a stream's request and response */
	HJ_PROBE,		/* an active health check */
};

/* How a connection tells its pool (hup.c fills these in). */
struct hup_hooks {
	/* Connected (the TCP handshake is done). */
	void	(*connected)(struct hup_conn *);
	/* The exchange ended cleanly; status: the response's.  keep: the
	 * connection may carry another (else it is closed already). */
	void	(*finished)(struct hup_conn *, enum hup_job, int status,
		    int keep);
	/* A response head arrived (passive health counts 5xx runs). */
	void	(*status)(struct hup_conn *, int status);
	/* The connection failed and is closed.  replica_fault: the
	 * replica's doing (refused, reset, a bad response), not ours. */
	void	(*failed)(struct hup_conn *, enum hup_job, const char *why,
		    int replica_fault);
};

TAILQ_HEAD(hup_conn_q, hup_conn);

/* One worker's pool of connections to one endpoint (the upconn). */
struct hup {
	struct wctx	*w;
	struct reg_endpoint *ep;
	struct ep_stats	*st;
	const struct hup_hooks *hooks;
	enum reg_estate	 state;
	struct hup_conn_q idle;		/* most recently used first */
	struct hup_conn_q busy;		/* connecting, or with a job */
	struct hup_conn_q dead;		/* closed, freed by reap */
	unsigned	 nconns;	/* idle + busy */
	unsigned	 nidle;
	unsigned	 nconnecting;	/* busy ones not connected yet */
	unsigned	 in_flight;	/* HJ_REQUEST */
	LIST_HEAD(, upconn_watch) watchers;
	LIST_HEAD(, upconn_watch) waiters;
	unsigned	 nwatch;
	int		 released;
	struct event	*timer;		/* the next thing due */
	struct event	*reap;		/* frees dead connections */
	unsigned	 backoff_ms;
	double		 retry_at;	/* DOWN: try again then */
	double		 next_probe;	/* the next health check */
	struct hup_conn	*probe;		/* the check in flight */
	double		 probe_deadline;
	int		 misses;	/* checks failed in a row */
	unsigned	 run_5xx;	/* 5xx responses in a row */
	uint32_t	 next_id;
	char		 host[136];	/* Host: for checks, HTTP/1.0 clients */
	double		 warned_at;
	unsigned	 warn_quiet;
	LIST_ENTRY(hup)	 link;
};

struct hup_conn {
	struct hup	*pool;
	struct sock	*sock;
	struct hup_parse *parse;
	enum hup_job	 job;
	struct stream	*s;		/* HJ_REQUEST */
	uint32_t	 id;
	int		 connected;
	int		 chunked;	/* the request body goes chunked */
	int		 responded;	/* the head went to the stream */
	int		 status;
	int		 dead;
	int		 on_idle;	/* on the pool's idle list, else busy */
	int		 in_read;	/* inside its read callback */
	int		 idempotent;	/* the request's method is (RFC 9110) */
	unsigned	 exchanges;	/* finished on it: reused when > 0 */
	double		 connect_by;	/* timeouts.connect, until connected */
	uint64_t	 credit;	/* response bytes the stream takes */
	uint64_t	 owed;		/* request body not yet credited back */
	uint64_t	 out_added;	/* bytes ever queued on the socket */
	uint64_t	 req_at;	/* where the current request starts */
	double		 idle_since;
	struct evbuffer	*body;		/* parsed body on its way */
	const char	*seg;		/* the input segment being parsed */
	size_t		 seg_len;
	size_t		 seg_done;	/* of it, moved or drained already */
	TAILQ_ENTRY(hup_conn) link;
};

/* hup_conn.c */
struct hup_conn	*hup_conn_open(struct hup *);
/* The request of s on c (idle or connecting): 0, or -1 (nothing sent,
 * s untouched).  Answers s itself (431) when its head cannot be sent. */
int		 hup_conn_request(struct hup_conn *, struct stream *);
void		 hup_conn_probe(struct hup_conn *, const char *path);
/* Close now: a stream still on it is failed with status (0: it is gone
 * already, as after a cancel). */
void		 hup_conn_close(struct hup_conn *, int status, const char *why);
/* Its connect took longer than timeouts.connect: failed (the replica's
 * fault, so the pool backs off). */
void		 hup_conn_connect_timeout(struct hup_conn *);
/* An idle connection about to be reused: 1 if nothing came on it (no
 * stray byte, no close), else it is closed and 0. */
int		 hup_conn_usable(struct hup_conn *);
void		 hup_conn_free(struct hup_conn *);
/* Parse input that waited for credit (from the pool's deferred event). */
void		 hup_conn_resume_all(struct hup *);
const char	*hup_peer(const struct hup *);

#endif
