/*
 * check_grpc.c -- the gRPC rules of the HTTP/2 edge (src/grpc.c):
 * grpc-timeout parsing, content-type, the status mappings and
 * grpc-message's percent-encoding.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "grpc.h"

START_TEST(test_timeout)
{
	double t = -1;

	ck_assert_int_eq(grpc_timeout_parse("100m", 4, &t), 0);
	ck_assert(t > 0.0999 && t < 0.1001);
	ck_assert_int_eq(grpc_timeout_parse("2S", 2, &t), 0);
	ck_assert(t == 2);
	ck_assert_int_eq(grpc_timeout_parse("1H", 2, &t), 0);
	ck_assert(t == 3600);
	ck_assert_int_eq(grpc_timeout_parse("99999999n", 9, &t), 0);
	/* Nine digits, no unit, a sign, an unknown unit, empty. */
	ck_assert_int_eq(grpc_timeout_parse("123456789S", 10, &t), -1);
	ck_assert_int_eq(grpc_timeout_parse("100", 3, &t), -1);
	ck_assert_int_eq(grpc_timeout_parse("-1S", 3, &t), -1);
	ck_assert_int_eq(grpc_timeout_parse("1s", 2, &t), -1);
	ck_assert_int_eq(grpc_timeout_parse("", 0, &t), -1);
}
END_TEST

START_TEST(test_content_type)
{
	ck_assert(grpc_is_grpc("application/grpc", 16));
	ck_assert(grpc_is_grpc("application/grpc+proto", 22));
	ck_assert(grpc_is_grpc("application/grpc;x=1", 20));
	ck_assert(!grpc_is_grpc("application/grpcx", 17));
	ck_assert(!grpc_is_grpc("application/json", 16));
}
END_TEST

START_TEST(test_mapping)
{
	ck_assert_int_eq(grpc_from_http(200), GRPC_OK);
	ck_assert_int_eq(grpc_from_http(404), GRPC_UNIMPLEMENTED);
	ck_assert_int_eq(grpc_from_http(503), GRPC_UNAVAILABLE);
	ck_assert_int_eq(grpc_from_http(401), GRPC_UNAUTHENTICATED);
	ck_assert_int_eq(grpc_from_http(500), GRPC_UNKNOWN);
	ck_assert_int_eq(grpc_from_local(404, REJECT_NONE, 0),
	    GRPC_UNIMPLEMENTED);
	ck_assert_int_eq(grpc_from_local(503, REJECT_QUEUE_FULL, 0),
	    GRPC_UNAVAILABLE);
	ck_assert_int_eq(grpc_from_local(504, REJECT_DEADLINE, 1),
	    GRPC_DEADLINE_EXCEEDED);
	ck_assert_int_eq(grpc_from_local(431, REJECT_NONE, 0),
	    GRPC_RESOURCE_EXHAUSTED);
	ck_assert_int_eq(grpc_from_local(502, REJECT_REPLICA_FAILED, 0),
	    GRPC_UNAVAILABLE);
	ck_assert_int_eq(grpc_from_local(502, REJECT_REPLICA_FAILED, 1),
	    GRPC_INTERNAL);
}
END_TEST

START_TEST(test_message)
{
	char out[16];

	ck_assert_uint_eq(grpc_message_encode("a b%\n\xc3\xa9", out,
	    sizeof(out)), 15);
	ck_assert_str_eq(out, "a b%25%0A%C3%A9");
	/* Cut on a whole escape. */
	ck_assert_uint_eq(grpc_message_encode("abcdefghijklm\n", out,
	    sizeof(out)), 13);
	ck_assert_str_eq(out, "abcdefghijklm");
}
END_TEST

static Suite *
grpc_suite(void)
{
	Suite *s = suite_create("grpc");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_timeout);
	tcase_add_test(tc, test_content_type);
	tcase_add_test(tc, test_mapping);
	tcase_add_test(tc, test_message);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner *sr = srunner_create(grpc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
