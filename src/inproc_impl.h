/*
 * inproc_impl.h -- the in-process edge's private structs, shared by
 *   inproc.c      the edge: instances per (worker, endpoint), upconn ops,
 *                 the run queue that delivers events to handlers
 *   inproc_req.c  requests: the replica.h API as the daemon implements it
 *                 (the table modules are bound to), the stream's carrier
 * inproc.c calls inproc_req.c; inproc_req.c calls back only through the
 * instance's hooks (struct inproc_hooks), which inproc.c fills in.
 */
#ifndef INGRESSD_INPROC_IMPL_H
#define INGRESSD_INPROC_IMPL_H

#include <sys/queue.h>
#include <stdint.h>

#include "replica_module.h"
#include "upconn.h"

struct evbuffer;
struct event;
struct inproc_mod;
struct reg_endpoint;
struct ep_stats;
struct stream;
struct wctx;

struct inproc_hdr {
	const char	*name;
	const char	*value;
};

/* What the module sees as struct replica_req. */
struct inproc_req {
	struct inproc	*ip;
	struct stream	*s;		/* NULL once detached */
	uint32_t	 id;
	LIST_ENTRY(inproc_req) link;	/* the instance's reqs */
	TAILQ_ENTRY(inproc_req) run;	/* on the run queue */
	unsigned	 queued:1;	/* on the run queue */
	unsigned	 started:1;	/* on_request delivered */
	unsigned	 in_end:1;	/* the stream's end arrived */
	unsigned	 in_done:1;	/* on_end delivered (or due no more) */
	unsigned	 out_head:1;
	unsigned	 out_done:1;
	unsigned	 end_pending:1;	/* the end waits behind pending */
	unsigned	 cancel_due:1;	/* the stream cancelled: on_cancel due */
	unsigned	 cancelled:1;
	unsigned	 failed:1;
	unsigned	 paused:1;
	unsigned	 want_writable:1;
	unsigned	 window_due:1;	/* credit came: flush pending */
	int		 busy;		/* inside a handler callback */
	int64_t		 cancel_code;
	uint32_t	 deadline_ms;
	void		*user;
	struct evbuffer	*in;		/* body not yet delivered (or NULL) */
	struct evbuffer	*body;		/* buffered body (no on_body) */
	size_t		 body_len;
	size_t		 unacked;	/* consumed, not credited back */
	uint64_t	 send_credit;	/* response bytes the stream takes */
	struct evbuffer	*pending;	/* response body waiting for credit */
	const char	*method, *target, *path, *query, *deployment,
			*request_id;
	unsigned	 nhdr;
	struct inproc_hdr hdr[];	/* then the strings */
};

LIST_HEAD(inproc_reqs, inproc_req);
TAILQ_HEAD(inproc_runq, inproc_req);

/* One worker's instance of one endpoint's module: what the module sees
 * as struct replica, what the core sees as struct upconn. */
/* What a request tells its instance (inproc.c's functions). */
struct inproc_hooks {
	/* Queue the req to run this loop pass. */
	void	(*sched)(struct inproc_req *);
	/* The stream left the req (end, fail, cancel): a slot is free. */
	void	(*detached)(struct inproc *);
	/* The req is freed. */
	void	(*req_gone)(struct inproc *, struct inproc_req *);
	/* Around calls into the module: the stall watchdog's record. */
	void	(*enter)(struct inproc *);
	void	(*leave)(struct inproc *);
};

struct inproc {
	LIST_ENTRY(inproc) link;
	const struct inproc_hooks *hooks;
	struct wctx	*w;
	struct reg_endpoint *ep;
	struct ep_stats	*st;
	struct inproc_mod *mod;		/* NULL: not started, or parked */
	const struct replica_module *desc;
	void		*arg;		/* init's, for every callback */
	int		 ready;
	int		 released;
	unsigned	 nwatch;
	unsigned	 in_flight;	/* streams attached */
	unsigned	 nreqs;		/* reqs alive (on_cancel may be due) */
	uint32_t	 next_id;
	LIST_HEAD(, upconn_watch) watchers, waiters;
	struct inproc_reqs reqs;
	struct inproc_runq runq;
	struct event	*kick;		/* runs the run queue */
	struct evbuffer	*scratch;	/* response body on its way */
};

/* inproc_req.c */
extern const struct replica_api inproc_api;
extern const struct stream_carrier inproc_carrier;
/* A req for stream s, or NULL (out of memory). */
struct inproc_req *inproc_req_new(struct inproc *, struct stream *,
		    uint32_t id, int *end);
/* Deliver what is due to the handler. */
void		 inproc_req_run(struct inproc_req *);
/* The instance goes: on_cancel unless over, then free. */
void		 inproc_req_kill(struct inproc_req *);

#endif
