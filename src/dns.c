/*
 * dns.c -- dns deployments resolved with evdns (see dns.h).
 *
 * One dns_name per dns deployment.  A round is one A and one AAAA lookup
 * sent together; the round ends when both have answered, and only then
 * does the registry hear of it.  Lookups are never cancelled (a cancelled
 * evdns request still calls back, later, from the loop): a name removed
 * by a reload is marked gone and freed when its last answer comes in.
 * evdns may call back before evdns_base_resolve_*() returns; a round's
 * bookkeeping is done before each call for that reason.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/dns.h>
#include <event2/event.h>

#include "conf.h"
#include "dns.h"
#include "log.h"
#include "registry.h"

#define DNS_A		1	/* dns_name.waiting bits */
#define DNS_AAAA	2
#define DNS_MAX_ADDRS	256	/* per name and round */

struct dns_name {
	struct dns	*dns;
	char		*dep;		/* the deployment */
	char		*target;	/* "host:port", as in the conf */
	char		 host[256];
	char		 port[8];
	int		 waiting;	/* DNS_A | DNS_AAAA still out */
	int		 failed;	/* a lookup of this round failed */
	int		 gone;		/* removed: free at the last answer */
	int		 wanted;	/* dns_apply's mark */
	char		*addrs[DNS_MAX_ADDRS];
	unsigned	 naddrs;
	int		 ttl;		/* this round's smallest; -1: none */
	unsigned	 backoff;	/* seconds, after failures */
	struct event	*timer;
	struct dns_name	*next;
};

struct dns {
	struct event_base *base;
	struct evdns_base *edns;
	struct registry	*reg;
	struct dns_name	*names;
};

static void	dns_lookup(struct dns_name *);

struct dns *
dns_new(struct event_base *base, struct registry *reg)
{
	struct dns *d;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	d->base = base;
	d->reg = reg;
	return d;
}

static void
dns_round_clear(struct dns_name *n)
{
	unsigned i;

	for (i = 0; i < n->naddrs; i++)
		free(n->addrs[i]);
	n->naddrs = 0;
	n->ttl = -1;
	n->failed = 0;
}

static void
dns_name_free(struct dns_name *n)
{
	dns_round_clear(n);
	if (n->timer != NULL)
		event_free(n->timer);
	free(n->dep);
	free(n->target);
	free(n);
}

void
dns_free(struct dns *d)
{
	struct dns_name *n, *next;

	if (d == NULL)
		return;
	/* Without fail_requests evdns drops lookups in flight silently, so
	 * no callback can reach a name freed below. */
	if (d->edns != NULL)
		evdns_base_free(d->edns, 0);
	for (n = d->names; n != NULL; n = next) {
		next = n->next;
		dns_name_free(n);
	}
	free(d);
}

/* "1.2.3.4:port" or "[v6]:port" for one address of the answer. */
static void
dns_add(struct dns_name *n, int family, const void *addr)
{
	char ip[INET6_ADDRSTRLEN], buf[INET6_ADDRSTRLEN + 16];

	if (n->naddrs == DNS_MAX_ADDRS ||
	    inet_ntop(family, addr, ip, sizeof(ip)) == NULL)
		return;
	snprintf(buf, sizeof(buf), family == AF_INET6 ? "[%s]:%s" : "%s:%s",
	    ip, n->port);
	if ((n->addrs[n->naddrs] = strdup(buf)) != NULL)
		n->naddrs++;
}

static void
dns_arm(struct dns_name *n, unsigned seconds)
{
	struct timeval tv = { (time_t)seconds, 0 };

	evtimer_add(n->timer, &tv);
}

/* Both lookups answered: tell the registry, and plan the next round. */
static void
dns_round_end(struct dns_name *n)
{
	char err[256];
	unsigned next;
	enum reg_result rv;

	if (n->failed) {
		n->backoff = n->backoff ? n->backoff * 2 : 1;
		if (n->backoff > DNS_MAX_BACKOFF)
			n->backoff = DNS_MAX_BACKOFF;
		log_warnx("dns %s: %s: lookup failed: addresses kept, again "
		    "in %us", n->dep, n->host, n->backoff);
		dns_round_clear(n);
		dns_arm(n, n->backoff);
		return;
	}
	n->backoff = 0;
	rv = registry_set_addresses(n->dns->reg, n->dep, n->addrs, NULL,
	    n->naddrs, err, sizeof(err));
	if (rv == REG_OK)
		log_info("dns %s: %s: %u address(es), ttl %d", n->dep, n->host,
		    n->naddrs, n->ttl);
	else if (rv != REG_UNCHANGED)
		log_warnx("dns %s: %s", n->dep, err);
	next = n->naddrs == 0 ? DNS_NEGATIVE_TTL : n->ttl < DNS_MIN_TTL ?
	    DNS_MIN_TTL : n->ttl > DNS_MAX_TTL ? DNS_MAX_TTL :
	    (unsigned)n->ttl;
	dns_round_clear(n);
	dns_arm(n, next);
}

/*
 * One family answered.  No such name and no such record are answers (no
 * addresses); anything else is a failure.
 */
static void
dns_answer(struct dns_name *n, int bit, int result, int count, int ttl,
    void *addresses)
{
	int i;

	n->waiting &= ~bit;
	if (n->gone) {
		if (n->waiting == 0)
			dns_name_free(n);
		return;
	}
	switch (result) {
	case DNS_ERR_NONE:
		for (i = 0; i < count; i++) {
			if (bit == DNS_A)
				dns_add(n, AF_INET, (uint32_t *)addresses + i);
			else
				dns_add(n, AF_INET6,
				    (struct in6_addr *)addresses + i);
		}
		if (count > 0 && (n->ttl < 0 || ttl < n->ttl))
			n->ttl = ttl;
		break;
	case DNS_ERR_NOTEXIST:
	case DNS_ERR_NODATA:
		break;
	default:
		log_debug("dns %s: %s: %s lookup: %s", n->dep, n->host,
		    bit == DNS_A ? "A" : "AAAA", evdns_err_to_string(result));
		n->failed = 1;
		break;
	}
	if (n->waiting == 0)
		dns_round_end(n);
}

/* Addresses of another type than asked would be misread: a failure.
 * (An empty answer may come with any type.) */
static void
dns_a_cb(int result, char type, int count, int ttl, void *addresses,
    void *arg)
{
	if (result == DNS_ERR_NONE && count > 0 && type != DNS_IPv4_A)
		result = DNS_ERR_UNKNOWN;
	dns_answer(arg, DNS_A, result, count, ttl, addresses);
}

static void
dns_aaaa_cb(int result, char type, int count, int ttl, void *addresses,
    void *arg)
{
	if (result == DNS_ERR_NONE && count > 0 && type != DNS_IPv6_AAAA)
		result = DNS_ERR_UNKNOWN;
	dns_answer(arg, DNS_AAAA, result, count, ttl, addresses);
}

static void
dns_lookup(struct dns_name *n)
{
	struct evdns_base *edns = n->dns->edns;

	dns_round_clear(n);
	n->waiting = DNS_A | DNS_AAAA;
	/* NULL: nothing was sent and nothing will call back. */
	if (evdns_base_resolve_ipv4(edns, n->host, 0, dns_a_cb, n) == NULL)
		dns_answer(n, DNS_A, DNS_ERR_UNKNOWN, 0, 0, NULL);
	if (n->gone || n->waiting == 0)
		return;
	if (evdns_base_resolve_ipv6(edns, n->host, 0, dns_aaaa_cb, n) == NULL)
		dns_answer(n, DNS_AAAA, DNS_ERR_UNKNOWN, 0, 0, NULL);
}

static void
dns_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct dns_name *n = arg;

	if (n->waiting == 0)
		dns_lookup(n);
}

static struct dns_name *
dns_name_new(struct dns *d, const struct conf_deployment *cd)
{
	struct dns_name *n;
	const char *colon = strrchr(cd->dns, ':');
	size_t hlen = (size_t)(colon - cd->dns);

	if ((n = calloc(1, sizeof(*n))) == NULL)
		return NULL;
	n->dns = d;
	n->ttl = -1;
	n->dep = strdup(cd->name);
	n->target = strdup(cd->dns);
	n->timer = evtimer_new(d->base, dns_timer_cb, n);
	if (n->dep == NULL || n->target == NULL || n->timer == NULL ||
	    hlen >= sizeof(n->host)) {
		dns_name_free(n);
		return NULL;
	}
	memcpy(n->host, cd->dns, hlen);
	snprintf(n->port, sizeof(n->port), "%s", colon + 1);
	n->wanted = 1;
	return n;
}

/* Stop looking it up; free it now, or when its last answer comes. */
static void
dns_name_retire(struct dns_name *n)
{
	evtimer_del(n->timer);
	if (n->waiting == 0)
		dns_name_free(n);
	else
		n->gone = 1;
}

static int
dns_resolver(struct dns *d, const struct conf *conf, char *err,
    size_t errlen)
{
	unsigned i;

	if (d->edns != NULL)
		return 0;
	d->edns = evdns_base_new(d->base, conf->nnameservers > 0 ? 0 :
	    EVDNS_BASE_INITIALIZE_NAMESERVERS);
	if (d->edns == NULL) {
		snprintf(err, errlen, "cannot set up the DNS resolver");
		return -1;
	}
	/* Name servers of our own: fail a lookup in about 4 s, not the 15
	 * of evdns's defaults; the name keeps its addresses meanwhile and
	 * the backoff retries.  (resolv.conf's options apply otherwise.) */
	if (conf->nnameservers > 0 &&
	    (evdns_base_set_option(d->edns, "timeout:", "2") != 0 ||
	    evdns_base_set_option(d->edns, "attempts:", "2") != 0)) {
		snprintf(err, errlen, "cannot set up the DNS resolver");
		return -1;
	}
	for (i = 0; i < conf->nnameservers; i++) {
		if (evdns_base_nameserver_ip_add(d->edns,
		    conf->nameservers[i]) != 0) {
			snprintf(err, errlen, "resolver.nameservers[%u]: "
			    "cannot use %s", i, conf->nameservers[i]);
			return -1;
		}
	}
	return 0;
}

static struct dns_name *
dns_find(struct dns *d, const char *dep)
{
	struct dns_name *n;

	for (n = d->names; n != NULL; n = n->next) {
		if (strcmp(n->dep, dep) == 0)
			return n;
	}
	return NULL;
}

int
dns_apply(struct dns *d, const struct conf *conf, char *err, size_t errlen)
{
	const struct conf_deployment *cd;
	struct dns_name *n, **pp, *fresh = NULL;
	unsigned i;

	for (n = d->names; n != NULL; n = n->next)
		n->wanted = 0;
	for (i = 0; i < conf->ndeployments; i++) {
		cd = &conf->deployments[i];
		if (cd->source != CONF_DNS)
			continue;
		if (dns_resolver(d, conf, err, errlen) == -1)
			return -1;
		if ((n = dns_find(d, cd->name)) != NULL &&
		    strcmp(n->target, cd->dns) == 0) {
			n->wanted = 1;
			continue;
		}
		if ((n = dns_name_new(d, cd)) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		n->next = fresh;
		fresh = n;
	}
	/* Old names not wanted (removed, or their "dns" changed) stop. */
	for (pp = &d->names; (n = *pp) != NULL;) {
		if (n->wanted) {
			pp = &n->next;
			continue;
		}
		*pp = n->next;
		dns_name_retire(n);
	}
	while ((n = fresh) != NULL) {
		fresh = n->next;
		n->next = d->names;
		d->names = n;
		log_info("dns %s: resolving %s", n->dep, n->target);
		dns_lookup(n);
	}
	return 0;
}
