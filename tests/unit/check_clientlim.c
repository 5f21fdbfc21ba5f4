/*
 * check_clientlim.c -- connections per client: IPv4 per address, IPv6 per
 * /64, no limit when 0, unix sockets not counted, close frees the slot.
 * Check runs each test in its own process, so each starts with an empty
 * table.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "clientlim.h"

static struct sockaddr_in
v4(const char *s)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons(40000);
	ck_assert_int_eq(inet_pton(AF_INET, s, &sin.sin_addr), 1);
	return (sin);
}

static struct sockaddr_in6
v6(const char *s)
{
	struct sockaddr_in6 sin6;

	memset(&sin6, 0, sizeof sin6);
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(40000);
	ck_assert_int_eq(inet_pton(AF_INET6, s, &sin6.sin6_addr), 1);
	return (sin6);
}

#define SA(x)	((const struct sockaddr *)&(x))

START_TEST(test_v4_cap)
{
	struct sockaddr_in a = v4("127.0.0.1"), b = v4("127.0.0.2");
	uint64_t k1, k2, k3, kb;

	ck_assert_int_eq(clientlim_open(SA(a), 2, &k1), 0);
	ck_assert_uint_ne(k1, 0);
	ck_assert_int_eq(clientlim_open(SA(a), 2, &k2), 0);
	ck_assert_uint_eq(k2, k1);
	ck_assert_int_eq(clientlim_open(SA(a), 2, &k3), -1);
	ck_assert_uint_eq(k3, 0);
	/* Another port of the same address counts too. */
	a.sin_port = htons(40001);
	ck_assert_int_eq(clientlim_open(SA(a), 2, &k3), -1);
	/* Another address has its own count. */
	ck_assert_int_eq(clientlim_open(SA(b), 2, &kb), 0);
	ck_assert_uint_ne(kb, k1);
	/* A close frees exactly one slot. */
	clientlim_close(k1);
	ck_assert_int_eq(clientlim_open(SA(a), 2, &k3), 0);
	ck_assert_int_eq(clientlim_open(SA(a), 2, &k3), -1);
}
END_TEST

START_TEST(test_v4_close_all)
{
	struct sockaddr_in a = v4("10.1.2.3");
	uint64_t k[3], no;
	int i;

	for (i = 0; i < 3; i++)
		ck_assert_int_eq(clientlim_open(SA(a), 3, &k[i]), 0);
	ck_assert_int_eq(clientlim_open(SA(a), 3, &no), -1);
	for (i = 0; i < 3; i++)
		clientlim_close(k[i]);
	/* The entry is gone; a fresh count starts at zero. */
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(clientlim_open(SA(a), 3, &k[i]), 0);
	ck_assert_int_eq(clientlim_open(SA(a), 3, &no), -1);
}
END_TEST

/* Hosts of one /64 share a count; the next /64 does not. */
START_TEST(test_v6_prefix)
{
	struct sockaddr_in6 a = v6("2001:db8:1:2::1");
	struct sockaddr_in6 b = v6("2001:db8:1:2:ffff:ffff:ffff:ffff");
	struct sockaddr_in6 c = v6("2001:db8:1:3::1");
	struct sockaddr_in6 lo = v6("::1");
	uint64_t ka, kb, kc, kl, no;

	ck_assert_int_eq(clientlim_open(SA(a), 2, &ka), 0);
	ck_assert_int_eq(clientlim_open(SA(b), 2, &kb), 0);
	ck_assert_uint_eq(ka, kb);
	ck_assert_int_eq(clientlim_open(SA(a), 2, &no), -1);
	ck_assert_int_eq(clientlim_open(SA(b), 2, &no), -1);
	ck_assert_int_eq(clientlim_open(SA(c), 2, &kc), 0);
	ck_assert_uint_ne(kc, 0);
	ck_assert_int_eq(clientlim_open(SA(lo), 1, &kl), 0);
	ck_assert_int_eq(clientlim_open(SA(lo), 1, &no), -1);
	clientlim_close(kb);
	ck_assert_int_eq(clientlim_open(SA(a), 2, &ka), 0);
	ck_assert_int_eq(clientlim_open(SA(b), 2, &no), -1);
}
END_TEST

/*
 * 0.0.0.1 and the IPv6 /64 whose first bytes are zero stay apart; a
 * v4-mapped address is just another host of ::/64 (listeners set
 * IPV6_V6ONLY, so IPv4 clients never arrive that way).
 */
START_TEST(test_families_apart)
{
	struct sockaddr_in a = v4("0.0.0.1");
	struct sockaddr_in6 b = v6("::1");
	struct sockaddr_in6 m = v6("::ffff:127.0.0.1");
	struct sockaddr_in c = v4("127.0.0.1");
	uint64_t ka, kb, km, kc;

	ck_assert_int_eq(clientlim_open(SA(a), 1, &ka), 0);
	ck_assert_int_eq(clientlim_open(SA(b), 1, &kb), 0);
	ck_assert_uint_ne(ka, kb);
	ck_assert_int_eq(clientlim_open(SA(c), 1, &kc), 0);
	ck_assert_uint_ne(kc, ka);
	ck_assert_int_eq(clientlim_open(SA(m), 1, &km), -1);
	clientlim_close(kb);
	ck_assert_int_eq(clientlim_open(SA(m), 1, &km), 0);
	ck_assert_uint_eq(km, kb);
}
END_TEST

START_TEST(test_no_limit)
{
	struct sockaddr_in a = v4("127.0.0.1");
	uint64_t k = 99;
	int i;

	for (i = 0; i < 1000; i++) {
		ck_assert_int_eq(clientlim_open(SA(a), 0, &k), 0);
		ck_assert_uint_eq(k, 0);
	}
	/* Nothing was counted: a limit of 1 still admits one. */
	ck_assert_int_eq(clientlim_open(SA(a), 1, &k), 0);
	ck_assert_uint_ne(k, 0);
	clientlim_close(0);		/* a no-op */
	ck_assert_int_eq(clientlim_open(SA(a), 1, &k), -1);
}
END_TEST

START_TEST(test_unix_not_counted)
{
	struct sockaddr_un sun;
	uint64_t k = 99;
	int i;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	for (i = 0; i < 10; i++) {
		ck_assert_int_eq(clientlim_open(SA(sun), 1, &k), 0);
		ck_assert_uint_eq(k, 0);
	}
}
END_TEST

/* Many clients across the buckets, each capped on its own. */
START_TEST(test_many_clients)
{
	struct sockaddr_in a = v4("10.0.0.0");
	uint64_t k;
	unsigned i;

	for (i = 0; i < 20000; i++) {
		a.sin_addr.s_addr = htonl(0x0a000000u + i);
		ck_assert_int_eq(clientlim_open(SA(a), 1, &k), 0);
	}
	for (i = 0; i < 20000; i += 997) {
		a.sin_addr.s_addr = htonl(0x0a000000u + i);
		ck_assert_int_eq(clientlim_open(SA(a), 1, &k), -1);
	}
}
END_TEST

static Suite *
clientlim_suite(void)
{
	Suite	*s = suite_create("clientlim");
	TCase	*tc = tcase_create("clientlim");

	tcase_add_test(tc, test_v4_cap);
	tcase_add_test(tc, test_v4_close_all);
	tcase_add_test(tc, test_v6_prefix);
	tcase_add_test(tc, test_families_apart);
	tcase_add_test(tc, test_no_limit);
	tcase_add_test(tc, test_unix_not_counted);
	tcase_add_test(tc, test_many_clients);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(clientlim_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
