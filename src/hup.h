/*
 * hup.h -- the HTTP/1.1 upstream edge: replicas that are plain HTTP
 * servers (a deployment's "protocol": "http"), behind the same interface
 * as the wire edge (upconn.h), so the core does not know which it talks to.
 *
 * Each worker keeps, per replica address, a pool of keep-alive
 * connections: at most max_ongoing_requests busy ones, one request per
 * connection at a time (no pipelining), reused, closed when idle past
 * idle_timeout, one kept open ahead with prewarm.  A replica is ready
 * only once proven: connected and, with an active check (health), a 2xx
 * from its path, repeated every interval on an idle connection; two
 * misses in a row take it out until a check passes.  Passive health:
 * connection errors, bad responses and a run of max_consecutive_5xx take
 * it out for a backoff.  docs/architecture.md sets the failure semantics
 * side by side with the wire edge's.
 */
#ifndef INGRESSD_HUP_H
#define INGRESSD_HUP_H

/* Register the edge under "http" (main thread, before workers start).
 * 0 or -1. */
int		 hup_register(void);

#endif
