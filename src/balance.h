/*
 * balance.h -- pick a replica: power of two choices on in-flight streams,
 * weighted and by priority level when the replicas differ.
 *
 * Pure.  balance_pick: two distinct candidates are drawn at random among
 * those with a free slot (load < cap); the less loaded wins.  With one
 * candidate it is that one; with none, -1.  Random draws from a
 * caller-held xorshift state.
 *
 * balance_pick_weighted, for replicas of unequal weight or priority
 * (DNS SRV records, registration, conf endpoints):
 * - the level: the lowest priority value that has a ready replica.  Only
 *   its replicas are candidates, busy or not: a level whose replicas are
 *   all full makes the request wait (-1, the handle queues it), it does
 *   not spill to a worse level.  A worse level carries traffic only while
 *   no better one has a ready replica (RFC 2782; Envoy's priority levels).
 * - within it, two distinct candidates with a free slot are drawn with
 *   probability proportional to weight, and the one with the lower
 *   load/weight wins (load_a * w_b against load_b * w_a: no division);
 *   a tie goes to the first drawn, so idle replicas share requests in
 *   proportion to their weights.
 * With every weight 1 and one priority it draws exactly what balance_pick
 * draws from the same state; callers still call balance_pick then, since
 * it does not read weight and priority (the hot path fills neither).
 */
#ifndef INGRESSD_BALANCE_H
#define INGRESSD_BALANCE_H

#include <stdint.h>

struct balance_cand {
	unsigned	 load;
	unsigned	 cap;
	int		 ready;
	uint32_t	 weight;	/* weighted: balance_weight()'s, >= 1 */
	unsigned	 priority;	/* weighted: lower is preferred */
};

/*
 * The weight balance uses for a replica's weight as configured (0..65535,
 * as in an SRV record): scaled so that weight 0 can still mean "a very
 * small share" (RFC 2782): 1/256 of a weight-1 replica of its level.
 */
#define BALANCE_WEIGHT_SCALE	256u

static inline uint32_t
balance_weight(unsigned weight)
{
	return weight != 0 ? (uint32_t)weight * BALANCE_WEIGHT_SCALE : 1;
}

int		 balance_pick(const struct balance_cand *, unsigned n,
		    uint32_t *rng);
int		 balance_pick_weighted(const struct balance_cand *,
		    unsigned n, uint32_t *rng);
uint32_t	 balance_rand(uint32_t *rng);

#endif
