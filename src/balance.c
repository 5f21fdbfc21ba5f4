/*
 * balance.c -- power of two choices (see balance.h).
 */
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
