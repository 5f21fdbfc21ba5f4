/*
 * front.h -- a client connection: HTTP/1.1 in, responses out.
 *
 * Reads into its sock (src/sock.h), feeds http1, routes each request,
 * streams its body to a replica stream and its response back.  One request at a time per
 * connection: pipelined requests wait in the input buffer, so responses go
 * back in order.  Timeouts: header read (408), body read (408), keep-alive
 * idle (close).
 */
#ifndef INGRESSD_FRONT_H
#define INGRESSD_FRONT_H

#include <sys/socket.h>

struct wctx;

/* A new client connection, on the worker's thread; admin: it came to the
 * admin listener. */
void	front_accept(struct wctx *, int fd, const struct sockaddr *,
	    int socklen, int admin);
/* The same, in the shape worker_add_listener() takes (arg: the
 * listener's struct tls_slot, or NULL for plain HTTP). */
void	front_accept_client(struct wctx *, int fd, const struct sockaddr *,
	    int socklen, void *arg);
void	front_accept_admin(struct wctx *, int fd, const struct sockaddr *,
	    int socklen, void *arg);
/* The worker's hooks (worker_hooks): free every connection; close idle
 * connections, end busy ones after their response, returning the number
 * still busy. */
void	front_free_all(struct wctx *);
unsigned front_drain_all(struct wctx *);

#endif
