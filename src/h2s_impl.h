/*
 * h2s_impl.h -- one HTTP/2 stream, shared by its two halves: h2_stream.c
 * (the request, the core stream's callbacks, lifetimes) and h2_answer.c
 * (what goes back: HEADERS, the DATA provider, trailers, our own answers).
 * Private to the HTTP/2 edge; h2.c sees only h2_impl.h.
 */
#ifndef INGRESSD_H2S_IMPL_H
#define INGRESSD_H2S_IMPL_H

#include <sys/queue.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "deadline.h"
#include "http1.h"
#include "reqlog.h"

struct handle;
struct h2conn;
struct stream;
struct wire_field;

#define H2S_MAX_RID	128
#define H2S_MSG_MAX	512

struct h2s {
	struct h2conn	*c;
	int32_t		 id;
	LIST_ENTRY(h2s)	 link;

	/* The request head: "name\0value\0" pairs, then the parsed form. */
	char		*hbuf;
	size_t		 hlen, hcap, hsize;
	unsigned	 nhdr;
	int		 head_seen;
	int		 too_big;	/* over a limit: 431 */
	struct http1_request req;
	struct http1_field *fields;
	unsigned	 ncookie;	/* cookie fields, joined into cookie */
	char		*cookie;
	int		 req_done;	/* END_STREAM from the client */
	uint64_t	 unacked;	/* request bytes not consumed yet */

	struct stream	*stream;
	struct handle	*handle;
	int		 grpc;
	struct deadline	 call;		/* gRPC: the whole call's deadline */
	int		 admin;		/* an admin path: answered here */
	char		*admin_body;
	size_t		 admin_len;
	int		 admin_big;
	char		*target;	/* rewritten target, deployment name */
	char		*name;

	/* The response. */
	int		 head_sent;	/* HEADERS submitted */
	int		 has_body;	/* ... with a data provider */
	int		 eof;		/* no more DATA will come */
	int		 end_sent;	/* END_STREAM went out */
	struct evbuffer	*out;
	char		*tbuf;		/* the replica's trailers, copied */
	size_t		 tlen;
	unsigned	 ntr;
	int		 status;	/* the replica's HTTP status */
	int		 grpc_status;	/* -1: derive at the end */
	char		 grpc_msg[H2S_MSG_MAX];
	int		 resp_grpc_status; /* from the replica's head; -1 */
	char		 resp_grpc_msg[H2S_MSG_MAX];

	struct reqlog	 log;
	char		 client[64];
	char		 request_id[H2S_MAX_RID + 1];
	double		 t_attach;
};

/* h2_answer.c, for h2_stream.c. */
/* The replica's head, as HEADERS; -1 out of memory (nothing sent). */
int	h2s_respond(struct h2s *, int status, const struct wire_field *,
	    unsigned n, int end);
/* gRPC: remember a grpc-status the replica put in its head. */
void	h2s_head_status(struct h2s *, const struct wire_field *, unsigned n);
/* gRPC: an answer without a body, the status in the HEADERS. */
void	h2s_trailers_only(struct h2s *, const struct wire_field *, unsigned n);
/* No more DATA will come: what is left, then the end (and trailers). */
void	h2s_finish(struct h2s *);
/* An error ingressd produced (status, reason) as HTTP or gRPC. */
void	h2s_local(struct h2s *, int status, const char *why);
/* An admin path's answer. */
void	h2s_admin(struct h2s *);

#endif
