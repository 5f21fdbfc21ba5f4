/*
 * sock.h -- a non-blocking stream socket with an input and an output
 * evbuffer, for the client side (front) and the replica side (upstream).
 *
 * It replaces libevent's bufferevent on the hot path, for the system calls
 * it saves (docs/performance.md, "What to attack next"):
 *   - no ioctl(FIONREAD) before each read, and reads sized to the traffic
 *     (16 KiB growing to 256 KiB while reads come back full), not 4 KiB;
 *   - no write event armed and disarmed per response: output is written
 *     once per loop pass from a deferred flush (so a head and the body
 *     queued by separate callbacks leave in one writev), and EV_WRITE is
 *     armed only while the kernel takes less than everything.
 * The read event stays registered while reading is wanted and the input
 * is under its limit, so a keep-alive request costs one read and one writev;
 * a new accepted socket is read once before its event is registered.
 *
 * Callbacks run only from the socket's own events, never from inside a
 * sock_* call; any of them may call sock_free().  After the error callback
 * (EOF included) the socket does no more I/O: owners free it.  A client's
 * half-close is therefore an abort, as it was with bufferevent.
 *
 * TLS mode (sock_tls_accept, sock_tls_connect): the same discipline with
 * OpenSSL over the descriptor (read-ahead on, so one read() takes what the
 * kernel has): the handshake runs first and nothing is delivered before
 * it is done; then one burst of SSL_read per wake-up into the input, and
 * one flush of SSL_write per loop pass from the output.  A client sock
 * reports connected only after its handshake.  A failed or timed-out
 * handshake is an error (errno EPROTO or ETIMEDOUT), counted in tls.c.
 */
#ifndef INGRESSD_SOCK_H
#define INGRESSD_SOCK_H

#include <stddef.h>
#include <sys/socket.h>

struct event_base;
struct evbuffer;
struct sock;

struct sock_cbs {
	void	(*read)(void *arg);		/* the input grew */
	void	(*drained)(void *arg);		/* output at or under low */
	void	(*connected)(void *arg);	/* sock_connect() finished */
	void	(*error)(void *arg, int eof);	/* eof, or errno says */
};

/* fd < 0: a socket for sock_connect().  The sock owns fd from here on. */
struct sock	*sock_new(struct event_base *, int fd, const struct sock_cbs *,
		    void *arg);
int		 sock_connect(struct sock *, const struct sockaddr *, socklen_t);
void		 sock_free(struct sock *);
void		 sock_set_cbs(struct sock *, const struct sock_cbs *, void *);
/* Read no further ahead than read_max; call drained at or under write_low. */
void		 sock_set_limits(struct sock *, size_t read_max, size_t write_low);

struct evbuffer	*sock_input(struct sock *);
/* The output, for appending: a flush is scheduled for this loop pass. */
struct evbuffer	*sock_output(struct sock *);
size_t		 sock_output_len(const struct sock *);
size_t		 sock_input_len(const struct sock *);
/* Write what can be written now, without callbacks (a last GOAWAY). */
void		 sock_write_now(struct sock *);
/* An idle socket looked at, without blocking and without callbacks:
 * 0 nothing came, 1 bytes came, -1 closed (errno 0) or failed (errno).
 * In TLS mode records are processed first, so a session ticket or a key
 * update is not taken for bytes, and a close_notify is a close. */
int		 sock_peek_idle(struct sock *);
/* Want input (the default) or not: pausing leaves it to TCP to push back. */
void		 sock_read_enable(struct sock *, int on);
int		 sock_fd(const struct sock *);

struct ssl_st;
/* TLS over the socket (the sock owns ssl from here on): server side right
 * after sock_new(), client side before sock_connect().  timeout: seconds
 * the handshake may take (0: no limit).  -1 on failure (ssl freed). */
int		 sock_tls_accept(struct sock *, struct ssl_st *, double timeout);
int		 sock_tls_connect(struct sock *, struct ssl_st *, double timeout);
/* The TLS session (after the handshake), or NULL for a plain socket. */
struct ssl_st	*sock_ssl(const struct sock *);
/* The last handshake failure's text (OpenSSL's), or "". */
const char	*sock_tls_error(const struct sock *);

#endif
