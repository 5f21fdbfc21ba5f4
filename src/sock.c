/*
 * sock.c -- a non-blocking stream socket with evbuffers (see sock.h).
 *
 * Two events per socket.  The read event is persistent and stays added
 * while input is wanted and under read_max.  The write event does double
 * duty: made active by hand (no system call) to flush once per loop pass,
 * and added only while a write came back short or a connect is pending.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "sock.h"
#include "tls.h"

/* The first read of a burst; doubled while reads fill it, up to the max. */
#define SOCK_CHUNK_MIN		(16 * 1024 - 128)
#define SOCK_CHUNK_MAX		(256 * 1024)
/* Reads per wake-up before other sockets get their turn. */
#define SOCK_READ_ROUNDS	4
/* TLS: records (16 KiB each at most) decrypted per wake-up, and the most
 * one SSL_write takes (one record). */
#define SOCK_TLS_ROUNDS		16
#define SOCK_TLS_RECORD		16384

struct sock {
	int		 fd;
	struct event_base *base;
	struct event	*rev, *wev;
	struct evbuffer	*in, *out;
	const struct sock_cbs *cbs;
	void		*arg;
	size_t		 read_max;
	size_t		 write_low;
	size_t		 chunk;		/* the next read's size */
	unsigned	 depth;		/* callbacks running */
	unsigned	 want_read:1;	/* the owner wants input */
	unsigned	 reading:1;	/* rev is added */
	unsigned	 writing:1;	/* wev is added */
	unsigned	 flushing:1;	/* wev is made active */
	unsigned	 connecting:1;
	unsigned	 probing:1;	/* rev made active, not yet added */
	unsigned	 dead:1;	/* sock_free() inside a callback */
	unsigned	 failed:1;	/* EOF or error: no more I/O */
	unsigned	 handshaking:1;	/* TLS: nothing delivered yet */
	unsigned	 tls_rw:1;	/* TLS: a read waits for writability */
	unsigned	 tls_wr:1;	/* TLS: a write waits for readability */
	SSL		*ssl;		/* NULL: plain */
	struct event	*hs_timer;	/* TLS: handshake timeout */
	size_t		 tls_wpend;	/* TLS: an SSL_write to retry, its size */
	char		 tls_err[128];
};

static void	sock_read_cb(evutil_socket_t, short, void *);
static void	sock_write_cb(evutil_socket_t, short, void *);
static void	sock_tls_read(struct sock *);
static void	sock_tls_flush(struct sock *, int callbacks);
static int	sock_tls_shake(struct sock *);

static int
sock_attach(struct sock *s, int fd)
{
	s->fd = fd;
	s->rev = event_new(s->base, fd, EV_READ | EV_PERSIST, sock_read_cb, s);
	s->wev = event_new(s->base, fd, EV_WRITE | EV_PERSIST, sock_write_cb,
	    s);
	return s->rev == NULL || s->wev == NULL ? -1 : 0;
}

/* Read events on exactly while input is wanted and there is room. */
static void
sock_update_read(struct sock *s)
{
	int on = (s->want_read || s->handshaking) && !s->connecting &&
	    !s->dead && !s->failed && s->fd >= 0 &&
	    evbuffer_get_length(s->in) < s->read_max;

	/* libevent ignores event_add() on an active event: wait for the
	 * first read to run. */
	if (s->probing || on == s->reading)
		return;
	if (on)
		event_add(s->rev, NULL);
	else
		event_del(s->rev);
	s->reading = on;
	/* TLS read ahead: records already taken from the kernel raise no
	 * event; a read resumed after a pause must look at them by hand. */
	if (on && s->ssl != NULL && !s->handshaking && SSL_has_pending(s->ssl)) {
		s->probing = 1;
		event_active(s->rev, EV_READ, 1);
	}
}

static void
sock_arm_write(struct sock *s, int on)
{
	if (on == s->writing)
		return;
	if (on)
		event_add(s->wev, NULL);
	else
		event_del(s->wev);
	s->writing = on;
}

struct sock *
sock_new(struct event_base *base, int fd, const struct sock_cbs *cbs,
    void *arg)
{
	struct sock *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->base = base;
	s->fd = -1;
	s->cbs = cbs;
	s->arg = arg;
	s->read_max = SOCK_CHUNK_MAX;
	s->write_low = 0;
	s->chunk = SOCK_CHUNK_MIN;
	s->want_read = 1;
	s->in = evbuffer_new();
	s->out = evbuffer_new();
	if (s->in == NULL || s->out == NULL ||
	    (fd >= 0 && sock_attach(s, fd) == -1)) {
		s->fd = -1;	/* the caller still owns fd on failure */
		sock_free(s);
		return NULL;
	}
	/*
	 * An accepted socket is read at once, before its read event is
	 * registered: the request is usually there already, and one that
	 * is answered and closed in a pass or two then never costs an
	 * epoll_ctl.  Activating an event is no system call.
	 */
	if (fd >= 0) {
		s->probing = 1;
		event_active(s->rev, EV_READ, 1);
	}
	return s;
}

int
sock_connect(struct sock *s, const struct sockaddr *sa, socklen_t len)
{
	int fd;

	if (s->fd >= 0)
		return -1;
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1)
		return -1;
	if (sock_attach(s, fd) == -1 ||
	    (s->ssl != NULL && SSL_set_fd(s->ssl, fd) != 1)) {
		errno = ENOMEM;
		return -1;
	}
	if (connect(fd, sa, len) == -1 && errno != EINPROGRESS)
		return -1;
	/* Finished or not, sock_write_cb reports it: never from in here. */
	s->connecting = 1;
	sock_arm_write(s, 1);
	return 0;
}

static void
sock_destroy(struct sock *s)
{
	if (s->rev != NULL)
		event_free(s->rev);
	if (s->wev != NULL)
		event_free(s->wev);
	if (s->hs_timer != NULL)
		event_free(s->hs_timer);
	if (s->ssl != NULL) {
		/* A close_notify if it fits now; never waited for. */
		if (!s->handshaking && !s->failed && s->fd >= 0)
			(void)SSL_shutdown(s->ssl);
		SSL_free(s->ssl);
		ERR_clear_error();
	}
	if (s->fd >= 0)
		close(s->fd);
	if (s->in != NULL)
		evbuffer_free(s->in);
	if (s->out != NULL)
		evbuffer_free(s->out);
	free(s);
}

void
sock_free(struct sock *s)
{
	if (s == NULL)
		return;
	if (s->depth == 0) {
		sock_destroy(s);
		return;
	}
	/* Inside one of our callbacks: quiet now, freed on the way out. */
	s->dead = 1;
	if (s->rev != NULL)
		event_del(s->rev);
	if (s->wev != NULL)
		event_del(s->wev);
	s->reading = s->writing = s->flushing = 0;
}

void
sock_set_cbs(struct sock *s, const struct sock_cbs *cbs, void *arg)
{
	s->cbs = cbs;
	s->arg = arg;
}

void
sock_set_limits(struct sock *s, size_t read_max, size_t write_low)
{
	s->read_max = read_max;
	s->write_low = write_low;
	sock_update_read(s);
}

struct evbuffer *
sock_input(struct sock *s)
{
	return s->in;
}

struct evbuffer *
sock_output(struct sock *s)
{
	if (!s->flushing && !s->writing && !s->connecting && !s->dead &&
	    !s->failed && !s->handshaking && s->fd >= 0) {
		s->flushing = 1;
		event_active(s->wev, EV_WRITE, 1);
	}
	return s->out;
}

size_t
sock_output_len(const struct sock *s)
{
	return evbuffer_get_length(s->out);
}

size_t
sock_input_len(const struct sock *s)
{
	return evbuffer_get_length(s->in);
}

int
sock_fd(const struct sock *s)
{
	return s->fd;
}

void
sock_read_enable(struct sock *s, int on)
{
	s->want_read = on != 0;
	sock_update_read(s);
}

void
sock_write_now(struct sock *s)
{
	if (s->fd < 0 || s->connecting || s->handshaking || s->failed ||
	    evbuffer_get_length(s->out) == 0)
		return;
	if (s->ssl != NULL)
		sock_tls_flush(s, 0);
	else
		(void)evbuffer_write_atmost(s->out, s->fd, -1);
}

int
sock_peek_idle(struct sock *s)
{
	char b;
	size_t n;
	ssize_t r;
	int e;

	if (s->fd < 0 || s->failed || s->handshaking) {
		errno = s->failed ? EPIPE : ENOTCONN;
		return -1;
	}
	if (s->ssl == NULL) {
		if ((r = recv(s->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT)) > 0)
			return 1;
		if (r == 0)
			errno = 0;
		else if (errno == EAGAIN || errno == EWOULDBLOCK ||
		    errno == EINTR)
			return 0;
		return -1;
	}
	ERR_clear_error();
	if (SSL_peek_ex(s->ssl, &b, 1, &n) == 1)
		return 1;
	e = SSL_get_error(s->ssl, 0);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return 0;
	if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL &&
	    errno == 0)) {
		errno = 0;
		return -1;
	}
	if (e != SSL_ERROR_SYSCALL) {
		(void)tls_fail_reason(s->ssl, e, s->tls_err,
		    sizeof(s->tls_err));
		errno = EPROTO;
	}
	return -1;
}

/* Callbacks ------------------------------------------------------------ */

static void
sock_enter(struct sock *s)
{
	s->depth++;
}

/* Returns -1 when the sock was freed inside the callbacks. */
static int
sock_leave(struct sock *s)
{
	if (--s->depth == 0 && s->dead) {
		sock_destroy(s);
		return -1;
	}
	return s->dead ? -1 : 0;
}

static void
sock_fail(struct sock *s, int eof, int err)
{
	s->failed = 1;
	s->want_read = 0;
	sock_update_read(s);
	sock_arm_write(s, 0);
	errno = err;
	if (s->cbs->error != NULL)
		s->cbs->error(s->arg, eof);
}

/* One readv of at most want bytes into the input's free space. */
static ssize_t
sock_read_once(struct sock *s, size_t want)
{
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	size_t left = want, take;
	ssize_t n;
	int i, nv;

	if ((nv = evbuffer_reserve_space(s->in, (ev_ssize_t)want, v, 2)) < 1) {
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < nv; i++) {
		take = v[i].iov_len < left ? v[i].iov_len : left;
		iov[i].iov_base = v[i].iov_base;
		iov[i].iov_len = take;
		left -= take;
	}
	if ((n = readv(s->fd, iov, nv)) <= 0)
		return n;
	left = (size_t)n;
	for (i = 0; i < nv && left > 0; i++) {
		take = iov[i].iov_len < left ? iov[i].iov_len : left;
		v[i].iov_len = take;
		left -= take;
	}
	evbuffer_commit_space(s->in, v, i);
	return n;
}

static void
sock_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sock *s = arg;
	size_t len, want, got = 0;
	int rounds, eof = 0, err = 0;
	ssize_t n;

	s->probing = 0;
	if (s->ssl != NULL) {
		sock_tls_read(s);
		return;
	}
	if (!s->want_read) {
		sock_update_read(s);	/* paused before the first read */
		return;
	}
	for (rounds = 0; rounds < SOCK_READ_ROUNDS; rounds++) {
		if ((len = evbuffer_get_length(s->in)) >= s->read_max)
			break;
		want = s->read_max - len < s->chunk ? s->read_max - len :
		    s->chunk;
		if ((n = sock_read_once(s, want)) == 0) {
			eof = 1;
			break;
		}
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR)
				err = errno;
			break;
		}
		got += (size_t)n;
		if ((size_t)n < want) {
			/* The kernel had no more: a small read sizes the next. */
			if ((size_t)n < s->chunk / 4 && s->chunk > SOCK_CHUNK_MIN)
				s->chunk /= 2;
			break;
		}
		if (want == s->chunk && s->chunk < SOCK_CHUNK_MAX)
			s->chunk *= 2;
	}
	sock_enter(s);
	if (got > 0 && s->cbs->read != NULL)
		s->cbs->read(s->arg);
	if (!s->dead && (eof || err))
		sock_fail(s, eof, err);
	if (sock_leave(s) == 0)
		sock_update_read(s);
}

static void
sock_connect_done(struct sock *s)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err == EINPROGRESS || err == EALREADY)
		return;		/* not yet */
	s->connecting = 0;
	sock_enter(s);
	if (err != 0) {
		sock_fail(s, 0, err);
		sock_leave(s);
		return;		/* one error, whatever was queued */
	}
	if (s->ssl != NULL) {
		/* connected is reported once the handshake is done. */
		sock_arm_write(s, 0);
		/* It may finish here, if the server's answer is in. */
		(void)sock_tls_shake(s);
		if (sock_leave(s) == 0)
			sock_update_read(s);
		return;
	}
	if (s->cbs->connected != NULL)
		s->cbs->connected(s->arg);
	if (sock_leave(s) == -1)
		return;
	sock_update_read(s);
	sock_arm_write(s, evbuffer_get_length(s->out) > 0);
}

static void
sock_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sock *s = arg;
	size_t left;
	int n = 0;

	s->flushing = 0;
	if (s->connecting) {
		sock_connect_done(s);
		return;
	}
	if (s->failed)
		return;
	if (s->ssl != NULL) {
		sock_tls_flush(s, 1);
		return;
	}
	if (evbuffer_get_length(s->out) > 0 &&
	    (n = evbuffer_write_atmost(s->out, s->fd, -1)) < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			sock_enter(s);
			sock_fail(s, 0, errno);
			sock_leave(s);
			return;
		}
		n = 0;
	}
	left = evbuffer_get_length(s->out);
	sock_arm_write(s, left > 0);
	if (n > 0 && left <= s->write_low && s->cbs->drained != NULL) {
		sock_enter(s);
		s->cbs->drained(s->arg);
		sock_leave(s);
	}
}

/* TLS ------------------------------------------------------------------- */

static void
sock_tls_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct sock *s = arg;

	if (!s->handshaking || s->failed || s->dead)
		return;
	snprintf(s->tls_err, sizeof(s->tls_err), "handshake timed out");
	tls_handshake_failed(TLS_FAIL_TIMEOUT);
	sock_enter(s);
	sock_fail(s, 0, ETIMEDOUT);
	sock_leave(s);
}

static int
sock_tls_start(struct sock *s, SSL *ssl, double timeout)
{
	struct timeval tv;

	if (s->ssl != NULL) {
		SSL_free(ssl);
		return -1;
	}
	s->ssl = ssl;		/* freed with the sock from here on */
	s->handshaking = 1;
	if (timeout <= 0)
		return 0;
	if ((s->hs_timer = evtimer_new(s->base, sock_tls_timeout, s)) == NULL)
		return -1;
	tv.tv_sec = (time_t)timeout;
	tv.tv_usec = (suseconds_t)((timeout - (double)tv.tv_sec) * 1e6);
	return evtimer_add(s->hs_timer, &tv);
}

int
sock_tls_accept(struct sock *s, struct ssl_st *ssl, double timeout)
{
	if (s->fd < 0 || SSL_set_fd(ssl, s->fd) != 1) {
		SSL_free(ssl);
		return -1;
	}
	return sock_tls_start(s, ssl, timeout);
}

int
sock_tls_connect(struct sock *s, struct ssl_st *ssl, double timeout)
{
	if (s->fd >= 0) {
		SSL_free(ssl);
		return -1;
	}
	return sock_tls_start(s, ssl, timeout);
}

struct ssl_st *
sock_ssl(const struct sock *s)
{
	return s->handshaking ? NULL : s->ssl;
}

const char *
sock_tls_error(const struct sock *s)
{
	return s->tls_err;
}

/*
 * One handshake step, inside sock_enter(): 1 done, 0 waiting (events set
 * for what OpenSSL wants), -1 failed (the error callback ran).  A client
 * sock reports connected here.
 */
static int
sock_tls_shake(struct sock *s)
{
	enum tls_fail why;
	int r, e;

	ERR_clear_error();
	if ((r = SSL_do_handshake(s->ssl)) != 1) {
		e = SSL_get_error(s->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			sock_arm_write(s, e == SSL_ERROR_WANT_WRITE);
			sock_update_read(s);
			return 0;
		}
		why = tls_fail_reason(s->ssl, e, s->tls_err,
		    sizeof(s->tls_err));
		tls_handshake_failed(why);
		sock_fail(s, why == TLS_FAIL_EOF, EPROTO);
		return -1;
	}
	s->handshaking = 0;
	if (s->hs_timer != NULL)
		event_del(s->hs_timer);
	tls_handshake_ok(s->ssl);
	sock_arm_write(s, 0);
	/* Output queued during the handshake (an HTTP pool's health check)
	 * leaves now, wherever the handshake finished (the connect's own
	 * step, when the server's answers are in already). */
	if (evbuffer_get_length(s->out) > 0)
		(void)sock_output(s);
	if (!SSL_is_server(s->ssl) && s->cbs->connected != NULL)
		s->cbs->connected(s->arg);
	return s->dead ? -1 : 1;
}

/* SSL_read's error, as the plain read's eof or errno. */
static void
sock_tls_read_error(struct sock *s, int e, int *eof, int *err)
{
	if (e == SSL_ERROR_WANT_WRITE) {
		s->tls_rw = 1;		/* e.g. a key update to answer */
		sock_arm_write(s, 1);
	} else if (e == SSL_ERROR_ZERO_RETURN ||
	    (e == SSL_ERROR_SYSCALL && errno == 0))
		*eof = 1;
	else if (e == SSL_ERROR_SYSCALL)
		*err = errno;
	else if (e != SSL_ERROR_WANT_READ) {
		(void)tls_fail_reason(s->ssl, e, s->tls_err,
		    sizeof(s->tls_err));
		*err = EPROTO;
	}
}

/* The read event in TLS mode: handshake, then one burst of records. */
static void
sock_tls_read(struct sock *s)
{
	struct evbuffer_iovec v;
	size_t len, room, n, got = 0;
	int rounds = 0, eof = 0, err = 0;

	sock_enter(s);
	if (s->handshaking && sock_tls_shake(s) != 1)
		goto out;
	ERR_clear_error();
	for (; s->want_read && rounds < SOCK_TLS_ROUNDS; rounds++) {
		if ((len = evbuffer_get_length(s->in)) >= s->read_max)
			break;
		room = s->read_max - len < SOCK_TLS_RECORD ?
		    s->read_max - len : SOCK_TLS_RECORD;
		if (evbuffer_reserve_space(s->in, (ev_ssize_t)room, &v, 1) < 1) {
			err = ENOMEM;
			break;
		}
		if (SSL_read_ex(s->ssl, v.iov_base, room, &n) != 1) {
			sock_tls_read_error(s, SSL_get_error(s->ssl, 0), &eof,
			    &err);
			break;
		}
		v.iov_len = n;
		evbuffer_commit_space(s->in, &v, 1);
		got += n;
	}
	if (got > 0 && s->cbs->read != NULL)
		s->cbs->read(s->arg);
	if (!s->dead && (eof || err))
		sock_fail(s, eof, err);
	if (s->dead || s->failed)
		goto out;
	/* Records left decrypted-to-be after our share: another pass. */
	if (rounds == SOCK_TLS_ROUNDS && SSL_has_pending(s->ssl)) {
		s->probing = 1;
		event_active(s->rev, EV_READ, 1);
	}
	if ((s->tls_wr || evbuffer_get_length(s->out) > 0) && !s->writing) {
		s->tls_wr = 0;
		(void)sock_output(s);
	}
out:
	if (sock_leave(s) == 0)
		sock_update_read(s);
}

/* SSL_write's error: 0 to wait, else an errno. */
static int
sock_tls_write_error(struct sock *s, int e)
{
	if (e == SSL_ERROR_WANT_WRITE)
		return 0;
	if (e == SSL_ERROR_WANT_READ) {
		s->tls_wr = 1;		/* the next read burst flushes */
		return 0;
	}
	if (e == SSL_ERROR_SYSCALL && errno != 0)
		return errno;
	(void)tls_fail_reason(s->ssl, e, s->tls_err, sizeof(s->tls_err));
	return EPROTO;
}

/*
 * The write event in TLS mode: the output, one record per SSL_write, or a
 * handshake or read that waited for writability.
 */
static void
sock_tls_flush(struct sock *s, int callbacks)
{
	size_t len, n, w, wrote = 0;
	int err = 0;

	if (callbacks && (s->handshaking || s->tls_rw)) {
		s->tls_rw = 0;
		sock_arm_write(s, 0);
		sock_tls_read(s);	/* may free s */
		return;
	}
	ERR_clear_error();
	while ((len = evbuffer_get_length(s->out)) > 0) {
		n = len < SOCK_TLS_RECORD ? len : SOCK_TLS_RECORD;
		if (s->tls_wpend > n)
			n = s->tls_wpend > len ? len : s->tls_wpend;
		if (SSL_write_ex(s->ssl, evbuffer_pullup(s->out, (ev_ssize_t)n),
		    n, &w) != 1) {
			s->tls_wpend = n;	/* retried with the same bytes */
			err = sock_tls_write_error(s, SSL_get_error(s->ssl, 0));
			break;
		}
		s->tls_wpend = 0;
		evbuffer_drain(s->out, w);
		wrote += w;
	}
	if (!callbacks)
		return;
	sock_enter(s);
	if (err != 0)
		sock_fail(s, 0, err);
	else {
		len = evbuffer_get_length(s->out);
		sock_arm_write(s, len > 0 && !s->tls_wr);
		if (wrote > 0 && len <= s->write_low && s->cbs->drained != NULL)
			s->cbs->drained(s->arg);
	}
	sock_leave(s);
}
