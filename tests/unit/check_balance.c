/*
 * check_balance.c -- balance_pick: power of two choices over candidates
 * with a free slot; none, one, all full, not ready, ties, and that the
 * less loaded of the two drawn always wins.  balance_pick_weighted: shares
 * in proportion to weight (weight 0 a small one), load per weight,
 * priority failover without spilling, and that weights 1 on one level
 * draw exactly what balance_pick draws.
 */
#include <check.h>
#include <stdlib.h>

#include "balance.h"

#define NDRAWS	2000

static void
cand(struct balance_cand *c, unsigned load, unsigned cap, int ready)
{
	c->load = load;
	c->cap = cap;
	c->ready = ready;
	c->weight = 1;
	c->priority = 0;
}

static void
wcand(struct balance_cand *c, unsigned load, unsigned weight,
    unsigned priority)
{
	cand(c, load, 100, 1);
	c->weight = balance_weight(weight);
	c->priority = priority;
}

START_TEST(test_none)
{
	struct balance_cand c[3] = { { 0, 0, 0, 1, 0 } };
	uint32_t rng = 1;

	ck_assert_int_eq(balance_pick(c, 0, &rng), -1);
	cand(&c[0], 4, 4, 1);		/* full */
	cand(&c[1], 9, 4, 1);		/* over cap (after a reload) */
	cand(&c[2], 0, 4, 0);		/* not ready */
	ck_assert_int_eq(balance_pick(c, 3, &rng), -1);
	cand(&c[0], 0, 0, 1);		/* no slot at all */
	ck_assert_int_eq(balance_pick(c, 1, &rng), -1);
}
END_TEST

START_TEST(test_one_free)
{
	struct balance_cand c[4];
	uint32_t rng = 7;
	int i;

	cand(&c[0], 4, 4, 1);
	cand(&c[1], 0, 4, 0);
	cand(&c[2], 3, 4, 1);		/* the only free slot, though loaded */
	cand(&c[3], 5, 4, 1);
	for (i = 0; i < 50; i++)
		ck_assert_int_eq(balance_pick(c, 4, &rng), 2);
}
END_TEST

/* Two free candidates: both are always drawn, so the lighter always wins. */
START_TEST(test_two_lighter_wins)
{
	struct balance_cand c[2];
	uint32_t rng = 3;
	int i;

	cand(&c[0], 5, 10, 1);
	cand(&c[1], 2, 10, 1);
	for (i = 0; i < NDRAWS; i++)
		ck_assert_int_eq(balance_pick(c, 2, &rng), 1);
	cand(&c[0], 1, 10, 1);
	for (i = 0; i < NDRAWS; i++)
		ck_assert_int_eq(balance_pick(c, 2, &rng), 0);
}
END_TEST

/* Equal loads: either may win, never a full one, and both do win. */
START_TEST(test_ties)
{
	struct balance_cand c[3];
	unsigned hits[3] = { 0, 0, 0 };
	uint32_t rng = 11;
	int i, k;

	cand(&c[0], 2, 4, 1);
	cand(&c[1], 4, 4, 1);		/* full: never */
	cand(&c[2], 2, 4, 1);
	for (i = 0; i < NDRAWS; i++) {
		k = balance_pick(c, 3, &rng);
		ck_assert(k == 0 || k == 2);
		hits[k]++;
	}
	ck_assert_uint_eq(hits[1], 0);
	ck_assert_uint_gt(hits[0], NDRAWS / 4);
	ck_assert_uint_gt(hits[2], NDRAWS / 4);
}
END_TEST

/*
 * Many candidates: the pick is never the most loaded of the free ones
 * (it loses every pair it is drawn in), never a full or unready one, and
 * every other free candidate gets picked sometimes.
 */
START_TEST(test_many)
{
	struct balance_cand c[8];
	unsigned hits[8] = { 0 };
	uint32_t rng = 12345;
	int i, k;

	for (i = 0; i < 8; i++)
		cand(&c[i], (unsigned)i, 8, 1);	/* load i; 7 is the heaviest */
	c[3].ready = 0;
	c[5].load = 8;				/* full */
	for (i = 0; i < NDRAWS * 5; i++) {
		k = balance_pick(c, 8, &rng);
		ck_assert_int_ge(k, 0);
		ck_assert_int_lt(k, 8);
		hits[k]++;
	}
	ck_assert_uint_eq(hits[3], 0);
	ck_assert_uint_eq(hits[5], 0);
	ck_assert_uint_eq(hits[7], 0);
	for (i = 0; i < 7; i++) {
		if (i != 3 && i != 5)
			ck_assert_msg(hits[i] > 0, "candidate %d never picked", i);
	}
	/* Lighter candidates win more often than heavier ones. */
	ck_assert_uint_gt(hits[0], hits[6]);
}
END_TEST

/*
 * Idle replicas (every load 0) of weights 1, 2, 3, 4: shares of 10, 20,
 * 30 and 40 % over 20,000 picks, within 2 points (a binomial's standard
 * deviation here is at most 0.35 points).  Ignoring the weights gives 25 %
 * each, far outside.
 */
START_TEST(test_weighted_shares)
{
	struct balance_cand c[4];
	unsigned hits[4] = { 0 }, i, n = 20000;
	uint32_t rng = 99;
	double share;
	int k;

	for (i = 0; i < 4; i++)
		wcand(&c[i], 0, i + 1, 0);
	for (i = 0; i < n; i++) {
		k = balance_pick_weighted(c, 4, &rng);
		ck_assert_int_ge(k, 0);
		hits[k]++;
	}
	for (i = 0; i < 4; i++) {
		share = (double)hits[i] / n;
		ck_assert_msg(share > (i + 1) / 10.0 - 0.02 &&
		    share < (i + 1) / 10.0 + 0.02, "weight %u: share %.3f",
		    i + 1, share);
	}
}
END_TEST

/* Weight 0 (an SRV record's) gets a small share, not none: 1/257 next to
 * a weight 1 when idle. */
START_TEST(test_weight_zero_small)
{
	struct balance_cand c[2];
	unsigned hits[2] = { 0, 0 }, i, n = 20000;
	uint32_t rng = 5;

	wcand(&c[0], 0, 0, 0);
	wcand(&c[1], 0, 1, 0);
	for (i = 0; i < n; i++)
		hits[balance_pick_weighted(c, 2, &rng)]++;
	ck_assert_uint_gt(hits[0], 0);
	ck_assert_uint_lt(hits[0], n / 50);
	/* A level of weight-0 replicas only shares evenly. */
	wcand(&c[1], 0, 0, 0);
	hits[0] = hits[1] = 0;
	for (i = 0; i < n; i++)
		hits[balance_pick_weighted(c, 2, &rng)]++;
	ck_assert_uint_gt(hits[0], n * 45 / 100);
	ck_assert_uint_gt(hits[1], n * 45 / 100);
}
END_TEST

/* Two candidates are both drawn every time: the lower load per weight
 * always wins (3 in flight on weight 3 beats 2 on weight 1). */
START_TEST(test_weighted_load_per_weight)
{
	struct balance_cand c[2];
	uint32_t rng = 17;
	int i;

	wcand(&c[0], 2, 1, 0);
	wcand(&c[1], 3, 3, 0);
	for (i = 0; i < NDRAWS; i++)
		ck_assert_int_eq(balance_pick_weighted(c, 2, &rng), 1);
	c[1].load = 7;			/* 7/3 > 2/1 */
	for (i = 0; i < NDRAWS; i++)
		ck_assert_int_eq(balance_pick_weighted(c, 2, &rng), 0);
	/* Large figures, no overflow: 3999999999/16776959 is a hair more
	 * than 4000000000/16776960 (65535 * 256), so the heavier load wins. */
	cand(&c[0], 4000000000u, 4000000001u, 1);
	cand(&c[1], 3999999999u, 4000000001u, 1);
	c[0].weight = 16776960;
	c[1].weight = 16776959;
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(balance_pick_weighted(c, 2, &rng), 0);
}
END_TEST

/*
 * Priority: the best level with a ready replica takes everything; a
 * backup only while none of it is ready; a busy best level waits (-1)
 * rather than spill.
 */
START_TEST(test_priority_failover)
{
	struct balance_cand c[4];
	uint32_t rng = 23;
	int i;

	wcand(&c[0], 0, 1, 10);		/* backup */
	wcand(&c[1], 5, 1, 0);		/* best, loaded */
	wcand(&c[2], 0, 9, 20);		/* worse backup, heavy weight */
	wcand(&c[3], 9, 1, 0);		/* best, more loaded */
	for (i = 0; i < NDRAWS; i++) {
		int k = balance_pick_weighted(c, 4, &rng);

		ck_assert(k == 1 || k == 3);
	}
	c[1].ready = c[3].ready = 0;	/* the best level is gone */
	for (i = 0; i < NDRAWS; i++)
		ck_assert_int_eq(balance_pick_weighted(c, 4, &rng), 0);
	c[0].ready = 0;
	for (i = 0; i < NDRAWS; i++)
		ck_assert_int_eq(balance_pick_weighted(c, 4, &rng), 2);
	/* Back: the best level is ready but full: wait, no spill. */
	c[0].ready = c[1].ready = c[3].ready = 1;
	c[1].load = c[1].cap;
	c[3].load = c[3].cap + 1;	/* over cap after a reload */
	ck_assert_int_eq(balance_pick_weighted(c, 4, &rng), -1);
	c[3].load = 0;
	ck_assert_int_eq(balance_pick_weighted(c, 4, &rng), 3);
	/* None ready at all. */
	for (i = 0; i < 4; i++)
		c[i].ready = 0;
	ck_assert_int_eq(balance_pick_weighted(c, 4, &rng), -1);
	ck_assert_int_eq(balance_pick_weighted(c, 0, &rng), -1);
}
END_TEST

/* Weights 1 on one level: the same picks as balance_pick from the same
 * state, loads and full or unready candidates included. */
START_TEST(test_weighted_equal_is_plain)
{
	struct balance_cand c[8];
	uint32_t r1 = 4242, r2 = 4242;
	int i;

	for (i = 0; i < 8; i++)
		cand(&c[i], (unsigned)(i * 7 % 5), 4, i != 2);
	c[6].load = 4;
	for (i = 0; i < NDRAWS * 5; i++) {
		ck_assert_int_eq(balance_pick_weighted(c, 8, &r1),
		    balance_pick(c, 8, &r2));
		c[i % 8].load = (c[i % 8].load + 1) % 5;
	}
	ck_assert_uint_eq(r1, r2);
}
END_TEST

/* A level whose weights sum past 2^32 still draws over all of it. */
START_TEST(test_weighted_big_sum)
{
	struct balance_cand c[4];
	unsigned hits[4] = { 0 }, i;
	uint32_t rng = 77;

	for (i = 0; i < 4; i++) {
		cand(&c[i], 0, 10, 1);
		c[i].weight = 0x7fffffffu;
	}
	for (i = 0; i < 4000; i++)
		hits[balance_pick_weighted(c, 4, &rng)]++;
	for (i = 0; i < 4; i++)
		ck_assert_uint_gt(hits[i], 800);
}
END_TEST

START_TEST(test_rand)
{
	uint32_t a = 0, b = 0, x, y;
	int i;

	/* A zero state is seeded, not stuck at zero. */
	x = balance_rand(&a);
	ck_assert_uint_ne(x, 0);
	ck_assert_uint_eq(a, x);
	/* Deterministic for one state, and it moves. */
	for (i = 0; i < 100; i++) {
		y = balance_rand(&b);
		ck_assert_uint_ne(y, 0);
		if (i == 0)
			ck_assert_uint_eq(y, x);
	}
	ck_assert_uint_ne(b, x);
}
END_TEST

static Suite *
balance_suite(void)
{
	Suite	*s = suite_create("balance");
	TCase	*tc = tcase_create("balance");

	tcase_add_test(tc, test_none);
	tcase_add_test(tc, test_one_free);
	tcase_add_test(tc, test_two_lighter_wins);
	tcase_add_test(tc, test_ties);
	tcase_add_test(tc, test_many);
	tcase_add_test(tc, test_weighted_shares);
	tcase_add_test(tc, test_weight_zero_small);
	tcase_add_test(tc, test_weighted_load_per_weight);
	tcase_add_test(tc, test_priority_failover);
	tcase_add_test(tc, test_weighted_equal_is_plain);
	tcase_add_test(tc, test_weighted_big_sum);
	tcase_add_test(tc, test_rand);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(balance_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
