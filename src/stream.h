/*
 * stream.h -- one proxied request, from the front door to a replica and back.
 *
 * The front creates a stream for each request it routes and owns it: it
 * frees it after a terminal callback (on_end or on_fail), or aborts it when
 * the client goes away.  In between the stream waits in its handle's queue,
 * then rides one upstream connection; it carries the request's deadline.
 *
 * The http1_request the stream was made from must stay valid until the
 * stream is freed (the front calls http1_next() only after that): the
 * REQUEST frame is encoded from it when the stream is attached.
 */
#ifndef INGRESSD_STREAM_H
#define INGRESSD_STREAM_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct handle;
struct http1_request;
struct upstream;
struct wire_field;
struct wctx;
struct stream;

struct stream_ops {
	/* The response head.  end: no body follows. */
	void	(*on_response)(void *arg, int status,
		    const struct wire_field *, unsigned nfields, int end);
	/* Body bytes: take them out of buf (drain or move). */
	void	(*on_data)(void *arg, struct evbuffer *buf);
	/* Terminal: the response is complete. */
	void	(*on_end)(void *arg);
	/* Terminal: failed with this status (502, 503, 504). */
	void	(*on_fail)(void *arg, int status, const char *why);
	/* The stream got a connection, or credit to send body: the front may
	 * read more of the client's body. */
	void	(*on_writable)(void *arg);
};

struct stream_info {
	const struct http1_request *req;
	const char	*deployment;
	const char	*target;	/* may differ from req->target */
	size_t		 target_len;
	const char	*request_id;
	const char	*client_addr;	/* for X-Forwarded-For */
	double		 timeout;	/* request deadline, seconds */
};

struct stream	*stream_new(struct wctx *, const struct stream_info *,
		    const struct stream_ops *, void *arg);
/* Submit to the handle: it attaches it now or queues it. */
void		 stream_submit(struct stream *, struct handle *);
/* Request body from the client (copied), and its end. */
void		 stream_body(struct stream *, const char *p, size_t n);
void		 stream_body_end(struct stream *);
int		 stream_responded(const struct stream *);
/* Can the stream take more body now (attached, with credit, nothing
 * held back)?  When not, the front stops reading the client. */
int		 stream_can_take_body(const struct stream *);
/* The front has passed n response bytes on to the client: credit them
 * back to the replica (flow control). */
void		 stream_consumed(struct stream *, size_t n);
/* The replica's id once attached, else NULL. */
const char	*stream_replica(const struct stream *);
/* The client went away or the front gave up: cancel and free. */
void		 stream_abort(struct stream *);
void		 stream_free(struct stream *);

/* For handle.c and upstream.c. */
void		 stream_queued(struct stream *, struct handle *, double timeout);
void		 stream_unqueued(struct stream *);
void		 stream_attached(struct stream *, struct upstream *, uint32_t id);
uint32_t	 stream_id(const struct stream *);
/* Encode the REQUEST frame into out; then send what was buffered. */
int		 stream_encode(struct stream *, uint32_t id, struct evbuffer *out);
void		 stream_flush_pending(struct stream *);
void		 stream_on_response(struct stream *, int status,
		    const struct wire_field *, unsigned nfields, int end);
/* Response body; -1 if the replica sent more than its credit. */
int		 stream_on_data(struct stream *, struct evbuffer *);
/* WINDOW from the replica: more credit for the request body. */
void		 stream_on_window(struct stream *, uint32_t);
/* Terminal events from the upstream: the stream is detached already. */
void		 stream_on_end(struct stream *);
void		 stream_on_fail(struct stream *, int status, const char *why);
/* Where the REQUEST starts in the connection's output (bytes ever
 * queued on it): at or past what was written means the replica saw none. */
void		 stream_set_sent_at(struct stream *, uint64_t);
uint64_t	 stream_sent_at(const struct stream *);
/* Detached from a failed connection before the replica saw it: submit
 * again (bounded tries; the body must be replayable).  0, or -1 if not. */
int		 stream_retry(struct stream *);
/* Intrusive queue link for the handle's wait queue. */
struct stream	*stream_queue_next(struct stream *);
void		 stream_queue_set_next(struct stream *, struct stream *);

#endif
