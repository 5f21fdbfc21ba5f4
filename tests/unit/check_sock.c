/*
 * check_sock.c -- sock over real sockets (unix pairs and loopback TCP) and a
 * real event_base.  Every loop is bounded: a 2 ms tick keeps EVLOOP_ONCE
 * from blocking longer, and LOOP_UNTIL gives up after MAX_PASSES.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "sock.h"

#define MAX_PASSES	500	/* at most 1 s of idle ticks */
#define LOOP_UNTIL(cond) do {						\
	int passes_ = 0;						\
	while (!(cond) && passes_++ < MAX_PASSES)			\
		event_base_loop(base, EVLOOP_ONCE);			\
} while (0)

static struct event_base	*base;
static struct event		*tick;

/* What the callbacks saw; log: r read, d drained, c connected, e/E error/eof. */
struct rec {
	struct sock	*s;
	struct evbuffer	*got;		/* the read callback moves input here */
	const char	*greet;		/* the connected callback sends this */
	int		 reads, drains, connects, errors, alt;
	int		 err;		/* errno in the error callback */
	int		 reply;		/* read callback appends twice */
	char		 free_in;	/* free the sock in this log letter */
	size_t		 max_in;	/* the most input a read callback saw */
	size_t		 low;		/* write_low, checked in drained */
	char		 log[32];
};

static void
rec_log(struct rec *r, char c)
{
	size_t	len = strlen(r->log);

	if (len + 1 < sizeof r->log)
		r->log[len] = c;
	if (r->free_in == c) {
		sock_free(r->s);
		r->s = NULL;
	}
}

static void
on_read(void *arg)
{
	struct rec	*r = arg;

	r->reads++;
	if (sock_input_len(r->s) > r->max_in)
		r->max_in = sock_input_len(r->s);
	if (r->got != NULL)
		evbuffer_add_buffer(r->got, sock_input(r->s));
	if (r->reply) {
		evbuffer_add(sock_output(r->s), "head", 4);
		evbuffer_add(sock_output(r->s), "body", 4);
	}
	rec_log(r, 'r');
}

static void
on_drained(void *arg)
{
	struct rec	*r = arg;

	ck_assert_uint_le(sock_output_len(r->s), r->low);
	r->drains++;
	rec_log(r, 'd');
}

static void
on_connected(void *arg)
{
	struct rec	*r = arg;

	r->connects++;
	if (r->greet != NULL)
		evbuffer_add(sock_output(r->s), r->greet, strlen(r->greet));
	rec_log(r, 'c');
}

static void
on_error(void *arg, int eof)
{
	struct rec	*r = arg;

	r->err = errno;
	r->errors++;
	rec_log(r, eof ? 'E' : 'e');
}

static void
on_read_alt(void *arg)
{
	struct rec	*r = arg;

	r->alt++;
	evbuffer_drain(sock_input(r->s), sock_input_len(r->s));
}

static const struct sock_cbs cbs = {
	on_read, on_drained, on_connected, on_error
};
static const struct sock_cbs alt_cbs = { on_read_alt, NULL, NULL, on_error };

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
}

static void
setup(void)
{
	struct timeval	tv = { 0, 2000 };

	signal(SIGPIPE, SIG_IGN);
	ck_assert_ptr_nonnull(base = event_base_new());
	tick = event_new(base, -1, EV_PERSIST, tick_cb, NULL);
	ck_assert_int_eq(event_add(tick, &tv), 0);
}

static void
teardown(void)
{
	event_free(tick);
	event_base_free(base);
}

static void
spin(int passes)
{
	while (passes-- > 0)
		event_base_loop(base, EVLOOP_ONCE);
}

static struct sock *
new_sock(int fd, struct rec *r)
{
	ck_assert_ptr_nonnull(r->s = sock_new(base, fd, &cbs, r));
	return r->s;
}

/* A fresh rec and a sock on one end of a unix pair; returns the other end. */
static int
open_pair(struct rec *r, int type, char free_in)
{
	int	fd[2];

	memset(r, 0, sizeof *r);
	r->free_in = free_in;
	ck_assert_int_eq(socketpair(AF_UNIX, type | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0, fd), 0);
	new_sock(fd[0], r);
	return fd[1];
}

static void
say(int fd, const char *text)
{
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
}

static void
assert_input(struct sock *s, const char *want)
{
	size_t	len = strlen(want);

	ck_assert_uint_eq(sock_input_len(s), len);
	ck_assert_int_eq(memcmp(evbuffer_pullup(sock_input(s), -1), want, len),
	    0);
}

/* The next packet on a SEQPACKET peer is want (NULL: there is none). */
static void
assert_packet(int fd, const char *want)
{
	char	buf[64];
	ssize_t	n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);

	if (want == NULL) {
		ck_assert_int_eq(n, -1);
		ck_assert_int_eq(errno, EAGAIN);
		return;
	}
	ck_assert_int_eq(n, (ssize_t)strlen(want));
	ck_assert_int_eq(memcmp(buf, want, strlen(want)), 0);
}

static unsigned char
pat(size_t i)
{
	return (unsigned char)(i * 131 + (i >> 8) * 7 + (i >> 16));
}

/* Check that buf holds the pattern from off on; returns off past it. */
static size_t
check_pat(const unsigned char *buf, size_t len, size_t off)
{
	size_t	i;

	/* Not ck_assert per byte: each one costs Check a write. */
	for (i = 0; i < len; i++)
		if (buf[i] != pat(off + i))
			ck_abort_msg("byte %zu differs", off + i);
	return off + len;
}

static size_t
check_evbuffer(struct evbuffer *b, size_t off)
{
	size_t	len = evbuffer_get_length(b);

	off = check_pat(evbuffer_pullup(b, -1), len, off);
	evbuffer_drain(b, len);
	return off;
}

/* The peer writes the pattern from *sent towards total, while it can. */
static void
peer_write(int fd, size_t *sent, size_t total)
{
	unsigned char	buf[65536];
	size_t		i, n;
	ssize_t		w;

	while (*sent < total) {
		n = total - *sent < sizeof buf ? total - *sent : sizeof buf;
		for (i = 0; i < n; i++)
			buf[i] = pat(*sent + i);
		if ((w = write(fd, buf, n)) <= 0) {
			ck_assert_int_eq(errno, EAGAIN);
			break;
		}
		*sent += (size_t)w;
	}
}

/* The peer reads what is there and checks it; returns the new off. */
static size_t
peer_read(int fd, size_t off)
{
	unsigned char	buf[65536];
	ssize_t		n;

	while ((n = read(fd, buf, sizeof buf)) > 0)
		off = check_pat(buf, (size_t)n, off);
	ck_assert_int_eq(n, -1);
	ck_assert_int_eq(errno, EAGAIN);
	return off;
}

/* The peer writes up to total while the read callback fills r->got. */
static size_t
pump(struct rec *r, int fd, size_t *sent, size_t total, size_t off)
{
	int	i;

	for (i = 0; i < MAX_PASSES && off < total; i++) {
		peer_write(fd, sent, total);
		event_base_loop(base, EVLOOP_ONCE);
		off = check_evbuffer(r->got, off);
	}
	return off;
}

/* A listening (or, with backlog < 0, only bound) socket on 127.0.0.1. */
static int
tcp_listener(struct sockaddr_in *sin, int backlog)
{
	socklen_t	len = sizeof *sin;
	int		fd;

	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_ne(fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
	    -1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)sin, len), 0);
	if (backlog >= 0)
		ck_assert_int_eq(listen(fd, backlog), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)sin, &len), 0);
	return fd;
}

static int
tcp_accept(int lfd)
{
	struct pollfd	pfd = { lfd, POLLIN, 0 };
	int		fd;

	ck_assert_int_eq(poll(&pfd, 1, 2000), 1);
	ck_assert_int_ne(fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC), -1);
	return fd;
}

/* A fresh rec whose sock connects to 127.0.0.1 (see tcp_listener). */
static int
open_connect(struct rec *r, int backlog, int *lfd)
{
	struct sockaddr_in	sin;

	memset(r, 0, sizeof *r);
	*lfd = tcp_listener(&sin, backlog);
	new_sock(-1, r);
	ck_assert_int_eq(sock_fd(r->s), -1);
	return sock_connect(r->s, (struct sockaddr *)&sin, sizeof sin);
}

START_TEST(test_input_arrives)
{
	struct rec	r;
	int		b = open_pair(&r, SOCK_STREAM, 0);

	spin(2);
	ck_assert_int_eq(r.reads, 0);
	say(b, "hello");
	LOOP_UNTIL(r.reads == 1);
	ck_assert_str_eq(r.log, "r");
	assert_input(r.s, "hello");
	say(b, " world");
	LOOP_UNTIL(r.reads == 2);
	assert_input(r.s, "hello world");
	sock_free(r.s);
	close(b);
}
END_TEST

/* An idle socket looked at: nothing, bytes (left for the reader), EOF. */
START_TEST(test_peek_idle)
{
	struct rec	r;
	int		b = open_pair(&r, SOCK_STREAM, 0);

	sock_read_enable(r.s, 0);
	spin(2);
	ck_assert_int_eq(sock_peek_idle(r.s), 0);
	say(b, "x");
	ck_assert_int_eq(sock_peek_idle(r.s), 1);
	ck_assert_int_eq(sock_peek_idle(r.s), 1);	/* peeked, not taken */
	ck_assert_int_eq(r.reads, 0);
	sock_free(r.s);
	close(b);

	b = open_pair(&r, SOCK_STREAM, 0);
	sock_read_enable(r.s, 0);
	spin(2);
	close(b);
	errno = EINVAL;
	ck_assert_int_eq(sock_peek_idle(r.s), -1);
	ck_assert_int_eq(errno, 0);			/* a close, no error */
	ck_assert_int_eq(r.errors, 0);			/* no callbacks */
	sock_free(r.s);
}
END_TEST

START_TEST(test_accepted_reads_at_once)
{
	struct rec	r = { 0 };
	int		fd[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
	    fd), 0);
	say(fd[1], "GET / HTTP/1.1\r\n");
	new_sock(fd[0], &r);
	ck_assert_int_eq(r.reads, 0);	/* never from inside sock_new */
	event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(r.reads, 1);
	assert_input(r.s, "GET / HTTP/1.1\r\n");
	sock_free(r.s);
	close(fd[1]);
}
END_TEST

/*
 * Regression: libevent ignores event_add() on an active event, so limits
 * or read_enable(1) set before the first (activated) read must not leave
 * the read event unregistered afterwards.
 */
START_TEST(test_limits_before_first_pass)
{
	struct rec	r;
	int		b = open_pair(&r, SOCK_STREAM, 0);

	sock_set_limits(r.s, 1000, 0);
	sock_read_enable(r.s, 1);
	say(b, "abc");
	LOOP_UNTIL(r.reads == 1);
	say(b, "def");
	LOOP_UNTIL(r.reads == 2);
	assert_input(r.s, "abcdef");
	sock_free(r.s);
	close(b);
}
END_TEST

START_TEST(test_large_input)
{
	struct rec	r;
	size_t		total = 1 << 20, sent = 0;
	int		b = open_pair(&r, SOCK_STREAM, 0);

	r.got = evbuffer_new();
	ck_assert_uint_eq(pump(&r, b, &sent, total, 0), total);
	ck_assert_int_eq(r.errors, 0);
	evbuffer_free(r.got);
	sock_free(r.s);
	close(b);
}
END_TEST

START_TEST(test_read_max)
{
	struct rec	r;
	size_t		max = 100000, total = 300000, sent = 0, off;
	int		b = open_pair(&r, SOCK_STREAM, 0), i, pending = 0;

	sock_set_limits(r.s, max, 0);
	for (i = 0; i < MAX_PASSES && sock_input_len(r.s) < max; i++) {
		peer_write(b, &sent, total);
		event_base_loop(base, EVLOOP_ONCE);
	}
	peer_write(b, &sent, total);
	spin(5);
	/* Reading stopped at exactly read_max, with more waiting. */
	ck_assert_uint_eq(sock_input_len(r.s), max);
	ck_assert_uint_le(r.max_in, max);
	ck_assert_int_eq(ioctl(sock_fd(r.s), FIONREAD, &pending), 0);
	ck_assert_int_gt(pending, 0);
	off = check_evbuffer(sock_input(r.s), 0);
	sock_read_enable(r.s, 1);
	r.got = evbuffer_new();
	ck_assert_uint_eq(pump(&r, b, &sent, total, off), total);
	ck_assert_uint_le(r.max_in, max);
	evbuffer_free(r.got);
	sock_free(r.s);
	close(b);
}
END_TEST

START_TEST(test_read_disable)
{
	struct rec	r;
	int		b = open_pair(&r, SOCK_STREAM, 0);

	spin(2);
	sock_read_enable(r.s, 0);
	say(b, "abc");
	spin(5);
	ck_assert_int_eq(r.reads, 0);
	ck_assert_uint_eq(sock_input_len(r.s), 0);
	sock_read_enable(r.s, 1);
	LOOP_UNTIL(r.reads == 1);
	assert_input(r.s, "abc");
	sock_free(r.s);
	close(b);
}
END_TEST

/*
 * Regression: sock_new() makes the first read active without adding the
 * event, so sock_read_enable(s, 0) before the first pass had nothing to
 * delete and sock_read_cb read and called back anyway.
 */
START_TEST(test_read_disable_before_first_pass)
{
	struct rec	r;
	int		b = open_pair(&r, SOCK_STREAM, 0);

	say(b, "abc");
	sock_read_enable(r.s, 0);
	spin(5);
	ck_assert_int_eq(r.reads, 0);
	ck_assert_uint_eq(sock_input_len(r.s), 0);
	sock_free(r.s);
	close(b);
}
END_TEST

START_TEST(test_flush_deferred_coalesced)
{
	struct rec	r;
	int		b = open_pair(&r, SOCK_SEQPACKET, 0);

	/* SEQPACKET keeps write boundaries: one writev is one packet. */
	spin(2);
	evbuffer_add(sock_output(r.s), "head", 4);
	evbuffer_add(sock_output(r.s), "body", 4);
	assert_packet(b, NULL);
	ck_assert_uint_eq(sock_output_len(r.s), 8);
	event_base_loop(base, EVLOOP_NONBLOCK);
	assert_packet(b, "headbody");
	assert_packet(b, NULL);
	ck_assert_str_eq(r.log, "d");

	/* The same from inside a callback. */
	r.reply = 1;
	say(b, "x");
	LOOP_UNTIL(r.drains == 2);
	ck_assert_str_eq(r.log, "drd");
	assert_packet(b, "headbody");
	assert_packet(b, NULL);
	sock_free(r.s);
	close(b);
}
END_TEST

START_TEST(test_short_writes)
{
	struct rec	 r;
	size_t		 total = 8 << 20, off = 0, i;
	unsigned char	*big;
	int		 b = open_pair(&r, SOCK_STREAM, 0), n = 65536;

	ck_assert_int_eq(setsockopt(sock_fd(r.s), SOL_SOCKET, SO_SNDBUF, &n,
	    sizeof n), 0);
	ck_assert_int_eq(setsockopt(b, SOL_SOCKET, SO_RCVBUF, &n, sizeof n), 0);
	r.low = 65536;
	sock_set_limits(r.s, 256 * 1024, r.low);
	ck_assert_ptr_nonnull(big = malloc(total));
	for (i = 0; i < total; i++)
		big[i] = pat(i);
	evbuffer_add(sock_output(r.s), big, total);
	free(big);
	spin(10);
	ck_assert_uint_gt(sock_output_len(r.s), r.low);
	ck_assert_uint_lt(sock_output_len(r.s), total);	/* some went */
	ck_assert_int_eq(r.errors, 0);
	ck_assert_int_eq(r.drains, 0);
	for (i = 0; i < MAX_PASSES && off < total; i++) {
		off = peer_read(b, off);
		event_base_loop(base, EVLOOP_ONCE);
	}
	ck_assert_uint_eq(peer_read(b, off), total);
	ck_assert_uint_eq(sock_output_len(r.s), 0);
	ck_assert_int_ge(r.drains, 1);	/* on_drained checks <= low */
	ck_assert_int_eq(r.errors, 0);
	sock_free(r.s);
	close(b);
}
END_TEST

START_TEST(test_eof_after_data)
{
	struct sockaddr_in	sin;
	struct rec		r = { 0 };
	int			lfd, cfd;

	/* Loopback TCP: the accepted side is ours, the peer connects. */
	lfd = tcp_listener(&sin, 1);
	ck_assert_int_ne(cfd = socket(AF_INET, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(connect(cfd, (struct sockaddr *)&sin, sizeof sin), 0);
	new_sock(tcp_accept(lfd), &r);
	spin(2);
	say(cfd, "last words");
	close(cfd);
	LOOP_UNTIL(r.errors == 1);
	ck_assert_str_eq(r.log, "rE");
	assert_input(r.s, "last words");
	spin(5);
	ck_assert_str_eq(r.log, "rE");
	sock_free(r.s);
	close(lfd);
}
END_TEST

START_TEST(test_write_error)
{
	struct rec	r;
	int		b = open_pair(&r, SOCK_STREAM, 0);

	spin(2);
	sock_read_enable(r.s, 0);	/* or the eof is seen first */
	close(b);
	evbuffer_add(sock_output(r.s), "late", 4);
	LOOP_UNTIL(r.errors == 1);
	ck_assert_str_eq(r.log, "e");
	ck_assert_msg(r.err == EPIPE || r.err == ECONNRESET, "errno %d", r.err);
	spin(5);
	ck_assert_int_eq(r.errors, 1);
	sock_free(r.s);
}
END_TEST

START_TEST(test_connect)
{
	struct rec	r;
	char		buf[64];
	size_t		got = 0;
	ssize_t		n;
	int		lfd, afd, i;

	ck_assert_int_eq(open_connect(&r, 1, &lfd), 0);
	r.greet = "+late";
	evbuffer_add(sock_output(r.s), "early", 5);
	ck_assert_int_eq(r.connects, 0);	/* never from inside */
	LOOP_UNTIL(r.connects == 1);
	ck_assert_int_eq(r.log[0], 'c');
	afd = tcp_accept(lfd);
	for (i = 0; i < MAX_PASSES && got < 10; i++) {
		event_base_loop(base, EVLOOP_ONCE);
		if ((n = recv(afd, buf + got, sizeof buf - got,
		    MSG_DONTWAIT)) > 0)
			got += (size_t)n;
	}
	ck_assert_uint_eq(got, 10);
	ck_assert_int_eq(memcmp(buf, "early+late", 10), 0);
	say(afd, "pong");		/* reading starts once connected */
	LOOP_UNTIL(r.reads == 1);
	assert_input(r.s, "pong");
	ck_assert_int_eq(r.errors, 0);
	sock_free(r.s);
	close(afd);
	close(lfd);
}
END_TEST

/* A port bound but not listening refuses, and nobody else can take it. */
START_TEST(test_connect_refused)
{
	struct rec	r;
	int		bfd;

	if (open_connect(&r, -1, &bfd) == 0) {
		LOOP_UNTIL(r.errors == 1);
		ck_assert_str_eq(r.log, "e");
		ck_assert_int_eq(r.err, ECONNREFUSED);
	} else
		ck_assert_int_eq(errno, ECONNREFUSED);	/* refused at once */
	spin(5);
	ck_assert_int_eq(r.connects, 0);
	ck_assert_int_le(r.errors, 1);
	sock_free(r.s);
	close(bfd);
}
END_TEST

/*
 * Regression: with output queued while connecting, sock_connect_done
 * re-armed the write event after sock_fail, so an owner that kept the
 * sock after the error got a second one (EPIPE, from writev).
 */
START_TEST(test_connect_refused_with_output)
{
	struct rec	r;
	int		bfd;

	if (open_connect(&r, -1, &bfd) == 0) {
		evbuffer_add(sock_output(r.s), "lost", 4);
		LOOP_UNTIL(r.errors >= 1);
		spin(5);
		ck_assert_str_eq(r.log, "e");
		ck_assert_int_eq(r.errors, 1);
	}
	sock_free(r.s);
	close(bfd);
}
END_TEST

/* Each callback frees the sock; ASan (make asan) checks the rest. */
START_TEST(test_free_in_callbacks)
{
	struct rec	r;
	char		buf[16 * 1024 - 128];	/* sock.c's first read size */
	int		b, lfd;

	/* Read, with the eof seen in the same wake-up after a full read. */
	b = open_pair(&r, SOCK_STREAM, 'r');
	memset(buf, 'x', sizeof buf);
	ck_assert_int_eq(write(b, buf, sizeof buf), sizeof buf);
	close(b);
	spin(5);
	ck_assert_str_eq(r.log, "r");

	b = open_pair(&r, SOCK_STREAM, 'E');
	close(b);
	spin(5);
	ck_assert_str_eq(r.log, "E");

	b = open_pair(&r, SOCK_STREAM, 'd');
	evbuffer_add(sock_output(r.s), "bye", 3);
	spin(5);
	ck_assert_str_eq(r.log, "d");
	close(b);

	b = open_pair(&r, SOCK_STREAM, 'e');
	spin(1);
	sock_read_enable(r.s, 0);
	close(b);
	evbuffer_add(sock_output(r.s), "x", 1);
	spin(5);
	ck_assert_str_eq(r.log, "e");

	/* Connected, with output queued and reading about to start. */
	ck_assert_int_eq(open_connect(&r, 1, &lfd), 0);
	r.free_in = 'c';
	evbuffer_add(sock_output(r.s), "x", 1);
	LOOP_UNTIL(r.connects == 1);
	spin(5);
	ck_assert_str_eq(r.log, "c");
	close(lfd);

	/* Outside any callback, with the first read and a flush pending. */
	b = open_pair(&r, SOCK_STREAM, 0);
	say(b, "x");
	evbuffer_add(sock_output(r.s), "x", 1);
	sock_free(r.s);
	spin(3);
	ck_assert_str_eq(r.log, "");
	close(b);
}
END_TEST

START_TEST(test_set_cbs)
{
	struct rec	r1, r2 = { 0 };
	int		b = open_pair(&r1, SOCK_STREAM, 0);

	r2.s = r1.s;
	say(b, "a");
	LOOP_UNTIL(r1.reads == 1);
	sock_set_cbs(r1.s, &alt_cbs, &r2);
	say(b, "b");
	LOOP_UNTIL(r2.alt == 1);
	ck_assert_uint_eq(sock_input_len(r1.s), 0);	/* alt drained "ab" */
	close(b);
	LOOP_UNTIL(r2.errors == 1);
	ck_assert_str_eq(r2.log, "E");
	ck_assert_int_eq(r1.reads, 1);
	ck_assert_int_eq(r1.errors, 0);
	sock_free(r1.s);
}
END_TEST

static Suite *
sock_suite(void)
{
	Suite	*s = suite_create("sock");
	TCase	*tc = tcase_create("sock");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_input_arrives);
	tcase_add_test(tc, test_peek_idle);
	tcase_add_test(tc, test_accepted_reads_at_once);
	tcase_add_test(tc, test_limits_before_first_pass);
	tcase_add_test(tc, test_large_input);
	tcase_add_test(tc, test_read_max);
	tcase_add_test(tc, test_read_disable);
	tcase_add_test(tc, test_read_disable_before_first_pass);
	tcase_add_test(tc, test_flush_deferred_coalesced);
	tcase_add_test(tc, test_short_writes);
	tcase_add_test(tc, test_eof_after_data);
	tcase_add_test(tc, test_write_error);
	tcase_add_test(tc, test_connect);
	tcase_add_test(tc, test_connect_refused);
	tcase_add_test(tc, test_connect_refused_with_output);
	tcase_add_test(tc, test_free_in_callbacks);
	tcase_add_test(tc, test_set_cbs);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(sock_suite());
	int	 failed;

	signal(SIGPIPE, SIG_IGN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
