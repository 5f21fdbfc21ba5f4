/*
 * dnssrv.c -- dns_srv deployments resolved with c-ares (see dnssrv.h).
 *
 * c-ares tells us which sockets it wants watched (ARES_OPT_SOCK_STATE_CB):
 * each gets a persistent libevent event that hands readiness back with
 * ares_process_fd(), and one timer follows ares_timeout() for retries and
 * timeouts.  c-ares cannot cancel one query: a name removed by a reload is
 * marked gone and freed when its last answer comes in.  Callbacks may run
 * before ares_query()/ares_getaddrinfo() returns (an /etc/hosts hit, a
 * bad name), so a round holds one extra count on `pending` while it sends.
 * ares_destroy() calls every callback still out with ARES_EDESTRUCTION;
 * those touch nothing.
 */
#include <sys/queue.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ares.h>
#include <arpa/nameser.h>
#include <event2/event.h>

#include "conf.h"
#include "dns.h"
#include "dnssrv.h"
#include "log.h"
#include "registry.h"

#define DNSSRV_MAX_ADDRS	256	/* per name and round */

enum dnssrv_outcome {
	DNSSRV_NONE,			/* no round ended yet */
	DNSSRV_ADDRS,			/* records, resolved */
	DNSSRV_NXDOMAIN,		/* no such name */
	DNSSRV_NODATA,			/* the name has no SRV record */
};

struct dnssrv_name {
	struct dnssrv	*ds;
	char		*dep;		/* the deployment */
	char		*name;		/* "_svc._tcp.name" */
	int		 pending;	/* lookups of this round still out */
	int		 failed;	/* a lookup of this round failed */
	int		 gone;		/* removed: free at the last answer */
	int		 wanted;	/* dnssrv_apply's mark */
	enum dnssrv_outcome outcome, last;
	char		*addrs[DNSSRV_MAX_ADDRS];
	struct reg_share shares[DNSSRV_MAX_ADDRS];	/* by addrs */
	unsigned	 naddrs;
	unsigned	 backoff;	/* seconds, after failures */
	struct event	*timer;
	TAILQ_ENTRY(dnssrv_name) link;
};

/* One target's address lookup: the record's priority and weight go with
 * it to its answer. */
struct dnssrv_target {
	struct dnssrv_name *n;
	struct reg_share share;
};

struct dnssrv_fd {
	ares_socket_t	 fd;
	struct event	*ev;
	TAILQ_ENTRY(dnssrv_fd) link;
};

struct dnssrv {
	struct event_base *base;
	struct registry	*reg;
	ares_channel	 ch;		/* NULL until the first dns_srv */
	struct event	*timeout;	/* ares_timeout() */
	double		 interval;	/* resolver.srv_interval */
	TAILQ_HEAD(, dnssrv_fd) fds;
	TAILQ_HEAD(, dnssrv_name) names;
};

static void	dnssrv_lookup(struct dnssrv_name *);

struct dnssrv *
dnssrv_new(struct event_base *base, struct registry *reg)
{
	struct dnssrv *ds;

	if ((ds = calloc(1, sizeof(*ds))) == NULL)
		return NULL;
	ds->base = base;
	ds->reg = reg;
	ds->interval = 30;
	TAILQ_INIT(&ds->fds);
	TAILQ_INIT(&ds->names);
	return ds;
}

static void
dnssrv_round_clear(struct dnssrv_name *n)
{
	unsigned i;

	for (i = 0; i < n->naddrs; i++)
		free(n->addrs[i]);
	n->naddrs = 0;
	n->failed = 0;
	n->outcome = DNSSRV_NONE;
}

static void
dnssrv_name_free(struct dnssrv_name *n)
{
	dnssrv_round_clear(n);
	if (n->timer != NULL)
		event_free(n->timer);
	free(n->dep);
	free(n->name);
	free(n);
}

void
dnssrv_free(struct dnssrv *ds)
{
	struct dnssrv_name *n;
	struct dnssrv_fd *f;

	if (ds == NULL)
		return;
	/* Callbacks still out run now, with ARES_EDESTRUCTION. */
	if (ds->ch != NULL)
		ares_destroy(ds->ch);
	while ((f = TAILQ_FIRST(&ds->fds)) != NULL) {
		TAILQ_REMOVE(&ds->fds, f, link);
		event_free(f->ev);
		free(f);
	}
	while ((n = TAILQ_FIRST(&ds->names)) != NULL) {
		TAILQ_REMOVE(&ds->names, n, link);
		dnssrv_name_free(n);
	}
	if (ds->timeout != NULL)
		event_free(ds->timeout);
	if (ds->ch != NULL)
		ares_library_cleanup();
	free(ds);
}

/* c-ares's next deadline (retries, timeouts) as our one timer. */
static void
dnssrv_rearm(struct dnssrv *ds)
{
	struct timeval tv;

	if (ares_timeout(ds->ch, NULL, &tv) != NULL)
		evtimer_add(ds->timeout, &tv);
	else
		evtimer_del(ds->timeout);
}

static void
dnssrv_timeout_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct dnssrv *ds = arg;

	ares_process_fd(ds->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	dnssrv_rearm(ds);
}

static void
dnssrv_fd_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct dnssrv *ds = arg;

	/* May close fd and free this event (dnssrv_sock_cb): libevent
	 * allows that from the event's own callback. */
	ares_process_fd(ds->ch, (ev & EV_READ) ? fd : ARES_SOCKET_BAD,
	    (ev & EV_WRITE) ? fd : ARES_SOCKET_BAD);
	dnssrv_rearm(ds);
}

/* c-ares opens, closes, or wants other events on one of its sockets. */
static void
dnssrv_sock_cb(void *data, ares_socket_t fd, int readable, int writable)
{
	struct dnssrv *ds = data;
	struct dnssrv_fd *f;
	short what = (readable ? EV_READ : 0) | (writable ? EV_WRITE : 0);

	TAILQ_FOREACH(f, &ds->fds, link) {
		if (f->fd == fd)
			break;
	}
	if (f != NULL) {
		event_free(f->ev);
		f->ev = NULL;
	}
	if (what == 0) {
		if (f != NULL) {
			TAILQ_REMOVE(&ds->fds, f, link);
			free(f);
		}
		return;
	}
	if (f == NULL) {
		if ((f = calloc(1, sizeof(*f))) == NULL)
			fatalx("dns_srv: out of memory");
		f->fd = fd;
		TAILQ_INSERT_TAIL(&ds->fds, f, link);
	}
	if ((f->ev = event_new(ds->base, fd, what | EV_PERSIST, dnssrv_fd_cb,
	    ds)) == NULL || event_add(f->ev, NULL) == -1)
		fatalx("dns_srv: cannot watch a resolver socket");
}

static void
dnssrv_arm(struct dnssrv_name *n, double seconds)
{
	struct timeval tv;

	tv.tv_sec = (time_t)seconds;
	tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
	evtimer_add(n->timer, &tv);
}

static void
dnssrv_add(struct dnssrv_name *n, const struct sockaddr *sa,
    const struct reg_share *share)
{
	char ip[INET6_ADDRSTRLEN], buf[INET6_ADDRSTRLEN + 16];
	const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
	unsigned i;

	if (sa->sa_family == AF_INET &&
	    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip)) != NULL)
		snprintf(buf, sizeof(buf), "%s:%u", ip, ntohs(in->sin_port));
	else if (sa->sa_family == AF_INET6 &&
	    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip)) != NULL)
		snprintf(buf, sizeof(buf), "[%s]:%u", ip,
		    ntohs(in6->sin6_port));
	else
		return;
	/* Two records may name one target and port: one replica. */
	for (i = 0; i < n->naddrs; i++) {
		if (strcmp(n->addrs[i], buf) == 0) {
			registry_share_merge(&n->shares[i], share);
			return;
		}
	}
	if (n->naddrs < DNSSRV_MAX_ADDRS &&
	    (n->addrs[n->naddrs] = strdup(buf)) != NULL)
		n->shares[n->naddrs++] = *share;
}

/* Say what a definite answer did, once per change of outcome. */
static void
dnssrv_log_outcome(struct dnssrv_name *n, enum reg_result rv,
    const char *err)
{
	if (rv != REG_OK && rv != REG_UNCHANGED)
		log_warnx("dns_srv %s: %s", n->dep, err);
	if (n->outcome == DNSSRV_ADDRS && rv == REG_OK)
		log_info("dns_srv %s: %s: %u address(es)", n->dep, n->name,
		    n->naddrs);
	if (n->outcome == n->last)
		return;
	if (n->outcome == DNSSRV_NXDOMAIN)
		log_warnx("dns_srv %s: %s: no such name: the deployment has "
		    "no replicas", n->dep, n->name);
	else if (n->outcome == DNSSRV_NODATA)
		log_warnx("dns_srv %s: %s: no SRV record: the deployment has "
		    "no replicas", n->dep, n->name);
}

/* Every lookup of the round answered: tell the registry, plan the next. */
static void
dnssrv_round_end(struct dnssrv_name *n)
{
	char err[256];
	enum reg_result rv;

	if (n->failed) {
		n->backoff = n->backoff ? n->backoff * 2 : 1;
		if (n->backoff > DNS_MAX_BACKOFF)
			n->backoff = DNS_MAX_BACKOFF;
		log_warnx("dns_srv %s: %s: lookup failed: addresses kept, "
		    "again in %us", n->dep, n->name, n->backoff);
		dnssrv_round_clear(n);
		dnssrv_arm(n, n->backoff);
		return;
	}
	n->backoff = 0;
	rv = registry_set_addresses(n->ds->reg, n->dep, n->addrs, n->shares,
	    n->naddrs, err, sizeof(err));
	dnssrv_log_outcome(n, rv, err);
	n->last = n->outcome;
	dnssrv_round_clear(n);
	dnssrv_arm(n, n->ds->interval);
}

/* One lookup of the round is done; the last one ends the round. */
static void
dnssrv_done(struct dnssrv_name *n)
{
	if (--n->pending > 0)
		return;
	if (n->gone)
		dnssrv_name_free(n);
	else
		dnssrv_round_end(n);
}

/* The channel is going (dnssrv_free): a retired name is no longer on the
 * list, so its last answer frees it; the others are freed by the list. */
static void
dnssrv_destroyed(struct dnssrv_name *n)
{
	if (--n->pending == 0 && n->gone)
		dnssrv_name_free(n);
}

static void
dnssrv_addr_cb(void *arg, int status, int timeouts,
    struct ares_addrinfo *res)
{
	struct dnssrv_target *t = arg;
	struct dnssrv_name *n = t->n;
	struct ares_addrinfo_node *ai;

	if (status == ARES_EDESTRUCTION) {
		if (res != NULL)
			ares_freeaddrinfo(res);
		free(t);
		dnssrv_destroyed(n);
		return;
	}
	if (status == ARES_SUCCESS && !n->gone) {
		for (ai = res->nodes; ai != NULL; ai = ai->ai_next)
			dnssrv_add(n, ai->ai_addr, &t->share);
	} else if (status != ARES_ENOTFOUND && status != ARES_ENODATA &&
	    status != ARES_SUCCESS) {
		log_debug("dns_srv %s: target lookup: %s", n->dep,
		    ares_strerror(status));
		n->failed = 1;
	}
	if (res != NULL)
		ares_freeaddrinfo(res);
	free(t);
	dnssrv_done(n);
}

/*
 * Look up the targets of every record, each with its priority and
 * weight: the balancer keeps the worse priorities as backups for when
 * the better ones are not ready (balance.h), which is sooner than DNS
 * would drop them.  Target "." means: decidedly no such service here.
 */
static void
dnssrv_targets(struct dnssrv_name *n, struct ares_srv_reply *srv)
{
	struct ares_addrinfo_hints hints;
	struct ares_srv_reply *r;
	struct dnssrv_target *t;
	char port[8];
	int any = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	for (r = srv; r != NULL && !n->gone; r = r->next) {
		if (r->host[0] == '\0' || strcmp(r->host, ".") == 0 ||
		    r->port == 0)
			continue;
		any = 1;
		if ((t = calloc(1, sizeof(*t))) == NULL) {
			n->failed = 1;	/* addresses kept, tried again */
			break;
		}
		t->n = n;
		t->share.weight = r->weight;
		t->share.priority = r->priority;
		snprintf(port, sizeof(port), "%u", r->port);
		n->pending++;
		ares_getaddrinfo(n->ds->ch, r->host, port, &hints,
		    dnssrv_addr_cb, t);
	}
	if (!any)
		n->outcome = DNSSRV_NODATA;
}

static void
dnssrv_srv_cb(void *arg, int status, int timeouts, unsigned char *abuf,
    int alen)
{
	struct dnssrv_name *n = arg;
	struct ares_srv_reply *srv = NULL;

	if (status == ARES_EDESTRUCTION) {
		dnssrv_destroyed(n);
		return;
	}
	if (status == ARES_SUCCESS && !n->gone)
		status = ares_parse_srv_reply(abuf, alen, &srv);
	if (n->gone) {
		/* nothing: dnssrv_done frees it */
	} else if (status == ARES_SUCCESS) {
		n->outcome = DNSSRV_ADDRS;
		/* This callback's own count keeps the round open while the
		 * target lookups are sent (they may answer at once). */
		dnssrv_targets(n, srv);
	} else if (status == ARES_ENOTFOUND) {
		n->outcome = DNSSRV_NXDOMAIN;
	} else if (status == ARES_ENODATA) {
		n->outcome = DNSSRV_NODATA;
	} else {
		log_debug("dns_srv %s: %s: %s", n->dep, n->name,
		    ares_strerror(status));
		n->failed = 1;
	}
	if (srv != NULL)
		ares_free_data(srv);
	dnssrv_done(n);
}

static void
dnssrv_lookup(struct dnssrv_name *n)
{
	dnssrv_round_clear(n);
	n->pending = 1;
	ares_query(n->ds->ch, n->name, C_IN, T_SRV, dnssrv_srv_cb, n);
	dnssrv_rearm(n->ds);
}

static void
dnssrv_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct dnssrv_name *n = arg;

	if (n->pending == 0)
		dnssrv_lookup(n);
}

static struct dnssrv_name *
dnssrv_name_new(struct dnssrv *ds, const struct conf_deployment *cd)
{
	struct dnssrv_name *n;

	if ((n = calloc(1, sizeof(*n))) == NULL)
		return NULL;
	n->ds = ds;
	n->dep = strdup(cd->name);
	n->name = strdup(cd->dns);
	n->timer = evtimer_new(ds->base, dnssrv_timer_cb, n);
	if (n->dep == NULL || n->name == NULL || n->timer == NULL) {
		dnssrv_name_free(n);
		return NULL;
	}
	n->wanted = 1;
	return n;
}

/* Stop looking it up; free it now, or when its last answer comes. */
static void
dnssrv_name_retire(struct dnssrv_name *n)
{
	evtimer_del(n->timer);
	if (n->pending == 0)
		dnssrv_name_free(n);
	else
		n->gone = 1;
}

/* The conf's name servers as c-ares wants them: "a:p,[v6]:p". */
static int
dnssrv_servers(struct dnssrv *ds, const struct conf *conf, char *err,
    size_t errlen)
{
	char csv[1024];
	size_t off = 0;
	unsigned i;
	int rc;

	csv[0] = '\0';
	for (i = 0; i < conf->nnameservers; i++) {
		rc = snprintf(csv + off, sizeof(csv) - off, "%s%s",
		    i > 0 ? "," : "", conf->nameservers[i]);
		if (rc < 0 || (size_t)rc >= sizeof(csv) - off) {
			snprintf(err, errlen, "resolver.nameservers: too many "
			    "for dns_srv");
			return -1;
		}
		off += (size_t)rc;
	}
	if ((rc = ares_set_servers_ports_csv(ds->ch, csv)) != ARES_SUCCESS) {
		snprintf(err, errlen, "resolver.nameservers: %s",
		    ares_strerror(rc));
		return -1;
	}
	return 0;
}

static int
dnssrv_resolver(struct dnssrv *ds, const struct conf *conf, char *err,
    size_t errlen)
{
	struct ares_options o;
	int mask = ARES_OPT_SOCK_STATE_CB, rc;

	if (ds->ch != NULL)
		return 0;
	memset(&o, 0, sizeof(o));
	o.sock_state_cb = dnssrv_sock_cb;
	o.sock_state_cb_data = ds;
	/* Name servers of our own: fail a lookup in about 4 s, as dns.c
	 * does; the name keeps its addresses meanwhile. */
	if (conf->nnameservers > 0) {
		o.timeout = 2000;
		o.tries = 2;
		mask |= ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
	}
	if ((rc = ares_library_init(ARES_LIB_INIT_ALL)) != ARES_SUCCESS ||
	    (rc = ares_init_options(&ds->ch, &o, mask)) != ARES_SUCCESS) {
		ds->ch = NULL;
		snprintf(err, errlen, "cannot set up the DNS resolver: %s",
		    ares_strerror(rc));
		return -1;
	}
	if ((ds->timeout = evtimer_new(ds->base, dnssrv_timeout_cb, ds)) ==
	    NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (conf->nnameservers > 0)
		return dnssrv_servers(ds, conf, err, errlen);
	return 0;
}

static struct dnssrv_name *
dnssrv_find(struct dnssrv *ds, const char *dep)
{
	struct dnssrv_name *n;

	TAILQ_FOREACH(n, &ds->names, link) {
		if (strcmp(n->dep, dep) == 0)
			return n;
	}
	return NULL;
}

int
dnssrv_apply(struct dnssrv *ds, const struct conf *conf, char *err,
    size_t errlen)
{
	const struct conf_deployment *cd;
	struct dnssrv_name *n, *next;
	TAILQ_HEAD(, dnssrv_name) fresh = TAILQ_HEAD_INITIALIZER(fresh);
	unsigned i;

	ds->interval = conf->srv_interval;
	TAILQ_FOREACH(n, &ds->names, link)
		n->wanted = 0;
	for (i = 0; i < conf->ndeployments; i++) {
		cd = &conf->deployments[i];
		if (cd->source != CONF_DNS_SRV)
			continue;
		if (dnssrv_resolver(ds, conf, err, errlen) == -1)
			return -1;
		if ((n = dnssrv_find(ds, cd->name)) != NULL &&
		    strcmp(n->name, cd->dns) == 0) {
			n->wanted = 1;
			continue;
		}
		if ((n = dnssrv_name_new(ds, cd)) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		TAILQ_INSERT_TAIL(&fresh, n, link);
	}
	/* Old names not wanted (removed, or their "dns_srv" changed) stop. */
	for (n = TAILQ_FIRST(&ds->names); n != NULL; n = next) {
		next = TAILQ_NEXT(n, link);
		if (n->wanted)
			continue;
		TAILQ_REMOVE(&ds->names, n, link);
		dnssrv_name_retire(n);
	}
	while ((n = TAILQ_FIRST(&fresh)) != NULL) {
		TAILQ_REMOVE(&fresh, n, link);
		TAILQ_INSERT_TAIL(&ds->names, n, link);
		log_info("dns_srv %s: resolving %s", n->dep, n->name);
		dnssrv_lookup(n);
	}
	return 0;
}
