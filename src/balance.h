/*
 * balance.h -- pick a replica: power of two choices on in-flight streams.
 *
 * Pure.  Two distinct candidates are drawn at random among those with a free
 * slot (load < cap); the less loaded wins.  With one candidate it is that
 * one; with none, -1.  Random draws from a caller-held xorshift state.
 */
#ifndef INGRESSD_BALANCE_H
#define INGRESSD_BALANCE_H

#include <stdint.h>

struct balance_cand {
	unsigned	 load;
	unsigned	 cap;
	int		 ready;
};

int		 balance_pick(const struct balance_cand *, unsigned n,
		    uint32_t *rng);
uint32_t	 balance_rand(uint32_t *rng);

#endif
