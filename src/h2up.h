/*
 * h2up.h -- the HTTP/2 upstream edge: replicas that are HTTP/2 servers
 * spoken to in cleartext with prior knowledge (a deployment's "protocol":
 * "h2c") or over TLS with ALPN h2 ("h2", with "tls"), gRPC servers above
 * all, behind the same interface as the wire and HTTP/1.1 edges
 * (upconn.h).
 *
 * Each worker keeps one connection per replica address and multiplexes
 * requests on it as HTTP/2 streams: at most max_ongoing_requests (and the
 * server's SETTINGS_MAX_CONCURRENT_STREAMS) at a time.  A replica is ready
 * only once proven: connected, SETTINGS exchanged and a PING answered;
 * idle connections are pinged every ping_interval, and two unanswered
 * PINGs take the replica out.  A deadline or a client that goes away
 * resets only its stream (RST_STREAM CANCEL); GOAWAY from the server lets
 * open streams finish and a fresh connection is made.  docs/architecture.md
 * sets the failure semantics side by side with the other edges'.
 */
#ifndef INGRESSD_H2UP_H
#define INGRESSD_H2UP_H

/* Register the edge under "h2c" and "h2" (main thread, before workers
 * start).  0 or -1. */
int		 h2up_register(void);

#endif
