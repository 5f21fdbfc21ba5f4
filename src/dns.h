/*
 * dns.h -- "dns" deployments: every address of a DNS name is a replica.
 *
 * Runs on the main thread with libevent's evdns.  Each name is looked up
 * for A and AAAA together; when both answered, the addresses (with the
 * deployment's port) go to the registry, which pushes a change to the
 * workers only when the set differs.  The name is looked up again when
 * the answer's TTL runs out (at least DNS_MIN_TTL, at most DNS_MAX_TTL
 * seconds; an answer without addresses is asked again after
 * DNS_NEGATIVE_TTL).  Only a definite answer changes the set: a lookup
 * that failed (timeout, server failure) keeps the addresses the name had
 * and is retried with a backoff, so a flaky DNS server never empties a
 * deployment.
 *
 * libevent 2.1 has no SRV lookup: ports come from the conf, not from DNS.
 */
#ifndef INGRESSD_DNS_H
#define INGRESSD_DNS_H

#include <stddef.h>

#define DNS_MIN_TTL		1
#define DNS_MAX_TTL		300
#define DNS_NEGATIVE_TTL	5
#define DNS_MAX_BACKOFF		30

struct conf;
struct dns;
struct event_base;
struct registry;

struct dns	*dns_new(struct event_base *, struct registry *);
/*
 * Follow the conf's dns deployments (start and reload): a new name (or a
 * new "dns" value) is looked up now, an unchanged one keeps its schedule,
 * a removed one stops.  The resolver (conf "resolver", else
 * /etc/resolv.conf) is set up on the first dns deployment and kept until
 * exit.  -1 and err when it cannot be set up.
 */
int		 dns_apply(struct dns *, const struct conf *, char *err,
		    size_t errlen);
/* After the main loop has stopped: no callback runs after this. */
void		 dns_free(struct dns *);

#endif
