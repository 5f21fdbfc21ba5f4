/*
 * check_deadline.c -- deadlines on a real event_base: one fires once when
 * due; moved later it fires early, re-arms and then expires; moved
 * earlier it fires at the earlier time; cleared or deleted it does not
 * expire.  Times are loose (tens of milliseconds) for a loaded machine.
 */
#include <check.h>
#include <stdlib.h>
#include <time.h>

#include <event2/event.h>

#include "deadline.h"
#include "monotime.h"

struct probe {
	struct deadline	 d;
	struct event_base *base;
	int		 calls;		/* callback runs */
	int		 expired;	/* runs where deadline_expired() said 1 */
	double		 t_expired;
};

static double t0;

static void
probe_cb(evutil_socket_t fd, short what, void *arg)
{
	struct probe *p = arg;

	p->calls++;
	if (deadline_expired(&p->d)) {
		p->expired++;
		p->t_expired = monotime_now() - t0;
	}
}

static void
probe_init(struct probe *p)
{
	p->base = event_base_new();
	ck_assert_ptr_nonnull(p->base);
	p->calls = p->expired = 0;
	p->t_expired = -1;
	deadline_init(&p->d, p->base, probe_cb, p);
	t0 = monotime_now();
}

/* Run the loop for secs: bounded whatever the deadline does. */
static void
probe_run(struct probe *p, double secs)
{
	struct timeval tv;

	tv.tv_sec = (time_t)secs;
	tv.tv_usec = (suseconds_t)((secs - (double)tv.tv_sec) * 1e6);
	event_base_loopexit(p->base, &tv);
	event_base_dispatch(p->base);
}

static void
probe_free(struct probe *p)
{
	deadline_del(&p->d);
	event_base_free(p->base);
}

START_TEST(test_fires_once)
{
	struct probe p;

	probe_init(&p);
	deadline_set(&p.d, 0.05);
	probe_run(&p, 0.3);
	ck_assert_int_eq(p.expired, 1);
	ck_assert_int_eq(p.calls, 1);
	ck_assert_msg(p.t_expired >= 0.045 && p.t_expired < 0.25, "at %.3f",
	    p.t_expired);
	probe_free(&p);
}
END_TEST

/* Pushed later: no new heap entry; the first firing re-arms. */
START_TEST(test_moved_later)
{
	struct probe p;

	probe_init(&p);
	deadline_set(&p.d, 0.03);
	ck_assert(p.d.armed > 0);
	deadline_set(&p.d, 0.15);
	ck_assert(p.d.armed < p.d.due);		/* timer left where it was */
	probe_run(&p, 0.5);
	ck_assert_int_eq(p.expired, 1);
	ck_assert_int_eq(p.calls, 2);		/* early + real */
	ck_assert_msg(p.t_expired >= 0.145 && p.t_expired < 0.45, "at %.3f",
	    p.t_expired);
	probe_free(&p);
}
END_TEST

START_TEST(test_moved_earlier)
{
	struct probe p;

	probe_init(&p);
	deadline_set(&p.d, 5);
	deadline_set(&p.d, 0.03);
	probe_run(&p, 0.4);
	ck_assert_int_eq(p.expired, 1);
	ck_assert_msg(p.t_expired < 0.3, "at %.3f", p.t_expired);
	probe_free(&p);
}
END_TEST

/* Progress keeps pushing it: it expires only after the pushes stop. */
static void
push_cb(evutil_socket_t fd, short what, void *arg)
{
	struct probe *p = arg;

	if (monotime_now() - t0 < 0.2)
		deadline_set(&p->d, 0.05);
}

START_TEST(test_pushed_repeatedly)
{
	struct probe p;
	struct event *tick;
	struct timeval tv = { 0, 10000 };

	probe_init(&p);
	tick = event_new(p.base, -1, EV_PERSIST, push_cb, &p);
	event_add(tick, &tv);
	deadline_set(&p.d, 0.05);
	probe_run(&p, 0.6);
	ck_assert_int_eq(p.expired, 1);
	ck_assert_msg(p.t_expired >= 0.2 && p.t_expired < 0.55, "at %.3f",
	    p.t_expired);
	event_free(tick);
	probe_free(&p);
}
END_TEST

START_TEST(test_cleared)
{
	struct probe p;

	probe_init(&p);
	deadline_set(&p.d, 0.03);
	deadline_clear(&p.d);
	probe_run(&p, 0.15);
	ck_assert_int_eq(p.expired, 0);
	ck_assert_int_le(p.calls, 1);	/* may fire, must not expire */
	/* Set again after a clear: it works. */
	deadline_set(&p.d, 0.03);
	probe_run(&p, 0.2);
	ck_assert_int_eq(p.expired, 1);
	probe_free(&p);
}
END_TEST

START_TEST(test_deleted)
{
	struct probe p;

	probe_init(&p);
	deadline_set(&p.d, 0.03);
	deadline_del(&p.d);
	probe_run(&p, 0.15);
	ck_assert_int_eq(p.calls, 0);
	ck_assert(p.d.due == 0 && p.d.armed == 0);
	probe_free(&p);
}
END_TEST

START_TEST(test_zero)
{
	struct probe p;

	probe_init(&p);
	deadline_set(&p.d, 0);
	probe_run(&p, 0.1);
	ck_assert_int_eq(p.expired, 1);
	probe_free(&p);
}
END_TEST

static Suite *
deadline_suite(void)
{
	Suite	*s = suite_create("deadline");
	TCase	*tc = tcase_create("deadline");

	tcase_add_test(tc, test_fires_once);
	tcase_add_test(tc, test_moved_later);
	tcase_add_test(tc, test_moved_earlier);
	tcase_add_test(tc, test_pushed_repeatedly);
	tcase_add_test(tc, test_cleared);
	tcase_add_test(tc, test_deleted);
	tcase_add_test(tc, test_zero);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(deadline_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
