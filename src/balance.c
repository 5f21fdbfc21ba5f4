/*
 * balance.c -- power of two choices, plain and weighted (see balance.h).
 */
#include <limits.h>

#include "balance.h"

uint32_t
balance_rand(uint32_t *rng)
{
	uint32_t x = *rng ? *rng : 0x9e3779b9u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *rng = x;
}

static int
balance_free_slot(const struct balance_cand *c)
{
	return c->ready && c->load < c->cap;
}

int
balance_pick(const struct balance_cand *c, unsigned n, uint32_t *rng)
{
	unsigned i, nfree = 0, a, b, k;
	int first = -1, ia = -1, ib = -1;

	for (i = 0; i < n; i++) {
		if (balance_free_slot(&c[i])) {
			if (first == -1)
				first = (int)i;
			nfree++;
		}
	}
	if (nfree <= 1)
		return first;
	/* Draw two distinct ranks among the free candidates. */
	a = balance_rand(rng) % nfree;
	b = balance_rand(rng) % (nfree - 1);
	if (b >= a)
		b++;
	for (i = 0, k = 0; i < n; i++) {
		if (!balance_free_slot(&c[i]))
			continue;
		if (k == a)
			ia = (int)i;
		if (k == b)
			ib = (int)i;
		k++;
	}
	return c[ib].load < c[ia].load ? ib : ia;
}

/* Weights are >= 1 by contract; a 0 would divide by zero below. */
static uint64_t
balance_w(const struct balance_cand *c)
{
	return c->weight != 0 ? c->weight : 1;
}

/* A draw in [0, total): one 32-bit draw, two for a sum beyond it. */
static uint64_t
balance_rand_below(uint32_t *rng, uint64_t total)
{
	uint64_t r = balance_rand(rng);

	if (total > UINT32_MAX)
		r = r << 32 | balance_rand(rng);
	return r % total;
}

/* The candidate of level prio (free slot, not skip) at weight offset r. */
static int
balance_at(const struct balance_cand *c, unsigned n, unsigned prio, int skip,
    uint64_t r)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		if ((int)i == skip || c[i].priority != prio ||
		    !balance_free_slot(&c[i]))
			continue;
		if (r < balance_w(&c[i]))
			return (int)i;
		r -= balance_w(&c[i]);
	}
	return -1;	/* not reached: r < the level's free weight */
}

int
balance_pick_weighted(const struct balance_cand *c, unsigned n,
    uint32_t *rng)
{
	unsigned i, level = UINT_MAX, nfree = 0;
	uint64_t total = 0;
	int first = -1, ia, ib;

	/* Ready, busy or not: a busy better level waits, it never spills. */
	for (i = 0; i < n; i++) {
		if (c[i].ready && c[i].priority < level)
			level = c[i].priority;
	}
	for (i = 0; i < n; i++) {
		if (c[i].priority != level || !balance_free_slot(&c[i]))
			continue;
		if (first == -1)
			first = (int)i;
		nfree++;
		total += balance_w(&c[i]);
	}
	if (nfree <= 1)
		return first;
	ia = balance_at(c, n, level, -1, balance_rand_below(rng, total));
	ib = balance_at(c, n, level, ia, balance_rand_below(rng,
	    total - balance_w(&c[ia])));
	return (uint64_t)c[ib].load * balance_w(&c[ia]) <
	    (uint64_t)c[ia].load * balance_w(&c[ib]) ? ib : ia;
}
