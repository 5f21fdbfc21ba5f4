/*
 * check_balance.c -- balance_pick: power of two choices over candidates
 * with a free slot; none, one, all full, not ready, ties, and that the
 * less loaded of the two drawn always wins.
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
}

START_TEST(test_none)
{
	struct balance_cand c[3] = { { 0, 0, 0 } };
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
