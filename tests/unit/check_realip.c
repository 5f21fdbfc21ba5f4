/*
 * check_realip.c -- trusted networks (CIDR parse and match, IPv4 and
 * IPv6) and the client behind them: the rightmost X-Forwarded-For entry
 * that is not trusted, across repeated fields; bad entries stop the walk.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "http1.h"
#include "realip.h"

static struct realip_cidr nets[8];
static size_t nnets;

static void
trust(const char *s)
{
	ck_assert_uint_lt(nnets, sizeof nets / sizeof nets[0]);
	ck_assert_msg(realip_cidr_parse(s, &nets[nnets]) == 0, "%s", s);
	nnets++;
}

static void
setup(void)
{
	nnets = 0;
	trust("10.0.0.0/8");
	trust("192.168.1.1");
	trust("fd00::/8");
	trust("::1");
}

START_TEST(test_parse)
{
	struct realip_cidr c;

	ck_assert_int_eq(realip_cidr_parse("10.0.0.0/8", &c), 0);
	ck_assert_uint_eq(c.bits, 96 + 8);	/* IPv4-mapped */
	ck_assert_int_eq(c.addr[10], 0xff);
	ck_assert_int_eq(c.addr[12], 10);
	ck_assert_int_eq(realip_cidr_parse("127.0.0.1", &c), 0);
	ck_assert_uint_eq(c.bits, 128);
	ck_assert_int_eq(realip_cidr_parse("0.0.0.0/0", &c), 0);
	ck_assert_uint_eq(c.bits, 96);
	ck_assert_int_eq(realip_cidr_parse("fd00::/8", &c), 0);
	ck_assert_uint_eq(c.bits, 8);
	ck_assert_int_eq(c.addr[0], 0xfd);
	ck_assert_int_eq(realip_cidr_parse("::/0", &c), 0);
	ck_assert_uint_eq(c.bits, 0);
	ck_assert_int_eq(realip_cidr_parse("2001:db8::1", &c), 0);
	ck_assert_uint_eq(c.bits, 128);
}
END_TEST

START_TEST(test_parse_bad)
{
	static const char *bad[] = { "", "/8", "10.0.0.0/", "10.0.0.0/33",
	    "10.0.0.0/-1", "10.0.0.0/8x", "10.0.0.0/+8", "10.1.2.3/8",
	    "fd00::1/8", "::/129", "300.0.0.1", "host.example",
	    "10.0.0.0/8/8", "1234567890123456789012345678901234567890"
	    "123456789012345678901234567890" };
	struct realip_cidr c;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(realip_cidr_parse(bad[i], &c) == -1, "%s",
		    bad[i]);
}
END_TEST

START_TEST(test_trusted)
{
	ck_assert(realip_trusted(nets, nnets, "10.0.0.1"));
	ck_assert(realip_trusted(nets, nnets, "10.255.255.255"));
	ck_assert(!realip_trusted(nets, nnets, "11.0.0.0"));
	ck_assert(!realip_trusted(nets, nnets, "9.255.255.255"));
	ck_assert(realip_trusted(nets, nnets, "192.168.1.1"));
	ck_assert(!realip_trusted(nets, nnets, "192.168.1.2"));
	ck_assert(realip_trusted(nets, nnets, "fd12:3456::1"));
	ck_assert(!realip_trusted(nets, nnets, "fe00::1"));
	ck_assert(realip_trusted(nets, nnets, "::1"));
	ck_assert(!realip_trusted(nets, nnets, "::2"));
	/* An IPv4-mapped IPv6 address is the IPv4 address. */
	ck_assert(realip_trusted(nets, nnets, "::ffff:10.1.2.3"));
	ck_assert(!realip_trusted(nets, nnets, "not an address"));
	ck_assert(!realip_trusted(nets, 0, "10.0.0.1"));
}
END_TEST

START_TEST(test_prefix_bits)
{
	struct realip_cidr c;

	/* A prefix that ends inside a byte. */
	ck_assert_int_eq(realip_cidr_parse("172.16.0.0/12", &c), 0);
	ck_assert(realip_trusted(&c, 1, "172.16.0.1"));
	ck_assert(realip_trusted(&c, 1, "172.31.255.255"));
	ck_assert(!realip_trusted(&c, 1, "172.32.0.0"));
	ck_assert(!realip_trusted(&c, 1, "172.15.255.255"));
	ck_assert_int_eq(realip_cidr_parse("2001:db8::/33", &c), 0);
	ck_assert(realip_trusted(&c, 1, "2001:db8:7fff::1"));
	ck_assert(!realip_trusted(&c, 1, "2001:db8:8000::1"));
}
END_TEST

/* The client of a request with these X-Forwarded-For values (and one
 * unrelated field first), or NULL when realip_client says -1. */
static const char *
client(const char *xff1, const char *xff2)
{
	static char buf[64];
	struct http1_field f[3];
	struct http1_request r;
	unsigned n = 0;

	memset(&r, 0, sizeof(r));
	f[n].name = "Accept";
	f[n].name_len = 6;
	f[n].value = "*/*";
	f[n++].value_len = 3;
	if (xff1 != NULL) {
		f[n].name = "X-Forwarded-For";
		f[n].name_len = 15;
		f[n].value = xff1;
		f[n++].value_len = strlen(xff1);
	}
	if (xff2 != NULL) {
		f[n].name = "x-forwarded-for";
		f[n].name_len = 15;
		f[n].value = xff2;
		f[n++].value_len = strlen(xff2);
	}
	r.fields = f;
	r.nfields = n;
	strcpy(buf, "untouched");
	if (realip_client(nets, nnets, &r, buf, sizeof buf) == -1) {
		ck_assert_str_eq(buf, "untouched");
		return NULL;
	}
	return buf;
}

START_TEST(test_client)
{
	/* The rightmost untrusted entry, not the leftmost. */
	ck_assert_str_eq(client("203.0.113.5, 198.51.100.7, 10.0.0.2", NULL),
	    "198.51.100.7");
	ck_assert_str_eq(client("203.0.113.5", NULL), "203.0.113.5");
	ck_assert_str_eq(client("2001:db8::5 , fd00::1,::1", NULL),
	    "2001:db8::5");
	/* All trusted: the leftmost. */
	ck_assert_str_eq(client("10.0.0.3, 10.0.0.2", NULL), "10.0.0.3");
	/* Repeated fields are one list, the later one on the right. */
	ck_assert_str_eq(client("198.51.100.1", "10.0.0.1"), "198.51.100.1");
	ck_assert_str_eq(client("198.51.100.1", "198.51.100.2, 10.0.0.1"),
	    "198.51.100.2");
	/* Spaces and tabs around entries. */
	ck_assert_str_eq(client("\t198.51.100.9 ,\t10.0.0.1 ", NULL),
	    "198.51.100.9");
}
END_TEST

START_TEST(test_client_bad)
{
	/* No X-Forwarded-For: the peer stays the client. */
	ck_assert_ptr_null(client(NULL, NULL));
	ck_assert_ptr_null(client("", NULL));
	/* An unparsable entry before an untrusted one stops the walk. */
	ck_assert_ptr_null(client("198.51.100.1, unknown, 10.0.0.1", NULL));
	ck_assert_ptr_null(client("198.51.100.1, , 10.0.0.1", NULL));
	/* ... but left of the answer it is never read. */
	ck_assert_str_eq(client("junk, 198.51.100.1, 10.0.0.1", NULL),
	    "198.51.100.1");
}
END_TEST

static Suite *
realip_suite(void)
{
	Suite	*s = suite_create("realip");
	TCase	*tc = tcase_create("realip");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_parse_bad);
	tcase_add_test(tc, test_trusted);
	tcase_add_test(tc, test_prefix_bits);
	tcase_add_test(tc, test_client);
	tcase_add_test(tc, test_client_bad);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(realip_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
