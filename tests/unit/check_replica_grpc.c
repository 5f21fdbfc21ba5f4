/*
 * check_replica_grpc.c -- the replica library's gRPC metadata rules
 * (replica/grpc_md.c): which names and values a handler may send, and
 * -bin values decoded with or without padding.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "replica_grpc.h"

START_TEST(test_names)
{
	ck_assert_int_eq(replica_grpc_metadata_check("x-echo-a", "v"), 0);
	ck_assert_int_eq(replica_grpc_metadata_check("a_b.c-9", ""), 0);
	/* Upper case, a space, a colon, empty, too long. */
	ck_assert_int_eq(replica_grpc_metadata_check("X-Echo", "v"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check("a b", "v"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check(":status", "200"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check("", "v"), -1);
	{
		char longname[300];

		memset(longname, 'a', sizeof longname - 1);
		longname[sizeof longname - 1] = '\0';
		ck_assert_int_eq(replica_grpc_metadata_check(longname, "v"),
		    -1);
	}
	/* Reserved: gRPC's own and the fields the library writes. */
	ck_assert_int_eq(replica_grpc_metadata_check("grpc-status", "0"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check("content-type", "x"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check("te", "trailers"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check("connection", "x"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check(NULL, "x"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check("a", NULL), -1);
}
END_TEST

START_TEST(test_values)
{
	ck_assert_int_eq(replica_grpc_metadata_check("a", "v 1 ~!"), 0);
	ck_assert_int_eq(replica_grpc_metadata_check("a", "v\r\n"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check("a", "\x7f"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check("a", "caf\xc3\xa9"), -1);
	/* -bin: base64, padded or not; nothing else. */
	ck_assert_int_eq(replica_grpc_metadata_check("k-bin", "AP8="), 0);
	ck_assert_int_eq(replica_grpc_metadata_check("k-bin", "AP8"), 0);
	ck_assert_int_eq(replica_grpc_metadata_check("k-bin", ""), 0);
	ck_assert_int_eq(replica_grpc_metadata_check("k-bin", "A"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check("k-bin", "AP8=="), -1);
	ck_assert_int_eq(replica_grpc_metadata_check("k-bin", "A=P8"), -1);
	ck_assert_int_eq(replica_grpc_metadata_check("k-bin", "v 1"), -1);
	/* "-bin" alone is a plain name. */
	ck_assert_int_eq(replica_grpc_metadata_check("-bin", "v 1"), 0);
}
END_TEST

START_TEST(test_decode)
{
	unsigned char out[8];

	ck_assert_int_eq(replica_grpc_metadata_decode("AP8=", out, sizeof out),
	    2);
	ck_assert(out[0] == 0x00 && out[1] == 0xff);
	ck_assert_int_eq(replica_grpc_metadata_decode("AQID", out, sizeof out),
	    3);
	ck_assert(memcmp(out, "\x01\x02\x03", 3) == 0);
	ck_assert_int_eq(replica_grpc_metadata_decode("AP8", out, sizeof out),
	    2);
	ck_assert(out[0] == 0x00 && out[1] == 0xff);
	ck_assert_int_eq(replica_grpc_metadata_decode("", out, sizeof out), 0);
	/* Not base64; more bytes than room. */
	ck_assert_int_eq(replica_grpc_metadata_decode("A", out, sizeof out),
	    -1);
	ck_assert_int_eq(replica_grpc_metadata_decode("a b", out, sizeof out),
	    -1);
	ck_assert_int_eq(replica_grpc_metadata_decode("AQID", out, 2), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("replica_grpc");
	TCase *tc = tcase_create("metadata");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_decode);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
