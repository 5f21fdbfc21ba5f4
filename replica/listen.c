/*
 * listen.c -- accepting, listening and stopping for the replica
 * library: GOAWAY, drain, close on SIGTERM or SIGINT.
 */
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "net.h"
#include "replica_impl.h"
#include "tls.h"

static void
accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct replica	*r = arg;
	struct conn	*c;

	if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
		net_nodelay(fd);
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

/* Parsing, binding and stale-socket removal are net.c's, as for ingressd. */
int
replica_listen(struct replica *r, const char *addr, char *err, size_t errlen)
{
	struct net_addr	 na;
	socklen_t	 len = sizeof na.ss;
	int		 fd;

	if (net_addr_parse(addr, &na, err, errlen) != 0 ||
	    (fd = net_listen(&na, 0, err, errlen)) == -1)
		return -1;
	if (net_addr_is_unix(&na)) {
		snprintf(r->unix_path, sizeof r->unix_path, "%s",
		    ((struct sockaddr_un *)&na.ss)->sun_path);
		snprintf(r->address, sizeof r->address, "%s", addr);
	} else {
		getsockname(fd, (struct sockaddr *)&na.ss, &len);
		inet_text(&na.ss, r->address, sizeof r->address);
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

/*
 * TLS toward ingressd on a TCP address: our certificate and key, and with
 * client_ca, ingressd's certificate required and verified against it.
 * A unix socket stays plain (the settings are ignored, with a note).
 */
int
replica_tls(struct replica *r, const char *cert, const char *key,
    const char *client_ca, char *err, size_t errlen)
{
	struct conf_tls_cert cc;
	struct conf_tls t;

	if (cert == NULL || *cert == '\0')
		return 0;
	if (r->unix_path[0] != '\0') {
		replica_log(r, "TLS settings ignored: %s is a unix socket",
		    r->address);
		return 0;
	}
	memset(&t, 0, sizeof(t));
	cc.cert = (char *)cert;
	cc.key = (char *)(key != NULL && *key != '\0' ? key : cert);
	t.certs = &cc;
	t.ncerts = 1;
	t.client_ca = (char *)client_ca;
	t.verify_client = client_ca != NULL && *client_ca != '\0' ?
	    CONF_VERIFY_REQUIRE : CONF_VERIFY_OFF;
	t.handshake_timeout = 10;
	t.session_tickets = 1;
	if (tls_init(err, errlen) == -1 ||
	    (r->tls = tls_srv_new(&t, err, errlen)) == NULL)
		return -1;
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
		sock_write_now(c->sock);
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
	replica_etcd_unregister(r->etcd);
	r->etcd = NULL;
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
	char err[256];

	if (evsignal_add(r->sigterm, NULL) != 0 ||
	    evsignal_add(r->sigint, NULL) != 0)
		return -1;
	if (r->register_url != NULL && (r->etcd = replica_etcd_register(r,
	    r->register_url, err, sizeof(err))) == NULL) {
		fprintf(stderr, "replica: %s\n", err);
		return -1;
	}
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
	replica_etcd_unregister(r->etcd);
	if (r->sigterm != NULL)
		event_free(r->sigterm);
	if (r->sigint != NULL)
		event_free(r->sigint);
	if (r->drain_ev != NULL)
		event_free(r->drain_ev);
	if (r->accept_ev != NULL)
		event_free(r->accept_ev);
	tls_srv_unref(r->tls);
	free(r);
}

