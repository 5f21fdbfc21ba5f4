/*
 * stream.h -- one proxied request, from the front door to a replica and back.
 *
 * The front creates a stream for each request it routes and owns it: it
 * submits it to a handle itself (handle_hold, handle_submit), frees it
 * after a terminal callback (on_end or on_fail), or aborts it when the
 * client goes away, then lets go of the handle (handle_drop).  In between
 * the stream waits in its handle's queue, then rides one carrier (an
 * upstream connection); it carries the request's deadline.  A stream is
 * passive: it calls neither handle nor upstream by name, only the two
 * interfaces below, so it knows no edge.
 *
 * The http1_request the stream was made from must stay valid until the
 * stream is freed (the front calls http1_next() only after that): the
 * REQUEST frame is encoded from it when the stream is attached.
 */
#ifndef INGRESSD_STREAM_H
#define INGRESSD_STREAM_H

#include <sys/queue.h>
#include <stddef.h>
#include <stdint.h>

#include "hfield.h"
#include "reqlog.h"
#include "wire.h"

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
	void	(*on_trailers)(void *arg, const struct wire_field *, unsigned n);
	/* Terminal: failed with this status (502, 503, 504). */
	void	(*on_fail)(void *arg, int status, const char *why);
	/* The stream got a connection, or credit to send body: the front may
	 * read more of the client's body. */
	void	(*on_writable)(void *arg);
};

/*
 * The front interface: how a stream tells the front edge that made it
 * (stream_new's ops and arg).  Ordering: on_response once, then on_data
 * any number of times, then exactly one terminal call (on_end or
 * on_fail).  on_trailers (wire v2: the replica ended its response with
 * TRAILERS) comes at most once, after the last on_data and immediately
 * before on_end; its fields are valid only during the call (copy what you
 * keep), and it is not terminal (do not free the stream in it).  NULL:
 * the front drops trailers.  on_fail may also come without on_response,
 * including from inside the front's own handle_submit() (queue full).  on_writable comes
 * at attach and whenever new credit lets body flow.  Re-entrancy: calls
 * come from the upstream edge's read loop, the stream's timer, or from
 * inside the front's own handle_submit() (an attach at once: on_writable;
 * queue full: on_fail), never from inside a stream_* call on the same
 * stream.  After a terminal call the stream is detached, and the front
 * frees it (stream_free) whenever it likes, even inside the callback.
 * Flow control: the front reports bytes that left for the client with
 * stream_consumed(); credit goes back to the replica in batches.
 */
struct stream_info {
	const struct http1_request *req;
	const char	*deployment;
	const char	*target;	/* may differ from req->target */
	size_t		 target_len;
	const char	*request_id;
	const char	*client_addr;	/* for X-Forwarded-For */
	int		 https;		/* X-Forwarded-Proto: https */
	const char	*client_subject; /* X-Client-Cert-Subject, or NULL */
	double		 timeout;	/* request deadline, seconds */
};

/*
 * The upstream interface: a carrier.  An upstream edge that attaches a
 * stream hands it these ops and its own pointer c (stream_attached); the
 * stream reaches the replica only through them.  data: request body
 * bytes, copied at once, at most the credit the stream holds (the stream
 * counts the credit; window() from the replica's WINDOW adds to it through
 * stream_on_window).  end: the body is complete, sent once, after the
 * last data.  window: credit n response bytes back to the replica.
 * cancel: abandon the stream (a wire code: CANCEL, TIMEOUT); the carrier
 * forgets it and calls nothing on it afterwards.  peer: the replica's id
 * for the access log.  None of them calls back into the stream; the
 * carrier never frees a stream (the front owns it).  After a terminal
 * stream_on_end/stream_on_fail the carrier has forgotten it already.
 */
struct stream_carrier {
	void	(*data)(void *c, uint32_t id, const void *, size_t);
	void	(*end)(void *c, uint32_t id);
	void	(*window)(void *c, uint32_t id, uint32_t n);
	void	(*cancel)(void *c, struct stream *, uint32_t code);
	const char *(*peer)(const void *c);
};

/*
 * The queue a stream is submitted to (the handle), set by the queue on
 * each submit: requeue(q, s) when the stream must find another replica
 * (stream_retry), leave(q, s) when a queued stream goes early (aborted),
 * expire(q, s) when its queue deadline passed.  leave must not call the
 * stream back; expire fails it.
 */
struct stream_queue {
	void	(*requeue)(void *q, struct stream *);
	void	(*leave)(void *q, struct stream *);
	/* The stream's queue deadline passed: take it out and fail it
	 * (stream_on_reject) with the reason only the queue knows. */
	void	(*expire)(void *q, struct stream *);
};

struct stream	*stream_new(struct wctx *, const struct stream_info *,
		    const struct stream_ops *, void *arg);
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

/* For the queue (handle.c) and the upstream edge (upstream.c). */
void		 stream_set_queue(struct stream *, const struct stream_queue *,
		    void *q);
void		 stream_queued(struct stream *, double timeout);
void		 stream_unqueued(struct stream *);
void		 stream_attached(struct stream *, const struct stream_carrier *,
		    void *c, uint32_t id);
uint32_t	 stream_id(const struct stream *);
/* Encode the REQUEST frame into out; then send what was buffered. */
int		 stream_encode(struct stream *, uint32_t id, struct evbuffer *out);
/*
 * The same REQUEST as fields, for an edge that needs no frame (the
 * in-process one): 0, or -1 (out of memory).  Valid until
 * stream_head_free() or the stream's end.  end: no body follows (and none
 * will go through the carrier's end).
 */
struct stream_fields {
	struct wire_field fields[WIRE_MAX_FIELDS];
	unsigned	 n;
};
struct stream_head {
	struct wire_request wr;
	int		 end;
	struct stream_fields sf;	/* the forwarded fields */
	struct hfield_out ho;		/* X-Forwarded-For's value lives here */
};
int		 stream_head(struct stream *, struct stream_head *);
void		 stream_head_free(struct stream_head *);
void		 stream_flush_pending(struct stream *);
void		 stream_on_response(struct stream *, int status,
		    const struct wire_field *, unsigned nfields, int end);
/* Response body; -1 if the replica sent more than its credit. */
int		 stream_on_data(struct stream *, struct evbuffer *);
/* WINDOW from the replica: more credit for the request body. */
void		 stream_on_window(struct stream *, uint32_t);
/* The replica's trailers (on_trailers); stream_on_end follows at once. */
void		 stream_on_trailers(struct stream *, const struct wire_field *,
		    unsigned n);
/* Terminal events from the upstream: the stream is detached already. */
void		 stream_on_end(struct stream *);
void		 stream_on_fail(struct stream *, int status, const char *why);
/* Failed with a reason the metrics count (on_fail follows at once); a
 * plain stream_on_fail counts 502 as replica_failed, 504 as deadline. */
void		 stream_on_reject(struct stream *, enum reqlog_reject,
		    int status, const char *why);
/* For the front's on_fail: why the stream failed. */
enum reqlog_reject stream_reject(const struct stream *);
/* Where the REQUEST starts in the connection's output (bytes ever
 * queued on it): at or past what was written means the replica saw none. */
void		 stream_set_sent_at(struct stream *, uint64_t);
uint64_t	 stream_sent_at(const struct stream *);
/* Detached from a failed connection before the replica saw it: submit
 * again (bounded tries; the body must be replayable).  0, or -1 if not. */
int		 stream_retry(struct stream *);
/* The stream's link in its queue (the handle's TAILQ: O(1) in and out),
 * owned by the queue while the stream waits there. */
struct stream_qent {
	TAILQ_ENTRY(stream_qent) link;
	struct stream	*s;
};
struct stream_qent *stream_qent(struct stream *);

#endif
