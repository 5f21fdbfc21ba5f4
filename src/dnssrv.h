/*
 * dnssrv.h -- "dns_srv" deployments: every target of a DNS SRV name is a
 * replica (Kubernetes headless services, Consul's DNS interface).
 *
 * Runs on the main thread with c-ares, driven by the main event loop (its
 * sockets and its timeout are libevent events; nothing blocks, no thread).
 * A round is one SRV query, then one ares_getaddrinfo (A and AAAA) per
 * target of every record; when every lookup of the round has answered,
 * the addresses with each record's port, priority and weight go to the
 * registry through registry_set_addresses(), as dns deployments do, which
 * pushes a change to the workers only when the set differs.  c-ares 1.18
 * gives SRV records without their TTL, so a name is looked up again every
 * resolver.srv_interval seconds.
 *
 * Only a definite answer changes the set: no such name (NXDOMAIN) or no
 * SRV record empties the deployment (its requests get a 503 saying no
 * replica is ready) and is logged; a failed lookup (timeout, server
 * failure), of the SRV name or of any target, keeps the addresses the
 * deployment had and is retried with a backoff (up to DNS_MAX_BACKOFF).
 *
 * Priority and weight are the replica's share of the deployment
 * (registry.h struct reg_share): the balancer sends requests only to the
 * best priority that has a ready replica, in proportion to weight within
 * it (weight 0: a very small share), so a backup takes over as soon as
 * the better targets are down, not once DNS stops listing them (RFC 2782
 * leaves that to the client).  Two records naming one address are one
 * replica: the better priority's, weights of equal priorities added.
 */
#ifndef INGRESSD_DNSSRV_H
#define INGRESSD_DNSSRV_H

#include <stddef.h>

struct conf;
struct dnssrv;
struct event_base;
struct registry;

struct dnssrv	*dnssrv_new(struct event_base *, struct registry *);
/*
 * Follow the conf's dns_srv deployments (start and reload): a new name is
 * looked up now, an unchanged one keeps its schedule (a new srv_interval
 * applies from its next round), a removed one stops.  The resolver (conf
 * "resolver", else /etc/resolv.conf) is set up on the first dns_srv
 * deployment and kept until exit.  -1 and err when it cannot be set up.
 */
int		 dnssrv_apply(struct dnssrv *, const struct conf *, char *err,
		    size_t errlen);
/* After the main loop has stopped: no callback runs after this. */
void		 dnssrv_free(struct dnssrv *);

#endif
