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

struct worker;

void	front_accept(struct worker *, int fd, const struct sockaddr *,
	    int socklen, int admin);
void	front_free_all(struct worker *);
/* Close idle connections, end busy ones after their response; returns
 * the number still busy. */
unsigned front_drain_all(struct worker *);

#endif
