/*
 * upstream.h -- the wire upstream edge: one worker's connection to one
 * replica that speaks ingressd's wire protocol (docs/protocol.md).
 *
 * A connection is a state machine (memcached's proxy backends are the
 * model): IDLE -> CONNECTING -> WARMING (our HELLO and a PING sent) ->
 * READY (their HELLO and the PONG arrived) -> DOWN (backoff, then
 * CONNECTING again).  Only READY connections carry requests.  Each worker
 * keeps one connection per replica address, shared by every handle (name)
 * that resolves to it; many streams are multiplexed on it.
 *
 * The core reaches it only through the upconn ops it registers under the
 * protocol name "wire" (upconn.h): handles watch the connections they use
 * and are told when one becomes ready, goes down, or frees a slot after
 * being full; attached streams send through the carrier (stream.h).
 */
#ifndef INGRESSD_UPSTREAM_H
#define INGRESSD_UPSTREAM_H

/* Register the wire edge (main thread, before workers start).  0 or -1. */
int		 upstream_register(void);

#endif
