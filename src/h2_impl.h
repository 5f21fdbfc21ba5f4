/*
 * h2_impl.h -- what h2.c (the connection) and h2_stream.c (its streams)
 * share.  Private to the HTTP/2 edge.
 */
#ifndef INGRESSD_H2_IMPL_H
#define INGRESSD_H2_IMPL_H

#include <sys/queue.h>
#include <stdint.h>

#include <event2/event.h>
#include <nghttp2/nghttp2.h>

#include "deadline.h"
#include "wctx.h"

struct conf;
struct evbuffer;
struct h2s;
struct sock;
struct wctx;

struct h2conn {
	struct wctx	*w;
	struct sock	*sock;
	nghttp2_session	*ss;
	const struct conf *conf;	/* the snapshot it started under */
	struct event	*resume;	/* deferred: flush, credit, free */
	struct deadline	 timer;		/* idle, header block, or linger */
	int		 admin;		/* came to the admin listener */
	int		 closing;	/* free once the output is flushed */
	int		 draining;	/* GOAWAY sent: no new streams */
	unsigned	 nstreams;
	LIST_HEAD(, h2s) streams;
	char		 peer[64];
	uint64_t	 client_key;
	/* Flood counters, per one-second window. */
	double		 win_start;
	unsigned	 resets, controls;
	unsigned	 conts;		/* CONTINUATIONs in this block */
	int		 in_block;	/* a header block is open */
	int		 tls_seen;	/* subject looked up (first stream) */
	char		*subject;	/* verified client certificate or NULL */
	/* h2.c's, for a stream that ends: the stream layer calls the
	 * connection back only through this pointer. */
	void		(*stream_gone)(struct h2conn *);
	LIST_ENTRY(h2conn) link;
};

/* Run the connection's deferred work (flush, credit, free) this pass. */
static inline void
h2_schedule(struct h2conn *c)
{
	event_active(c->resume, 0, 0);
}

/* The loop's cached time, in seconds. */
static inline double
h2_now(struct h2conn *c)
{
	struct timeval tv;

	event_base_gettimeofday_cached(c->w->base, &tv);
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* h2_stream.c, for h2.c's nghttp2 callbacks. */
struct h2s *h2s_new(struct h2conn *, int32_t id);
/* A request header (pseudo or regular); an nghttp2 return code. */
int	h2s_header(struct h2s *, const uint8_t *name, size_t nlen,
	    const uint8_t *value, size_t vlen);
void	h2s_head_done(struct h2s *, int end_stream);
void	h2s_body(struct h2s *, const uint8_t *, size_t);
void	h2s_body_end(struct h2s *);
/* nghttp2 closed the stream (error: its RST code, or 0). */
void	h2s_closed(struct h2s *, uint32_t error);
/* A NO_COPY DATA frame: hd (9 bytes), len payload bytes moved from the
 * stream's buffer, padding; 0 or an nghttp2 error code. */
int	h2s_send_data(struct h2s *, struct evbuffer *out, const uint8_t *hd,
	    size_t len, size_t padlen);
/* We sent END_STREAM on it. */
void	h2s_sent_end(struct h2s *);
/* Each loop pass: credit request bytes that moved on to the replica. */
void	h2s_credit(struct h2s *);
void	h2s_credit_all(struct h2conn *);
/* The connection goes with the stream open: abort it, log, free. */
void	h2s_abandon(struct h2s *);
int	h2s_head_seen(const struct h2s *);

#endif
