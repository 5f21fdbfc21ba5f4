/*
 * check_b64.c -- base64 as etcd's gateway writes it: RFC 4648 vectors,
 * bytes with NUL (a range's "next key" ends in one), and bad input.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"

START_TEST(test_vectors)
{
	static const char *const v[][2] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" },
		{ "foo", "Zm9v" }, { "foob", "Zm9vYg==" },
		{ "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
		{ "/ingressd/deployments/", "L2luZ3Jlc3NkL2RlcGxveW1lbnRzLw==" },
	};
	size_t i, n;
	char *e, *d;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		e = b64_encode(v[i][0], strlen(v[i][0]));
		ck_assert_str_eq(e, v[i][1]);
		d = b64_decode(e, &n);
		ck_assert_ptr_nonnull(d);
		ck_assert_uint_eq(n, strlen(v[i][0]));
		ck_assert_str_eq(d, v[i][0]);
		free(e);
		free(d);
	}
}
END_TEST

START_TEST(test_binary)
{
	unsigned char in[256];
	size_t i, n;
	char *e, *d;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(255 - i);
	for (i = 0; i <= sizeof(in); i++) {
		e = b64_encode(in, i);
		d = b64_decode(e, &n);
		ck_assert_uint_eq(n, i);
		ck_assert_int_eq(memcmp(d, in, i), 0);
		free(e);
		free(d);
	}
}
END_TEST

START_TEST(test_bad)
{
	static const char *const bad[] = { "Zg=", "Z===", "Zm9v!A==",
	    "=Zm9", "Zg==Zg==", "Zm=v" };
	size_t i, n;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(b64_decode(bad[i], &n) == NULL, "%s", bad[i]);
}
END_TEST

static Suite *
b64_suite(void)
{
	Suite *s = suite_create("b64");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_vectors);
	tcase_add_test(tc, test_binary);
	tcase_add_test(tc, test_bad);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(b64_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
