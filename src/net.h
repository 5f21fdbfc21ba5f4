/*
 * net.h -- socket helpers.  They never log: errors go into the caller's
 * buffer and the caller decides what to say.
 *
 * Address syntax: "HOST:PORT", "[V6]:PORT", or "unix:/path".
 */
#ifndef INGRESSD_NET_H
#define INGRESSD_NET_H

#include <sys/socket.h>

#define NET_HOST_MAX	253	/* a DNS name's length */

struct net_addr {
	struct sockaddr_storage ss;
	socklen_t	 len;
	char		 text[128];	/* as given, for logs and JSON */
};

/* Resolves names with getaddrinfo (blocking: start-up and conf only). */
int	net_addr_parse(const char *, struct net_addr *, char *err, size_t);
/* The same syntax without resolving (conf load, -t): 0, or -1 and err.
 * Literal addresses must be valid; names only well formed. */
int	net_addr_check(const char *, char *err, size_t);
/* net_addr_check, and the host must be an address (no name to resolve):
 * what may be registered at run time. */
int	net_addr_literal(const char *, char *err, size_t);
int	net_addr_is_unix(const struct net_addr *);
/* A non-blocking listening socket, or -1.  A unix path is unlinked first. */
int	net_listen(const struct net_addr *, int reuseport, char *err, size_t);
/* -t: bind a TCP socket (SO_REUSEADDR, SO_REUSEPORT) without listening and
 * close it: 0, or -1 with errno and err ("ADDR: bind: ..."). */
int	net_bind_test(const struct net_addr *, char *err, size_t);
/* Same family, address and port (or unix path). */
int	net_addr_same(const struct sockaddr_storage *,
	    const struct sockaddr_storage *);
/* A non-blocking socket with connect(2) started (EINPROGRESS is fine). */
int	net_connect(const struct net_addr *, char *err, size_t);
void	net_nodelay(int fd);
/* A TCP port on 127.0.0.1 that was free a moment ago, or -1 and err. */
int	net_free_port(char *err, size_t);
/* The numeric text of a peer address ("127.0.0.1", "::1", "unix"). */
void	net_peer_text(const struct sockaddr *, char *buf, size_t);

#endif
