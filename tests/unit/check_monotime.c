/*
 * check_monotime.c -- monotonic seconds: never go back, follow real
 * sleeps, and the coarse clock stays within a tick of the fine one.
 */
#include <check.h>
#include <stdlib.h>
#include <time.h>

#include "monotime.h"

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

START_TEST(test_monotonic)
{
	double a, b;
	int i;

	a = monotime_now();
	ck_assert(a > 0);
	for (i = 0; i < 100000; i++) {
		b = monotime_now();
		ck_assert(b >= a);
		a = b;
	}
}
END_TEST

START_TEST(test_follows_sleep)
{
	double a, d;

	a = monotime_now();
	sleep_ms(50);
	d = monotime_now() - a;
	ck_assert_msg(d >= 0.049 && d < 2, "slept 50 ms, measured %.4f", d);
}
END_TEST

/* Same clock, coarser grain: never ahead of the fine one by more than a
 * tick, never behind by much. */
START_TEST(test_coarse)
{
	double c, n, prev = 0;
	int i;

	for (i = 0; i < 1000; i++) {
		c = monotime_coarse();
		n = monotime_now();
		ck_assert(c >= prev);
		ck_assert_msg(n - c > -0.001 && n - c < 0.1, "now %.6f coarse %.6f",
		    n, c);
		prev = c;
	}
	sleep_ms(30);
	ck_assert(monotime_coarse() - prev >= 0.02);
}
END_TEST

static Suite *
monotime_suite(void)
{
	Suite	*s = suite_create("monotime");
	TCase	*tc = tcase_create("monotime");

	tcase_add_test(tc, test_monotonic);
	tcase_add_test(tc, test_follows_sleep);
	tcase_add_test(tc, test_coarse);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(monotime_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
