/*
 * registry_publish.h -- how a worker publishes its live figures for one
 * endpoint into the registry.
 *
 * The registry owns struct ep_stats: one slot per worker in every endpoint
 * (reg_endpoint.stats), allocated and read (summed for the admin page and
 * /metrics) by registry.c.  Each slot is written only by its worker, through
 * these functions, with relaxed atomics: the hot path takes no lock and
 * shares no cache line.  They are inline so a publish costs what a store
 * costs.  Only the upstream edges (upstream*.c, hup*.c) include this
 * header.
 */
#ifndef INGRESSD_REGISTRY_PUBLISH_H
#define INGRESSD_REGISTRY_PUBLISH_H

#include <stdatomic.h>
#include <stdint.h>

#include "registry.h"

struct ep_stats {
	_Atomic int	 state;		/* enum reg_estate */
	_Atomic int	 in_flight;
	_Atomic uint64_t requests;
	_Atomic uint64_t pings;
	_Atomic uint64_t pongs;
	_Atomic uint64_t missed_pongs;	/* ping intervals that ended with
					 * the PING still unanswered */
	_Atomic uint64_t health_passed;	/* http: active checks */
	_Atomic uint64_t health_failed;
	_Atomic int	 conns_open;	/* http: the keep-alive pool */
	_Atomic int	 conns_idle;
	char		 pad[16];	/* keep workers' slots apart */
};

/* This worker's slot in ep, for the publish calls below. */
static inline struct ep_stats *
registry_ep_slot(struct reg_endpoint *ep, unsigned worker)
{
	return &ep->stats[worker];
}

static inline void
registry_publish_estate(struct ep_stats *s, enum reg_estate st)
{
	atomic_store_explicit(&s->state, (int)st, memory_order_relaxed);
}

static inline void
registry_publish_in_flight(struct ep_stats *s, unsigned n)
{
	atomic_store_explicit(&s->in_flight, (int)n, memory_order_relaxed);
}

/* Only the owner writes a slot: a plain add published with a store. */
static inline void
registry_ep_count(_Atomic uint64_t *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) +
	    1, memory_order_relaxed);
}

static inline void
registry_count_request(struct ep_stats *s)
{
	registry_ep_count(&s->requests);
}

static inline void
registry_count_ping(struct ep_stats *s)
{
	registry_ep_count(&s->pings);
}

static inline void
registry_count_pong(struct ep_stats *s)
{
	registry_ep_count(&s->pongs);
}

static inline void
registry_count_missed_pong(struct ep_stats *s)
{
	registry_ep_count(&s->missed_pongs);
}

static inline void
registry_count_health(struct ep_stats *s, int passed)
{
	registry_ep_count(passed ? &s->health_passed : &s->health_failed);
}

static inline void
registry_publish_conns(struct ep_stats *s, unsigned open, unsigned idle)
{
	atomic_store_explicit(&s->conns_open, (int)open, memory_order_relaxed);
	atomic_store_explicit(&s->conns_idle, (int)idle, memory_order_relaxed);
}

#endif
