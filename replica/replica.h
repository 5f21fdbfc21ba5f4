/*
 * replica.h -- libingressd-replica: write ingressd replica workers in C.
 *
 * A replica listens on the address ingressd gave it, accepts any number of
 * ingressd connections and speaks wire protocol v2 on them (docs/protocol.md;
 * v1 with an ingressd that speaks only v1):
 * HELLO and PING are answered here, and every REQUEST becomes a
 * struct replica_req handed to the handler, with many requests in flight on
 * one connection.  Bodies stream both ways.
 *
 * Configuration, from argv (which wins) or the environment ingressd sets:
 *   --listen ADDR          INGRESSD_LISTEN       unix:/path, host:port, [v6]:port
 *   --id ID                INGRESSD_REPLICA_ID   default "replica-<pid>"
 *   --deployment NAME      INGRESSD_DEPLOYMENT   default ""
 *   --max-concurrency N    INGRESSD_MAX_CONCURRENCY  default 1024
 *   --drain-ms N           INGRESSD_DRAIN_MS     default 2000
 *   --register URL         INGRESSD_REGISTER     etcd://IP:PORT/PREFIX[?ttl=N]:
 *                          self-registration with a lease (replica_etcd_*;
 *                          &weight=W&priority=P: the replica's share)
 *   --tls-cert FILE        INGRESSD_TLS_CERT     TLS on a TCP address
 *   --tls-key FILE         INGRESSD_TLS_KEY      (default: in the cert file)
 *   --tls-client-ca FILE   INGRESSD_TLS_CLIENT_CA  require ingressd's cert
 * A program using the library links -lssl -lcrypto too.
 * A stale unix socket is unlinked before bind.  On SIGTERM or SIGINT the
 * replica stops accepting, unlinks its socket, sends GOAWAY, lets requests
 * in flight finish for up to drain-ms (a second signal cuts that short),
 * cancels the rest, and replica_run() returns 0.  SIGPIPE is ignored.
 *
 * Everything runs on the caller's event_base, in its thread.  Handlers may
 * start timers or other events on replica_base() and answer later.
 *
 * Request lifetime.  A req is created just before on_request and freed
 * when the response is over -- the handler called replica_end(),
 * replica_write_end(), replica_respond(..., end=1) or replica_fail(), and
 * whatever body waited for flow-control credit has gone out -- or when
 * on_cancel returns (the proxy cancelled the stream, or the connection
 * closed).  When the response ends inside a callback the req is freed as
 * that callback returns; otherwise inside the ending call: do not touch a
 * req after ending its response.  Callbacks come in the order on_request,
 * on_body*, on_end, none after the response ended (the stream is over for
 * ingressd then: request body still in flight is dropped); on_cancel may
 * come at any point after on_request and is the last one.  Calls on a
 * cancelled req return -1.
 *
 * Flow control (wire.h): request body is credited back to ingressd as the
 * handler consumes it (on return from on_body, or once buffered), but held
 * back while more than a window of response body waits for credit, so an
 * echoing handler is paced by its reader.  Response body beyond the credit
 * ingressd granted is queued inside the req and sent as WINDOW frames
 * arrive; a handler that produces body on its own (timers) should watch
 * replica_req_pending() so the queue stays small, and may set on_writable
 * to hear when the queue has drained.  A handler that consumes body slower
 * than it arrives calls replica_req_pause(): no more credit is granted
 * (ingressd, and through it the client, are pushed back once the credit
 * already given is used up; pieces within that credit still arrive) until
 * replica_req_resume().
 */
#ifndef INGRESSD_REPLICA_H
#define INGRESSD_REPLICA_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evbuffer;
struct replica;
struct replica_req;

struct replica_handler {
	/* The request head arrived.  Required. */
	void	(*on_request)(struct replica_req *, void *arg);
	/*
	 * A piece of the request body; p is valid only during the call.  If
	 * NULL the library buffers the body: see replica_req_body().
	 */
	void	(*on_body)(struct replica_req *, const void *p, size_t n,
		    void *arg);
	/* The request body is complete (at once when it had none). */
	void	(*on_end)(struct replica_req *, void *arg);
	/*
	 * The stream is gone; the req is freed when this returns.  Why:
	 * replica_req_cancel_code().
	 */
	void	(*on_cancel)(struct replica_req *, void *arg);
	/*
	 * Optional.  Response body that had been queued for want of credit
	 * (a replica_write() beyond it) has all gone out and the response
	 * is not over: a good moment to write more.  Once per queueing.
	 */
	void	(*on_writable)(struct replica_req *, void *arg);
};

/* NULL on a bad argument or a failed bind, with the reason in err. */
struct replica	*replica_new(struct event_base *, int argc, char **argv,
		    const struct replica_handler *, void *arg, char *err,
		    size_t errlen);
/* Runs the base until SIGTERM/SIGINT and the drain; 0, or -1 on error. */
int		 replica_run(struct replica *);
/* Closes everything (pending reqs are cancelled).  The base stays. */
void		 replica_free(struct replica *);
/*
 * The whole main() of a typical replica: a base, replica_new(), run, free.
 * Errors go to stderr prefixed with name.  Returns the exit status.
 */
int		 replica_main(const char *name, int argc, char **argv,
		    const struct replica_handler *, void *arg);
const char	*replica_id(struct replica *);
const char	*replica_deployment(struct replica *);
const char	*replica_address(struct replica *);	/* as bound */
struct event_base *replica_base(struct replica *);

/*
 * Self-registration in etcd (registry.etcd in ingressd): grant a lease of
 * ttl seconds (default 10), put PREFIX/deployments/DEPLOYMENT/replicas/ID =
 * {"address": replica_address()} with it, keep it alive every ttl/3 on
 * replica_base(), and register again if the lease is lost.  url is
 * "etcd://IP:PORT[,IP:PORT]/PREFIX[?ttl=N]"; needs a deployment name.
 * weight=1..65535 and priority=0..65535 go into the value (the replica's
 * share of its deployment in ingressd's balance; default 1 and 0).
 * "etcds://" is https, verified with ca=FILE (and cert=FILE&key=FILE for
 * mTLS, server_name=NAME); user=U&password_file=FILE authenticate.
 * Calls to etcd block the loop for at most 1 s each.  --register does this
 * for replica_run(), and unregisters when the drain begins.
 * unregister revokes the lease (every ingressd drops the replica at once)
 * and frees.
 */
struct replica_etcd;
struct replica_etcd *replica_etcd_register(struct replica *, const char *url,
		    char *err, size_t errlen);
void		 replica_etcd_unregister(struct replica_etcd *);
/* Requests alive in this process, on every connection. */
unsigned	 replica_active(struct replica *);

/* The request.  Strings are NUL-terminated and live as long as the req. */
struct replica	*replica_req_replica(struct replica_req *);
uint32_t	 replica_req_stream(struct replica_req *);
const char	*replica_req_method(struct replica_req *);
const char	*replica_req_target(struct replica_req *);	/* path?query */
const char	*replica_req_path(struct replica_req *);
const char	*replica_req_query(struct replica_req *);	/* "" if none */
const char	*replica_req_deployment(struct replica_req *);
const char	*replica_req_request_id(struct replica_req *);
uint32_t	 replica_req_deadline_ms(struct replica_req *);	/* 0: none */
/* The first header with this name (any case), or NULL. */
const char	*replica_req_header(struct replica_req *, const char *name);
unsigned	 replica_req_header_count(struct replica_req *);
/* Header i in arrival order, names as sent; -1 when i is out of range. */
int		 replica_req_header_at(struct replica_req *, unsigned i,
		    const char **name, const char **value);
/* Body bytes received so far, in both body modes. */
size_t		 replica_req_body_length(struct replica_req *);
/* The buffered body when on_body is NULL (NULL if there was none). */
struct evbuffer	*replica_req_body(struct replica_req *);
/* PINGs seen on the request's connection before the request arrived. */
unsigned	 replica_req_conn_pings(struct replica_req *);
/* Response body bytes queued waiting for credit from ingressd. */
size_t		 replica_req_pending(struct replica_req *);
/*
 * In on_cancel: the code of the CANCEL (or stream ERROR) frame ingressd
 * sent (WIRE_CODE_CANCEL, WIRE_CODE_TIMEOUT, ...), or -1 when no frame
 * cancelled it (the connection closed, the replica is stopping).
 */
int64_t		 replica_req_cancel_code(struct replica_req *);
/*
 * Flow control of the request body: while paused the library grants
 * ingressd no more credit for it; resume grants what was consumed
 * meanwhile.  Both may be called at any time before the req ends.
 */
void		 replica_req_pause(struct replica_req *);
void		 replica_req_resume(struct replica_req *);
int		 replica_req_paused(struct replica_req *);
void		 replica_req_set_user(struct replica_req *, void *);
void		*replica_req_user(struct replica_req *);

/*
 * The response: replica_respond() once, then any replica_write(), then
 * replica_end() (or replica_write_end() for the last piece, which carries
 * FLAG_END on its DATA frame, or replica_end_trailers()).  hdrs is name, value, ..., NULL (or NULL for
 * none); at most 256 headers.  status is 100..999.  DATA is split at
 * WIRE_MAX_DATA and never beyond the stream's credit (see above).  Frames
 * are queued and written when the event loop next turns, many at once.  All return 0, or -1 when the call is out of order,
 * the req was cancelled, or an argument is over a wire limit.
 */
int	replica_respond(struct replica_req *, int status,
	    const char *const *hdrs, int end);
int	replica_write(struct replica_req *, const void *p, size_t n);
int	replica_write_end(struct replica_req *, const void *p, size_t n);
int	replica_end(struct replica_req *);
/*
 * Ends the response with trailers (hdrs as in replica_respond, at most
 * 256), after replica_respond(..., end=0) and any body: they follow the
 * body still waiting for credit.  An ingressd that speaks only wire v1
 * cannot carry trailers (replica_req_trailers_ok() is 0): the response then
 * just ends and they are dropped.  ingressd passes them to a client that
 * takes them (HTTP/1.1 with TE: trailers, HTTP/2).  For a response with no
 * body whose trailers matter (gRPC's Trailers-Only), put the fields in
 * replica_respond(..., end=1) instead.
 */
int	replica_end_trailers(struct replica_req *, const char *const *hdrs);
int	replica_req_trailers_ok(struct replica_req *);
/* ERROR (code INTERNAL) on the stream: the proxy answers 502 if it can. */
int	replica_fail(struct replica_req *, const char *text);

/*
 * Finds key in a query string ("a=1&b=2") and copies its raw value (no
 * percent-decoding) into buf: 1 if found and it fit, 0 otherwise.
 */
int	replica_query_get(const char *query, const char *key, char *buf,
	    size_t len);

#endif
