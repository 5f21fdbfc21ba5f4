/*
 * front_impl.h -- the HTTP/1.1 front edge's connection struct, private to
 * front.c (the connection: accept, read, timers, keep-alive, pipelining,
 * free) and front_req.c (one request and its answer).
 *
 * Layered: front.c calls front_req.c; front_req.c never calls front.c.
 */
#ifndef INGRESSD_FRONT_IMPL_H
#define INGRESSD_FRONT_IMPL_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include "deadline.h"
#include "http1.h"
#include "reqlog.h"
#include "resp.h"

struct evbuffer;

/* Input is read up to this much ahead of the parser. */
#define FRONT_READ_HIGH		(256 * 1024)
#define FRONT_MAX_RID		128
/* Bytes per second a body must average once it took timeouts.body. */
#define FRONT_MIN_BODY_RATE	1024
/* Output at or below this: credit the replica for what has gone. */
#define FRONT_WRITE_LOW		(64 * 1024)

/*
 * A request that closes the connection when answered is not read behind:
 * its client is watched for going away (to cancel the stream) only if the
 * answer takes longer than this.  A quick answer then costs no epoll_ctl.
 */
#define FRONT_WATCH_DELAY	0.1

enum front_timer { T_NONE, T_HEADER, T_BODY, T_IDLE, T_WATCH };

struct front {
	struct wctx	*w;		/* the worker's context */
	struct sock	*sock;
	struct http1	*parser;
	struct deadline	 timer;		/* header, body, idle or linger */
	struct event	*resume;	/* deferred work: next request or free */
	enum front_timer timer_kind;
	int		 admin;		/* accepted on the admin listener */
	int		 tls_seen;	/* subject looked up (first request) */
	char		*subject;	/* verified client certificate or NULL */
	int		 closing;	/* free once the output is flushed */
	int		 sniffed;	/* first bytes seen: not HTTP/2 */
	char		 peer[64];

	/* The current request. */
	const struct http1_request *req;
	char		 client[64];	/* behind trusted proxies; "": peer */
	struct stream	*stream;
	struct handle	*handle;	/* held while stream is set */
	int		 req_done;	/* the whole request was read */
	int		 resp_done;	/* the whole response was queued */
	int		 resp_started;	/* a status line went out */
	int		 local_status;	/* answered here (404, admin...) */
	const char	*local_why;
	int		 keep_alive;
	int		 minor;
	int		 is_head;
	enum resp_framing framing;
	int64_t		 resp_left;	/* RESP_LENGTH: bytes still due */
	uint64_t	 resp_given;	/* body bytes put in the output */
	uint64_t	 resp_credited;	/* ... and credited back */
	char		 request_id[FRONT_MAX_RID + 1];
	char		*target;	/* rewritten target (strip_prefix) */
	size_t		 target_cap;
	char		*name;		/* deployment_from's name, or NULL */
	char		*admin_body;	/* an admin request's body */
	size_t		 admin_len;
	int		 admin_big;	/* ... over ADMIN_MAX_BODY */
	LIST_ENTRY(front) link;		/* the worker's connections */
	struct reqlog	 log;		/* the current request, for reqlog */
	uint64_t	 client_key;	/* for clientlim_close() */
	double		 t_attach;
};

/* front_req.c */
void	front_arm(struct front *, enum front_timer);
void	front_disarm(struct front *);
void	front_schedule(struct front *);
struct evbuffer	*front_out(struct front *);
size_t	front_out_len(struct front *);
double	front_now(struct front *);
void	front_count_out(struct front *, size_t);
void	front_reqlog(struct front *, int);
void	front_stream_release(struct front *, int);
void	front_credit(struct front *);

extern const struct http1_callbacks front_http1_callbacks;

#endif /* INGRESSD_FRONT_IMPL_H */
