/*
 * reqlog.h -- what the front door knows about a finished request.  A type
 * only: the front fills one at the end of every request and hands it to
 * metrics_request() and accesslog_write(); neither keeps it after the
 * call returns.
 */
#ifndef INGRESSD_REQLOG_H
#define INGRESSD_REQLOG_H

#include <stddef.h>
#include <stdint.h>

/*
 * Why ingressd answered a request itself with 502, 503 or 504 (counted by
 * reason in the metrics).  Append only: the names are a metrics label.
 */
enum reqlog_reject {
	REJECT_NONE,
	REJECT_QUEUE_FULL,	/* the deployment's wait queue was full */
	REJECT_QUEUE_TIMEOUT,	/* replicas ready, none free in time */
	REJECT_NO_REPLICA,	/* no replica ready (or none known) */
	REJECT_REPLICA_FAILED,	/* connection lost or request failed: 502 */
	REJECT_DEADLINE,	/* replica did not answer in time: 504 */
	REJECT_N
};

struct reqlog {
	const char	*peer;		/* client address */
	const char	*method;	/* NULL: the request never parsed */
	const char	*target;
	size_t		 target_len;
	int		 minor;		/* HTTP/1.minor */
	int		 status;	/* as sent to the client; 0: none */
	const char	*route;		/* matched prefix or NULL */
	const char	*deployment;	/* NULL: not routed */
	const char	*replica;	/* replica id or NULL */
	const char	*request_id;
	const char	*user_agent;	/* NULL if absent */
	const char	*referer;
	uint64_t	 bytes_in;	/* request body bytes */
	uint64_t	 bytes_out;	/* response bytes written (head + body) */
	double		 t_start;	/* request head complete (epoch seconds) */
	double		 upstream_s;	/* attach -> response end; <0: none */
	double		 total_s;	/* head -> response queued */
	int		 aborted;	/* client went away first */
	const char	*tls_version;	/* NULL: plain connection */
	const char	*tls_cipher;
	const char	*tls_sni;	/* NULL: none sent */
	const char	*client_subject; /* verified client cert, or NULL */
	enum reqlog_reject reject;
	int		 major;		/* 2: HTTP/2.0 (minor unused); else 1 */
	int		 grpc;		/* a gRPC call: grpc_status is set */
	int		 grpc_status;	/* as sent to the client (0..16) */
};

#endif
