/*
 * net.c -- socket helpers.  Nothing here logs: every failure is described
 * in the caller's buffer, naming the address as the user wrote it.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "net.h"

#define NET_BACKLOG	4096
#define NET_UNIX_PREFIX	"unix:"

static int	net_parse_unix(const char *, struct net_addr *, char *, size_t);
static int	net_parse_port(const char *, char *, size_t, const char *);
static int	net_split(const char *, char *, size_t, const char **, int *,
		    char *, size_t);
static int	net_host_check(const char *, const char *, int, char *,
		    size_t);
static int	net_resolve(const char *, const char *, int, struct net_addr *,
		    char *, size_t, const char *);
static int	net_fail(int, const struct net_addr *, const char *, char *,
		    size_t);
static int	net_unix_live(const struct net_addr *);
static int	net_bound(const struct net_addr *, int, char *, size_t);

static int
net_parse_unix(const char *s, struct net_addr *na, char *err, size_t len)
{
	struct sockaddr_un	*sun = (struct sockaddr_un *)&na->ss;
	const char		*path = s + strlen(NET_UNIX_PREFIX);
	size_t			 plen = strlen(path);

	if (plen == 0) {
		snprintf(err, len, "bad address \"%s\": empty unix path", s);
		return (-1);
	}
	if (plen >= sizeof sun->sun_path) {
		snprintf(err, len, "bad address \"%s\": unix path longer "
		    "than %zu bytes", s, sizeof sun->sun_path - 1);
		return (-1);
	}
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, path, plen + 1);
	na->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen + 1);
	return (0);
}

/* Digits only, 0..65535; port 0 lets the kernel pick when listening. */
static int
net_parse_port(const char *port, char *err, size_t len, const char *text)
{
	unsigned long	v = 0;
	const char	*p;

	if (*port == '\0') {
		snprintf(err, len, "bad address \"%s\": missing port", text);
		return (-1);
	}
	for (p = port; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || p - port > 5) {
			snprintf(err, len, "bad address \"%s\": bad port",
			    text);
			return (-1);
		}
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v > 65535) {
		snprintf(err, len, "bad address \"%s\": port out of range",
		    text);
		return (-1);
	}
	return (0);
}

/* getaddrinfo for one TCP address; the first result wins. */
static int
net_resolve(const char *host, const char *port, int v6literal,
    struct net_addr *na, char *err, size_t len, const char *text)
{
	struct addrinfo	 hints, *res;
	int		 rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = v6literal ? AF_INET6 : AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if (v6literal)
		hints.ai_flags |= AI_NUMERICHOST;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		snprintf(err, len, "bad address \"%s\": %s", text,
		    rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		return (-1);
	}
	if (res->ai_addrlen > sizeof na->ss) {
		freeaddrinfo(res);
		snprintf(err, len, "bad address \"%s\": address too long",
		    text);
		return (-1);
	}
	memcpy(&na->ss, res->ai_addr, res->ai_addrlen);
	na->len = res->ai_addrlen;
	freeaddrinfo(res);
	return (0);
}

/*
 * The syntax both net_addr_parse() and net_addr_check() read: "HOST:PORT"
 * or "[V6]:PORT" split into host (NUL-terminated) and port; the port's
 * digits checked.
 */
static int
net_split(const char *s, char *host, size_t hostlen, const char **port,
    int *v6, char *err, size_t len)
{
	const char	*colon, *hs;
	size_t		 hlen;

	*v6 = 0;
	if (s[0] == '[') {
		hs = s + 1;
		if ((colon = strchr(hs, ']')) == NULL) {
			snprintf(err, len, "bad address \"%s\": missing ']'", s);
			return (-1);
		}
		hlen = (size_t)(colon - hs);
		if (colon[1] != ':') {
			snprintf(err, len, "bad address \"%s\": missing port",
			    s);
			return (-1);
		}
		*port = colon + 2;
		*v6 = 1;
	} else {
		hs = s;
		if ((colon = strrchr(s, ':')) == NULL) {
			snprintf(err, len, "bad address \"%s\": missing port",
			    s);
			return (-1);
		}
		if (memchr(s, ':', (size_t)(colon - s)) != NULL) {
			snprintf(err, len, "bad address \"%s\": an IPv6 "
			    "address needs brackets", s);
			return (-1);
		}
		hlen = (size_t)(colon - s);
		*port = colon + 1;
	}
	if (hlen == 0) {
		snprintf(err, len, "bad address \"%s\": missing host", s);
		return (-1);
	}
	if (hlen >= hostlen) {
		snprintf(err, len, "bad address \"%s\": host name too long", s);
		return (-1);
	}
	memcpy(host, hs, hlen);
	host[hlen] = '\0';
	return (net_parse_port(*port, err, len, s));
}

int
net_addr_parse(const char *s, struct net_addr *na, char *err, size_t len)
{
	char		 host[256];
	const char	*port;
	int		 v6;

	memset(na, 0, sizeof *na);
	snprintf(na->text, sizeof na->text, "%s", s);
	if (strncmp(s, NET_UNIX_PREFIX, strlen(NET_UNIX_PREFIX)) == 0)
		return (net_parse_unix(s, na, err, len));
	if (net_split(s, host, sizeof host, &port, &v6, err, len) == -1)
		return (-1);
	return (net_resolve(host, port, v6, na, err, len, s));
}

/*
 * A host of digits and dots is an IPv4 address or nothing (RFC 1123 2.1:
 * a name's last label is not all numeric), so "300.1.1.1" fails here and
 * not at start-up; other names only need the characters of a DNS name.
 */
static int
net_host_check(const char *s, const char *host, int v6, char *err,
    size_t len)
{
	struct in6_addr	 in6;
	struct in_addr	 in;
	const char	*p;

	if (v6) {
		if (inet_pton(AF_INET6, host, &in6) == 1)
			return (0);
		snprintf(err, len, "bad address \"%s\": bad IPv6 address", s);
		return (-1);
	}
	if (strspn(host, "0123456789.") == strlen(host)) {
		if (inet_pton(AF_INET, host, &in) == 1)
			return (0);
		snprintf(err, len, "bad address \"%s\": bad IPv4 address", s);
		return (-1);
	}
	if (strlen(host) > NET_HOST_MAX) {
		snprintf(err, len, "bad address \"%s\": host name too long", s);
		return (-1);
	}
	for (p = host; *p != '\0'; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' ||
		    *p == '_')) {
			snprintf(err, len, "bad address \"%s\": bad host name",
			    s);
			return (-1);
		}
	}
	return (0);
}

int
net_addr_check(const char *s, char *err, size_t len)
{
	struct net_addr	 na;
	char		 host[256];
	const char	*port;
	int		 v6;

	if (strncmp(s, NET_UNIX_PREFIX, strlen(NET_UNIX_PREFIX)) == 0) {
		memset(&na, 0, sizeof na);
		return (net_parse_unix(s, &na, err, len));
	}
	if (net_split(s, host, sizeof host, &port, &v6, err, len) == -1)
		return (-1);
	return (net_host_check(s, host, v6, err, len));
}

int
net_addr_literal(const char *s, char *err, size_t len)
{
	struct in_addr	 in;
	char		 host[256];
	const char	*port;
	int		 v6;

	if (net_addr_check(s, err, len) == -1)
		return (-1);
	if (strncmp(s, NET_UNIX_PREFIX, strlen(NET_UNIX_PREFIX)) == 0)
		return (0);
	(void)net_split(s, host, sizeof host, &port, &v6, err, len);
	if (v6 || inet_pton(AF_INET, host, &in) == 1)
		return (0);
	snprintf(err, len, "bad address \"%s\": a name, not an address", s);
	return (-1);
}

int
net_addr_is_unix(const struct net_addr *na)
{
	return (na->ss.ss_family == AF_UNIX);
}

/* Describe a failed call, close fd, return -1. */
static int
net_fail(int fd, const struct net_addr *na, const char *what, char *err,
    size_t len)
{
	int	saved = errno;

	snprintf(err, len, "%s: %s: %s", na->text, what, strerror(saved));
	if (fd != -1)
		close(fd);
	errno = saved;
	return (-1);
}

/* Is someone accepting on this unix socket?  Refused means stale. */
static int
net_unix_live(const struct net_addr *na)
{
	int	fd, live;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return (0);
	live = connect(fd, (const struct sockaddr *)&na->ss, na->len) == 0 ||
	    errno == EAGAIN || errno == EINPROGRESS;
	close(fd);
	return (live);
}

/* A socket bound to na (its options set), not yet listening, or -1. */
static int
net_bound(const struct net_addr *na, int reuseport, char *err, size_t len)
{
	const struct sockaddr_un	*sun;
	struct stat			 sb;
	int				 fd, one = 1;

	fd = socket(na->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1)
		return (net_fail(-1, na, "socket", err, len));
	if (net_addr_is_unix(na)) {
		/*
		 * Only a stale socket is removed: never a regular file, and
		 * never one a live process still listens on (bind then
		 * fails with EADDRINUSE, as it would for TCP).
		 */
		sun = (const struct sockaddr_un *)&na->ss;
		if (lstat(sun->sun_path, &sb) == 0 && S_ISSOCK(sb.st_mode) &&
		    !net_unix_live(na) && unlink(sun->sun_path) == -1)
			return (net_fail(fd, na, "unlink", err, len));
	} else {
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
		    sizeof one) == -1)
			return (net_fail(fd, na, "SO_REUSEADDR", err, len));
		if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT,
		    &one, sizeof one) == -1)
			return (net_fail(fd, na, "SO_REUSEPORT", err, len));
		if (na->ss.ss_family == AF_INET6 && setsockopt(fd,
		    IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) == -1)
			return (net_fail(fd, na, "IPV6_V6ONLY", err, len));
	}
	if (bind(fd, (const struct sockaddr *)&na->ss, na->len) == -1)
		return (net_fail(fd, na, "bind", err, len));
	return (fd);
}

int
net_listen(const struct net_addr *na, int reuseport, char *err, size_t len)
{
	int	fd;

	if ((fd = net_bound(na, reuseport, err, len)) == -1)
		return (-1);
	if (listen(fd, NET_BACKLOG) == -1)
		return (net_fail(fd, na, "listen", err, len));
	return (fd);
}

int
net_bind_test(const struct net_addr *na, char *err, size_t len)
{
	int	fd;

	if (net_addr_is_unix(na)) {
		errno = EINVAL;
		return (net_fail(-1, na, "bind test", err, len));
	}
	if ((fd = net_bound(na, 1, err, len)) == -1)
		return (-1);
	close(fd);
	return (0);
}

int
net_addr_same(const struct sockaddr_storage *a,
    const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;
	const struct sockaddr_un *au = (const void *)a, *bu = (const void *)b;

	if (a->ss_family != b->ss_family)
		return (0);
	switch (a->ss_family) {
	case AF_INET:
		return (a4->sin_port == b4->sin_port &&
		    a4->sin_addr.s_addr == b4->sin_addr.s_addr);
	case AF_INET6:
		return (a6->sin6_port == b6->sin6_port &&
		    memcmp(&a6->sin6_addr, &b6->sin6_addr,
		    sizeof(a6->sin6_addr)) == 0);
	case AF_UNIX:
		return (strncmp(au->sun_path, bu->sun_path,
		    sizeof(au->sun_path)) == 0);
	}
	return (0);
}

int
net_connect(const struct net_addr *na, char *err, size_t len)
{
	int	fd;

	fd = socket(na->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1)
		return (net_fail(-1, na, "socket", err, len));
	if (connect(fd, (const struct sockaddr *)&na->ss, na->len) == -1 &&
	    errno != EINPROGRESS && errno != EINTR)
		return (net_fail(fd, na, "connect", err, len));
	return (fd);
}

/* Unix sockets refuse TCP_NODELAY; that is fine. */
void
net_nodelay(int fd)
{
	int	one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void
net_peer_text(const struct sockaddr *sa, char *buf, size_t len)
{
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;

	if (len == 0)
		return;
	switch (sa->sa_family) {
	case AF_INET:
		sin = (const struct sockaddr_in *)sa;
		if (inet_ntop(AF_INET, &sin->sin_addr, buf, len) == NULL)
			snprintf(buf, len, "?");
		break;
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)sa;
		if (inet_ntop(AF_INET6, &sin6->sin6_addr, buf, len) == NULL)
			snprintf(buf, len, "?");
		break;
	case AF_UNIX:
		snprintf(buf, len, "unix");
		break;
	default:
		snprintf(buf, len, "?");
		break;
	}
}

int
net_free_port(char *err, size_t errlen)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd, port = -1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1)
		snprintf(err, errlen, "no free port on 127.0.0.1: %s",
		    strerror(errno));
	else
		port = ntohs(sin.sin_port);
	close(fd);
	return port;
}
