/*
 * listen.c -- accepting, listening and stopping for the replica
 * library: GOAWAY, drain, close on SIGTERM or SIGINT.
 */
#include <sys/stat.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replica_impl.h"

static void
accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct replica	*r = arg;
	struct conn	*c;
	int		 one = 1;

	if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if ((c = conn_new(r, fd)) == NULL) {
		close(fd);
		return;
	}
	/* Both sides send HELLO first, without waiting for the other's. */
	if (send_hello(c) != 0)
		conn_close(c);
}

void
accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct replica	*r = arg;

	if (r->lev != NULL)
		evconnlistener_enable(r->lev);
}

/* EMFILE and friends: stop accepting for a moment rather than spin. */
static void
accept_error_cb(struct evconnlistener *lev, void *arg)
{
	struct replica	*r = arg;
	struct timeval	 tv = { 0, 200 * 1000 };

	replica_log(r, "accept: %s", strerror(errno));
	evconnlistener_disable(lev);
	event_add(r->accept_ev, &tv);
}

/* Listening. */

static int
parse_unix(const char *path, struct sockaddr_un *sun, char *err,
    size_t errlen)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	if (*path == '\0' || strlen(path) >= sizeof sun->sun_path) {
		snprintf(err, errlen, "bad unix socket path \"%s\"", path);
		return -1;
	}
	memcpy(sun->sun_path, path, strlen(path));
	return 0;
}

/* host:port or [v6]:port, resolved once at start-up. */
static int
parse_inet(const char *addr, struct sockaddr_storage *ss, socklen_t *len,
    char *err, size_t errlen)
{
	struct addrinfo	 hints, *res;
	char		 host[256];
	const char	*colon, *h = addr;
	size_t		 hlen;
	int		 rc;

	if ((colon = strrchr(addr, ':')) == NULL || colon[1] == '\0') {
		snprintf(err, errlen, "bad address \"%s\": no port", addr);
		return -1;
	}
	hlen = (size_t)(colon - addr);
	if (*addr == '[') {
		if (hlen < 2 || addr[hlen - 1] != ']') {
			snprintf(err, errlen, "bad address \"%s\"", addr);
			return -1;
		}
		h = addr + 1;
		hlen -= 2;
	}
	if (hlen >= sizeof host) {
		snprintf(err, errlen, "bad address \"%s\"", addr);
		return -1;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((rc = getaddrinfo(hlen != 0 ? host : NULL, colon + 1, &hints,
	    &res)) != 0) {
		snprintf(err, errlen, "%s: %s", addr, gai_strerror(rc));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void
inet_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char	host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
		snprintf(buf, len, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const void *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
		snprintf(buf, len, "%s:%u", host, ntohs(s4->sin_port));
	}
}

int
replica_listen(struct replica *r, const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct stat	 st;
	socklen_t	 len;
	int		 fd, one = 1, is_unix;

	memset(&ss, 0, sizeof ss);
	is_unix = strncmp(addr, "unix:", 5) == 0;
	if (is_unix) {
		if (parse_unix(addr + 5, (struct sockaddr_un *)&ss, err,
		    errlen) != 0)
			return -1;
		len = sizeof(struct sockaddr_un);
		/* Only a socket is stale; never unlink anything else. */
		if (lstat(addr + 5, &st) == 0 && S_ISSOCK(st.st_mode))
			unlink(addr + 5);
	} else if (parse_inet(addr, &ss, &len, err, errlen) != 0)
		return -1;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (!is_unix)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, len) != 0 ||
	    listen(fd, 1024) != 0) {
		snprintf(err, errlen, "%s: %s", addr, strerror(errno));
		close(fd);
		return -1;
	}
	if (is_unix) {
		snprintf(r->unix_path, sizeof r->unix_path, "%s", addr + 5);
		snprintf(r->address, sizeof r->address, "%s", addr);
	} else {
		len = sizeof ss;
		getsockname(fd, (struct sockaddr *)&ss, &len);
		inet_text(&ss, r->address, sizeof r->address);
	}
	r->lev = evconnlistener_new(r->base, accept_cb, r,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	if (r->lev == NULL) {
		snprintf(err, errlen, "evconnlistener_new failed");
		close(fd);
		return -1;
	}
	evconnlistener_set_error_cb(r->lev, accept_error_cb);
	return 0;
}

/* Stopping: GOAWAY, drain, close. */

static void
replica_close_all(struct replica *r)
{
	struct conn	*c;

	if (r->lev != NULL) {
		evconnlistener_free(r->lev);
		r->lev = NULL;
	}
	if (r->unix_path[0] != '\0') {
		unlink(r->unix_path);
		r->unix_path[0] = '\0';
	}
	while ((c = LIST_FIRST(&r->conns)) != NULL) {
		/* Best effort: whatever the socket takes now. */
		if (evbuffer_get_length(c->out) != 0)
			evbuffer_write(c->out, c->fd);
		conn_close(c);
	}
}

void
replica_drained(struct replica *r)
{
	if (r->stopping == 2)
		return;
	r->stopping = 2;
	event_base_loopexit(r->base, NULL);
}

void
drain_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	replica_drained(arg);
}

void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct replica	*r = arg;
	struct timeval	 tv;
	struct conn	*c;

	if (r->stopping) {
		replica_drained(r);	/* second signal: now */
		return;
	}
	r->stopping = 1;
	if (r->lev != NULL) {
		evconnlistener_free(r->lev);
		r->lev = NULL;
	}
	if (r->unix_path[0] != '\0') {
		unlink(r->unix_path);
		r->unix_path[0] = '\0';
	}
	LIST_FOREACH(c, &r->conns, entry)
		if (c->state != CONN_CLOSING)
			send_goaway(c);
	if (r->active == 0) {
		replica_drained(r);
		return;
	}
	tv.tv_sec = r->drain_ms / 1000;
	tv.tv_usec = (r->drain_ms % 1000) * 1000;
	event_add(r->drain_ev, &tv);
}

int
replica_run(struct replica *r)
{
	if (evsignal_add(r->sigterm, NULL) != 0 ||
	    evsignal_add(r->sigint, NULL) != 0)
		return -1;
	if (event_base_dispatch(r->base) == -1)
		return -1;
	replica_close_all(r);
	return 0;
}

void
replica_free(struct replica *r)
{
	if (r == NULL)
		return;
	replica_close_all(r);
	if (r->sigterm != NULL)
		event_free(r->sigterm);
	if (r->sigint != NULL)
		event_free(r->sigint);
	if (r->drain_ev != NULL)
		event_free(r->drain_ev);
	if (r->accept_ev != NULL)
		event_free(r->accept_ev);
	free(r);
}

