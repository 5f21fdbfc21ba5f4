/*
 * check_arena.c -- items built from split spans, closed empty or trimmed,
 * offsets that survive growth, reset keeping the memory.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

START_TEST(test_spans)
{
	struct arena a = { 0 };
	size_t x = 99, y = 99, z = 99;

	ck_assert_int_eq(arena_span(&a, &x, "GE", 2), 0);
	ck_assert_int_eq(arena_span(&a, &x, "T", 1), 0);
	ck_assert_int_eq(arena_close(&a, &x), 0);
	/* An item no span came for is empty, not missing. */
	ck_assert_int_eq(arena_close(&a, &y), 0);
	ck_assert_int_eq(arena_span(&a, &z, "/p", 2), 0);
	ck_assert_int_eq(arena_close(&a, &z), 0);
	ck_assert_str_eq(a.buf + x, "GET");
	ck_assert_str_eq(a.buf + y, "");
	ck_assert_str_eq(a.buf + z, "/p");
	ck_assert_uint_eq(a.len, 4 + 1 + 3);
	arena_free(&a);
	ck_assert_ptr_null(a.buf);
}
END_TEST

START_TEST(test_trim)
{
	struct arena a = { 0 };
	size_t v, w, e;

	arena_span(&a, &v, " \t a b", 6);
	arena_span(&a, &v, " \t", 2);
	ck_assert_int_eq(arena_close_trim(&a, &v), 0);
	arena_span(&a, &w, "   ", 3);
	ck_assert_int_eq(arena_close_trim(&a, &w), 0);
	ck_assert_int_eq(arena_close_trim(&a, &e), 0);
	ck_assert_str_eq(a.buf + v, "a b");
	ck_assert_str_eq(a.buf + w, "");
	ck_assert_str_eq(a.buf + e, "");
	/* Trailing blanks are given back; leading ones stay, skipped. */
	ck_assert_uint_eq(a.len, 7 + 1 + 1);
	arena_free(&a);
}
END_TEST

START_TEST(test_growth_and_reset)
{
	struct arena a = { 0 };
	char big[5000];
	size_t first, second;
	char *mem;

	memset(big, 'x', sizeof big);
	arena_span(&a, &first, "head", 4);
	arena_close(&a, &first);
	/* Growing moves the buffer: the offset still finds the item. */
	arena_span(&a, &second, big, sizeof big);
	arena_close(&a, &second);
	ck_assert_uint_ge(a.cap, a.len);
	ck_assert_str_eq(a.buf + first, "head");
	ck_assert_uint_eq(strlen(a.buf + second), sizeof big);
	ck_assert_int_eq(arena_reserve(&a, 1 << 16), 0);
	ck_assert_uint_ge(a.cap - a.len, 1 << 16);
	mem = a.buf;
	arena_reset(&a);
	ck_assert_uint_eq(a.len, 0);
	ck_assert_ptr_eq(a.buf, mem);
	arena_span(&a, &first, "next", 4);
	arena_close(&a, &first);
	ck_assert_uint_eq(first, 0);
	ck_assert_str_eq(a.buf, "next");
	arena_free(&a);
}
END_TEST

static Suite *
arena_suite(void)
{
	Suite	*s = suite_create("arena");
	TCase	*tc = tcase_create("arena");

	tcase_add_test(tc, test_spans);
	tcase_add_test(tc, test_trim);
	tcase_add_test(tc, test_growth_and_reset);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(arena_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
