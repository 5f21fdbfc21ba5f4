/*
 * h2.h -- the HTTP/2 front edge: h2c with prior knowledge (and h2 over
 * TLS, which arrives as the same bytes from sock), beside front.c's
 * HTTP/1.1 on the same listeners.
 *
 * front.c reads a new connection's first bytes; when they are the HTTP/2
 * preface it hands the connection over (h2_accept) and forgets it.  From
 * there h2.c owns the socket: libnghttp2 frames it through mem_recv and
 * mem_send over the sock's buffers (one read, one flush per loop pass),
 * and h2_stream.c turns each HTTP/2 stream into a core stream, like
 * front.c does a request.  See docs/http.md, "HTTP/2 and gRPC".
 */
#ifndef INGRESSD_H2_H
#define INGRESSD_H2_H

#include <stddef.h>
#include <stdint.h>

struct sock;
struct wctx;

/* Do these first bytes of a connection start the HTTP/2 preface?
 * 1: yes, 0: no, -1: too few bytes to tell. */
int	h2_sniff(const void *p, size_t n);
/* Take over an accepted connection whose input starts with the preface.
 * The connection was counted open (worker_conn_open, clientlim_open with
 * client_key); h2 closes both when it ends.  0, or -1 (sock untouched:
 * the caller still owns and closes it). */
int	h2_accept(struct wctx *, struct sock *, const char *peer, int admin,
	    uint64_t client_key);
/* The worker's hooks, called by front's: free every HTTP/2 connection;
 * send GOAWAY to all and return how many still have streams. */
void	h2_free_all(struct wctx *);
unsigned h2_drain_all(struct wctx *);

#endif
