/*
 * check_net.c -- address parsing, listen/connect on loopback and unix
 * sockets, and the error texts callers log.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"

static void
parse_ok(const char *s, struct net_addr *na)
{
	char	err[256] = "";

	ck_assert_msg(net_addr_parse(s, na, err, sizeof err) == 0, "%s: %s",
	    s, err);
	ck_assert_str_eq(na->text, s);
}

static void
parse_bad(const char *s, const char *want)
{
	struct net_addr	na;
	char		err[256] = "";

	ck_assert_int_eq(net_addr_parse(s, &na, err, sizeof err), -1);
	ck_assert_str_eq(err, want);
}

/* The port a bound socket got. */
static int
bound_port(int fd)
{
	struct sockaddr_storage	ss;
	socklen_t		len = sizeof ss;

	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	if (ss.ss_family == AF_INET)
		return (ntohs(((struct sockaddr_in *)&ss)->sin_port));
	return (ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
}

START_TEST(test_parse)
{
	struct net_addr		 na;
	struct sockaddr_in	*sin = (struct sockaddr_in *)&na.ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)&na.ss;
	struct sockaddr_un	*sun = (struct sockaddr_un *)&na.ss;

	parse_ok("127.0.0.1:8000", &na);
	ck_assert_int_eq(na.ss.ss_family, AF_INET);
	ck_assert_int_eq(ntohs(sin->sin_port), 8000);
	ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), 0x7f000001);
	ck_assert_int_eq(net_addr_is_unix(&na), 0);

	parse_ok("[::1]:65535", &na);
	ck_assert_int_eq(na.ss.ss_family, AF_INET6);
	ck_assert_int_eq(ntohs(sin6->sin6_port), 65535);
	ck_assert_int_eq(na.len, sizeof *sin6);

	parse_ok("localhost:0", &na);
	ck_assert(na.ss.ss_family == AF_INET || na.ss.ss_family == AF_INET6);

	parse_ok("unix:/tmp/x.sock", &na);
	ck_assert_int_eq(net_addr_is_unix(&na), 1);
	ck_assert_str_eq(sun->sun_path, "/tmp/x.sock");
}
END_TEST

START_TEST(test_parse_errors)
{
	char	addr[200], want[300];

	parse_bad("x", "bad address \"x\": missing port");
	parse_bad("127.0.0.1", "bad address \"127.0.0.1\": missing port");
	parse_bad("127.0.0.1:", "bad address \"127.0.0.1:\": missing port");
	parse_bad(":80", "bad address \":80\": missing host");
	parse_bad("127.0.0.1:65536",
	    "bad address \"127.0.0.1:65536\": port out of range");
	parse_bad("127.0.0.1:1234567",
	    "bad address \"127.0.0.1:1234567\": bad port");
	parse_bad("127.0.0.1:http", "bad address \"127.0.0.1:http\": bad port");
	parse_bad("::1:80",
	    "bad address \"::1:80\": an IPv6 address needs brackets");
	parse_bad("[::1", "bad address \"[::1\": missing ']'");
	parse_bad("[::1]80", "bad address \"[::1]80\": missing port");
	parse_bad("unix:", "bad address \"unix:\": empty unix path");
	/* Brackets mean a literal: no name lookup. */
	ck_assert_int_eq(net_addr_parse("[localhost]:80", &(struct net_addr){0},
	    want, sizeof want), -1);

	memset(addr, 'p', sizeof addr);
	memcpy(addr, "unix:/", 6);
	addr[5 + 108] = '\0';
	snprintf(want, sizeof want, "bad address \"%s\": unix path longer "
	    "than 107 bytes", addr);
	parse_bad(addr, want);
}
END_TEST

static void
check_ok(const char *s)
{
	char	err[256] = "";

	ck_assert_msg(net_addr_check(s, err, sizeof err) == 0, "%s: %s", s,
	    err);
}

static void
check_bad(const char *s, const char *want)
{
	char	err[512] = "";

	ck_assert_msg(net_addr_check(s, err, sizeof err) == -1, "%s passed", s);
	ck_assert_str_eq(err, want);
}

/* Syntax only: names are not looked up, literals must be real addresses. */
START_TEST(test_check)
{
	char	name[300], want[400];

	check_ok("127.0.0.1:8000");
	check_ok("0.0.0.0:0");
	check_ok("[::1]:80");
	check_ok("localhost:80");
	check_ok("no-such-host.invalid:80");
	check_ok("svc_1.example:443");
	check_ok("unix:/run/x.sock");
	check_bad("300.1.1.1:80", "bad address \"300.1.1.1:80\": bad IPv4 "
	    "address");
	check_bad("127.1:80", "bad address \"127.1:80\": bad IPv4 address");
	check_bad("1.2.3.4.5:80", "bad address \"1.2.3.4.5:80\": bad IPv4 "
	    "address");
	check_bad("[::g]:80", "bad address \"[::g]:80\": bad IPv6 address");
	check_bad("[1.2.3.4]:80", "bad address \"[1.2.3.4]:80\": bad IPv6 "
	    "address");
	check_bad("a b:80", "bad address \"a b:80\": bad host name");
	check_bad("x", "bad address \"x\": missing port");
	check_bad(":80", "bad address \":80\": missing host");
	check_bad("127.0.0.1:65536",
	    "bad address \"127.0.0.1:65536\": port out of range");
	check_bad("h:8x", "bad address \"h:8x\": bad port");
	check_bad("::1:80",
	    "bad address \"::1:80\": an IPv6 address needs brackets");
	check_bad("unix:", "bad address \"unix:\": empty unix path");
	memset(name, 'a', sizeof name);
	memcpy(name + 254, ":80", 4);
	snprintf(want, sizeof want, "bad address \"%s\": host name too long",
	    name);
	check_bad(name, want);
}
END_TEST

/* What registration takes: addresses, never a name to resolve. */
START_TEST(test_literal)
{
	char	err[256];

	ck_assert_int_eq(net_addr_literal("127.0.0.1:8000", err, sizeof err), 0);
	ck_assert_int_eq(net_addr_literal("[::1]:80", err, sizeof err), 0);
	ck_assert_int_eq(net_addr_literal("unix:/run/x.sock", err, sizeof err),
	    0);
	ck_assert_int_eq(net_addr_literal("localhost:80", err, sizeof err), -1);
	ck_assert_str_eq(err, "bad address \"localhost:80\": a name, not an "
	    "address");
	ck_assert_int_eq(net_addr_literal("127.0.0.1", err, sizeof err), -1);
	ck_assert_str_eq(err, "bad address \"127.0.0.1\": missing port");
	ck_assert_int_eq(net_addr_literal("300.1.1.1:1", err, sizeof err), -1);
}
END_TEST

START_TEST(test_tcp)
{
	struct net_addr	 na;
	char		 err[256], text[64];
	int		 lfd, lfd2, cfd, afd, flags, port, one = 0;
	socklen_t	 len = sizeof one;
	struct pollfd	 pfd;

	parse_ok("127.0.0.1:0", &na);
	lfd = net_listen(&na, 0, err, sizeof err);
	ck_assert_msg(lfd != -1, "%s", err);
	flags = fcntl(lfd, F_GETFL);
	ck_assert(flags & O_NONBLOCK);
	ck_assert(fcntl(lfd, F_GETFD) & FD_CLOEXEC);
	port = bound_port(lfd);

	/* A second bind of the same port says where and why. */
	snprintf(text, sizeof text, "127.0.0.1:%d", port);
	parse_ok(text, &na);
	ck_assert_int_eq(net_listen(&na, 0, err, sizeof err), -1);
	snprintf(text, sizeof text, "127.0.0.1:%d: bind: Address already in "
	    "use", port);
	ck_assert_str_eq(err, text);

	cfd = net_connect(&na, err, sizeof err);
	ck_assert_msg(cfd != -1, "%s", err);
	ck_assert(fcntl(cfd, F_GETFL) & O_NONBLOCK);
	pfd.fd = lfd;
	pfd.events = POLLIN;
	ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
	afd = accept(lfd, NULL, NULL);
	ck_assert_int_ne(afd, -1);

	net_nodelay(cfd);
	ck_assert_int_eq(getsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one,
	    &len), 0);
	ck_assert_int_eq(one, 1);
	close(afd);
	close(cfd);
	close(lfd);

	/* Two SO_REUSEPORT listeners share a port. */
	parse_ok("127.0.0.1:0", &na);
	lfd = net_listen(&na, 1, err, sizeof err);
	ck_assert_msg(lfd != -1, "%s", err);
	snprintf(text, sizeof text, "127.0.0.1:%d", bound_port(lfd));
	parse_ok(text, &na);
	lfd2 = net_listen(&na, 1, err, sizeof err);
	ck_assert_msg(lfd2 != -1, "%s", err);
	close(lfd2);
	close(lfd);
}
END_TEST

START_TEST(test_connect_refused)
{
	struct net_addr	 na;
	char		 err[256], text[64];
	int		 lfd, cfd, soerr = 0;
	socklen_t	 len = sizeof soerr;
	struct pollfd	 pfd;

	/* A port that was just free: connect starts, then fails. */
	parse_ok("127.0.0.1:0", &na);
	lfd = net_listen(&na, 0, err, sizeof err);
	ck_assert_int_ne(lfd, -1);
	snprintf(text, sizeof text, "127.0.0.1:%d", bound_port(lfd));
	close(lfd);
	parse_ok(text, &na);
	cfd = net_connect(&na, err, sizeof err);
	if (cfd == -1) {
		ck_assert_ptr_nonnull(strstr(err, ": connect: "));
		return;
	}
	pfd.fd = cfd;
	pfd.events = POLLOUT;
	ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
	ck_assert_int_eq(getsockopt(cfd, SOL_SOCKET, SO_ERROR, &soerr, &len),
	    0);
	ck_assert_int_eq(soerr, ECONNREFUSED);
	close(cfd);
}
END_TEST

START_TEST(test_unix)
{
	struct net_addr	 na;
	struct sockaddr_storage ss;
	socklen_t	 sslen = sizeof ss;
	char		 dir[] = "/tmp/check_net.XXXXXX", addr[160], file[128];
	char		 err[256], want[300], peer[64];
	int		 lfd, lfd2, cfd, afd, fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(file, sizeof file, "%s/s.sock", dir);
	snprintf(addr, sizeof addr, "unix:%s", file);
	parse_ok(addr, &na);
	lfd = net_listen(&na, 1, err, sizeof err);
	ck_assert_msg(lfd != -1, "%s", err);

	cfd = net_connect(&na, err, sizeof err);
	ck_assert_msg(cfd != -1, "%s", err);
	net_nodelay(cfd);	/* harmless on a unix socket */
	afd = accept(lfd, (struct sockaddr *)&ss, &sslen);
	ck_assert_int_ne(afd, -1);
	net_peer_text((struct sockaddr *)&ss, peer, sizeof peer);
	ck_assert_str_eq(peer, "unix");
	close(afd);
	close(cfd);

	/* A live listener's socket is not stolen by a second bind. */
	snprintf(want, sizeof want, "%s: bind: Address already in use", addr);
	ck_assert_int_eq(net_listen(&na, 0, err, sizeof err), -1);
	ck_assert_str_eq(err, want);
	cfd = net_connect(&na, err, sizeof err);
	ck_assert_msg(cfd != -1, "%s", err);
	afd = accept(lfd, NULL, NULL);
	ck_assert_int_ne(afd, -1);
	close(afd);
	close(cfd);

	/* The socket file is stale once its listener is gone: replaced. */
	close(lfd);
	lfd2 = net_listen(&na, 0, err, sizeof err);
	ck_assert_msg(lfd2 != -1, "%s", err);
	close(lfd2);
	unlink(file);

	/* A regular file in the way is not removed. */
	fd = open(file, O_CREAT | O_WRONLY, 0600);
	ck_assert_int_ne(fd, -1);
	close(fd);
	ck_assert_int_eq(net_listen(&na, 0, err, sizeof err), -1);
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(access(file, F_OK), 0);
	unlink(file);
	rmdir(dir);
}
END_TEST

START_TEST(test_peer_text)
{
	struct net_addr	na;
	char		buf[64];

	parse_ok("127.0.0.1:80", &na);
	net_peer_text((struct sockaddr *)&na.ss, buf, sizeof buf);
	ck_assert_str_eq(buf, "127.0.0.1");
	parse_ok("[::1]:80", &na);
	net_peer_text((struct sockaddr *)&na.ss, buf, sizeof buf);
	ck_assert_str_eq(buf, "::1");
	parse_ok("[::1]:80", &na);
	net_peer_text((struct sockaddr *)&na.ss, buf, 2);
	ck_assert_str_eq(buf, "?");
}
END_TEST

static Suite *
net_suite(void)
{
	Suite	*s = suite_create("net");
	TCase	*tc = tcase_create("net");

	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_check);
	tcase_add_test(tc, test_literal);
	tcase_add_test(tc, test_tcp);
	tcase_add_test(tc, test_connect_refused);
	tcase_add_test(tc, test_unix);
	tcase_add_test(tc, test_peer_text);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(net_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
