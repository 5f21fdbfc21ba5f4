/*
 * replica_impl.h -- the replica library's private structs, shared by its
 * files, lowest layer first:
 *   conn.c    one ingressd connection: I/O, frame output, the stream table
 *   req.c     requests: frames on streams, accessors, responding, credit
 *   trailers.c  ending a response with trailers (wire v2)
 *   grpc.c    gRPC on top: message framing, status trailers, dispatch
 *   grpc_md.c   gRPC response metadata: checked, kept until sent
 *   listen.c  accepting, listening, stopping and draining, signals
 *   cli.c     options and environment, replica_new(), replica_main()
 * Not installed: the public API is replica.h.
 */
#ifndef INGRESSD_REPLICA_IMPL_H
#define INGRESSD_REPLICA_IMPL_H

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <stdint.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "idtab.h"
#include "replica.h"
#include "sock.h"
#include "wire.h"

/* Input is read up to one largest frame ahead: it always fits. */
#define IN_MAX		(WIRE_HEADER_SIZE + WIRE_MAX_PAYLOAD)
#define OUT_HIGH	(8u << 20)	/* stop reading above this much output */
#define OUT_LOW		(1u << 20)	/* and resume below this */
#define CLOSE_TIMEOUT	5		/* seconds to flush a last ERROR */

struct conn;

struct req_hdr {
	const char	*name;
	const char	*value;
};

struct replica_req {
	struct conn	*c;
	uint32_t	 stream;
	uint32_t	 deadline_ms;
	unsigned	 conn_pings;
	int		 busy;		/* inside a handler callback */
	unsigned	 in_done:1;	/* request body complete */
	unsigned	 out_head:1;	/* RESPONSE sent */
	unsigned	 out_done:1;	/* the handler ended the response */
	unsigned	 end_pending:1;	/* END waits behind pending */
	unsigned	 cancelled:1;
	unsigned	 failed:1;	/* replica_fail(): no more callbacks */
	unsigned	 paused:1;	/* replica_req_pause(): no credit given */
	unsigned	 want_writable:1; /* on_writable once pending drains */
	int64_t		 cancel_code;	/* CANCEL/ERROR code, -1: not a frame */
	void		*user;
	void		(*dtor)(struct replica_req *);	/* a layer's state
					 * (grpc.c) goes with the req */
	struct evbuffer	*body;
	size_t		 body_len;
	uint64_t	 send_credit;	/* response DATA bytes we may send */
	uint64_t	 recv_credit;	/* request DATA bytes ingressd may send */
	size_t		 unacked;	/* consumed, not yet credited back */
	struct evbuffer	*pending;	/* response body waiting for credit */
	struct evbuffer	*trailers;	/* the TRAILERS frame that ends the
					 * response, once body is out */
	struct evbuffer	*grpc_md[2];	/* grpc_md.c: response metadata,
					 * head and trailers, name\0value\0.. */
	size_t		 grpc_md_size;	/* both, counted as HTTP/2 does */
	const char	*method;
	const char	*target;
	const char	*path;
	const char	*query;
	const char	*deployment;
	const char	*request_id;
	unsigned	 nhdr;
	struct req_hdr	 hdr[];		/* then the strings */
};

enum conn_state {
	CONN_HELLO,		/* waiting for the proxy's HELLO */
	CONN_READY,
	CONN_CLOSING,		/* flushing a last frame, then free */
};

struct conn {
	struct replica	*r;
	LIST_ENTRY(conn) entry;
	struct sock	*sock;
	enum conn_state	 state;
	struct event	*closer;	/* CONN_CLOSING: give up flushing */
	struct idtab	 streams;	/* stream id -> struct replica_req */
	uint32_t	 last_stream;	/* highest REQUEST stream seen */
	uint16_t	 version;	/* agreed in HELLO */
	unsigned	 pings;
	int		 busy;		/* processing input */
	unsigned	 dead:1;	/* close once not busy */
	unsigned	 goaway:1;	/* we sent GOAWAY */
};

/*
 * The layers call down only.  conn.c reaches req.c through these, and
 * req.c reaches listen.c through replica->drained; replica_new() wires
 * them.  Each may free the req it is given (see req_maybe_free()).
 */
struct conn_ops {
	/* Every frame but HELLO, PING and a connection ERROR; 0, or -1
	 * with *why set for a protocol error. */
	int	(*stream_frame)(struct conn *, const struct wire_frame *,
		    const char **why);
	/* The connection is going: the stream is already out of the table. */
	void	(*cancel)(struct replica_req *);
};

struct tls_srv;

struct replica {
	const struct conn_ops *ops;
	void		(*drained)(struct replica *);	/* stopping, idle */
	struct event_base *base;
	struct replica_handler h;
	void		*arg;
	char		 id[WIRE_MAX_NAME + 1];
	char		 deployment[WIRE_MAX_NAME + 1];
	char		 address[256];
	char		 unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint32_t	 max_concurrency;
	unsigned	 drain_ms;
	unsigned	 active;	/* live reqs, all connections */
	struct evconnlistener *lev;
	struct tls_srv	*tls;		/* TLS toward ingressd, or NULL */
	struct event	*sigterm;
	struct event	*sigint;
	struct event	*drain_ev;
	struct event	*accept_ev;	/* re-enables accept after EMFILE */
	int		 stopping;
	const char	*register_url;	/* --register, or NULL */
	struct replica_etcd *etcd;	/* registered while serving */
	LIST_HEAD(, conn) conns;
	struct wire_field fields[WIRE_MAX_FIELDS];	/* decode scratch */
};

/* conn.c */
void	replica_log(struct replica *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
uint8_t	*out_reserve(struct conn *, size_t, struct evbuffer_iovec *);
int	 out_commit(struct conn *, struct evbuffer_iovec *, size_t);
int	 send_hello(struct conn *);
int	 send_error(struct conn *, uint32_t, uint32_t, const char *);
int	 send_small(struct conn *, const uint8_t *, size_t);
int	 send_goaway(struct conn *);
int	 frame_hello(struct conn *, const struct wire_frame *, const char **);
int	 frame_ping(struct conn *, const struct wire_frame *, const char **);
void	 conn_close(struct conn *);
struct conn *conn_new(struct replica *, int);

/* req.c */
void	 req_cancel(struct replica_req *);
int	 req_send_data(struct replica_req *, const uint8_t *, size_t, int);
int	 req_fields(const char *const *, struct wire_field *, unsigned *);
extern const struct conn_ops req_conn_ops;

/* grpc_md.c: which list, and the fields of one appended to hdrs (pairs,
 * from *i on, at most max pointers); 0, or -1 when they do not fit. */
enum { GRPC_MD_HEAD, GRPC_MD_TRAILERS };
int	 grpc_md_fields(struct replica_req *, int which, const char **hdrs,
	    int *i, int max);

/* listen.c */
int	 replica_listen(struct replica *, const char *, char *, size_t);
int	 replica_tls(struct replica *, const char *cert, const char *key,
	    const char *client_ca, char *, size_t);
void	 replica_drained(struct replica *);
void	 signal_cb(evutil_socket_t, short, void *);
void	 drain_timeout_cb(evutil_socket_t, short, void *);
void	 accept_resume_cb(evutil_socket_t, short, void *);

#endif
