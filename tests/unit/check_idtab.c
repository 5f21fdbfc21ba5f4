/*
 * check_idtab.c -- unit tests for the id to pointer table: lookups after
 * growth, deletion inside probe runs (checked against a plain reference
 * array under a random workload), the stream pattern of a long-lived
 * connection, popping everything, and reserve.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "idtab.h"

#define NREF	4096

/* A value for id that is never NULL. */
static void *
V(uint32_t id)
{
	return (void *)((uintptr_t)id * 2 + 1);
}

START_TEST(test_empty)
{
	struct idtab t;
	uint32_t id = 7;

	memset(&t, 0, sizeof t);
	ck_assert_ptr_null(idtab_get(&t, 0));
	ck_assert_ptr_null(idtab_del(&t, 1));
	ck_assert_ptr_null(idtab_pop(&t, &id));
	ck_assert_uint_eq(id, 7);
	ck_assert_uint_eq(idtab_count(&t), 0);
	idtab_clear(&t);
}
END_TEST

START_TEST(test_put_get_grow)
{
	struct idtab t;
	uint32_t i;

	memset(&t, 0, sizeof t);
	for (i = 1; i <= 10000; i++)
		ck_assert_int_eq(idtab_put(&t, i * 7919u, V(i)), 0);
	ck_assert_uint_eq(idtab_count(&t), 10000);
	for (i = 1; i <= 10000; i++)
		ck_assert_ptr_eq(idtab_get(&t, i * 7919u), V(i));
	ck_assert_ptr_null(idtab_get(&t, 3));
	ck_assert_ptr_null(idtab_get(&t, UINT32_MAX));
	idtab_clear(&t);
	ck_assert_uint_eq(idtab_count(&t), 0);
	ck_assert_ptr_null(idtab_get(&t, 7919u));
}
END_TEST

/* Random puts and deletes over a small id space: every id's presence
 * must match the reference after every step (probe runs collide a lot). */
START_TEST(test_random_against_reference)
{
	static void *ref[NREF];
	struct idtab t;
	unsigned step, n = 0;
	uint32_t id;

	memset(&t, 0, sizeof t);
	memset(ref, 0, sizeof ref);
	srand(12345);
	for (step = 0; step < 200000; step++) {
		id = (uint32_t)rand() % NREF;
		if (ref[id] == NULL && rand() % 3 != 0) {
			ck_assert_int_eq(idtab_put(&t, id, V(id)), 0);
			ref[id] = V(id);
			n++;
		} else if (ref[id] != NULL) {
			ck_assert_ptr_eq(idtab_del(&t, id), ref[id]);
			ref[id] = NULL;
			n--;
		} else
			ck_assert_ptr_null(idtab_del(&t, id));
		ck_assert_uint_eq(idtab_count(&t), n);
		if (step % 1000 == 0)
			for (id = 0; id < NREF; id++)
				ck_assert_ptr_eq(idtab_get(&t, id), ref[id]);
	}
	for (id = 0; id < NREF; id++)
		ck_assert_ptr_eq(idtab_get(&t, id), ref[id]);
	idtab_clear(&t);
}
END_TEST

/* A connection: ids increase, a few streams stay open for long. */
START_TEST(test_stream_pattern)
{
	struct idtab t;
	uint32_t id;

	memset(&t, 0, sizeof t);
	ck_assert_int_eq(idtab_put(&t, 1, V(1)), 0);	/* long-lived */
	for (id = 100; id < 1000000; id++) {
		ck_assert_int_eq(idtab_put(&t, id, V(id)), 0);
		if (id >= 150)
			ck_assert_ptr_eq(idtab_del(&t, id - 50), V(id - 50));
	}
	ck_assert_ptr_eq(idtab_get(&t, 1), V(1));
	ck_assert_uint_eq(idtab_count(&t), 51);
	/* Deleting never needs a rehash: the table stayed small. */
	ck_assert_uint_le(t.size, 128);
	idtab_clear(&t);
}
END_TEST

/* Pop everything, deleting other entries between pops as a handler may. */
START_TEST(test_pop_all)
{
	static unsigned char seen[3000];
	struct idtab t;
	uint32_t id, got = 0;
	void *v;

	memset(&t, 0, sizeof t);
	memset(seen, 0, sizeof seen);
	for (id = 0; id < 3000; id++)
		ck_assert_int_eq(idtab_put(&t, id, V(id)), 0);
	while ((v = idtab_pop(&t, &id)) != NULL) {
		ck_assert_ptr_eq(v, V(id));
		ck_assert(!seen[id]);
		seen[id] = 1;
		got++;
		if (id % 2 == 0 && id + 1 < 3000 && !seen[id + 1] &&
		    idtab_del(&t, id + 1) != NULL) {
			seen[id + 1] = 1;
			got++;
		}
	}
	ck_assert_uint_eq(got, 3000);
	ck_assert_uint_eq(idtab_count(&t), 0);
	ck_assert_ptr_null(idtab_get(&t, 5));
	idtab_clear(&t);
}
END_TEST

START_TEST(test_reserve)
{
	struct idtab t;
	struct idtab_slot *slots;
	uint32_t id;

	memset(&t, 0, sizeof t);
	ck_assert_int_eq(idtab_reserve(&t, 100), 0);
	slots = t.slots;
	for (id = 0; id < 100; id++)
		ck_assert_int_eq(idtab_put(&t, id, V(id)), 0);
	ck_assert_ptr_eq(t.slots, slots);	/* no growth after reserve */
	ck_assert_int_eq(idtab_reserve(&t, SIZE_MAX), -1);
	for (id = 0; id < 100; id++)
		ck_assert_ptr_eq(idtab_get(&t, id), V(id));
	idtab_clear(&t);
}
END_TEST

static Suite *
idtab_suite(void)
{
	Suite *s = suite_create("idtab");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_put_get_grow);
	tcase_add_test(tc, test_random_against_reference);
	tcase_add_test(tc, test_stream_pattern);
	tcase_add_test(tc, test_pop_all);
	tcase_add_test(tc, test_reserve);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(idtab_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
