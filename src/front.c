/*
 * front.c -- a client connection (see front.h).
 *
 * One request at a time: the parser stops after each message, and the next
 * one is parsed only when the current response is complete, so pipelined
 * responses go back in order without a reorder buffer.
 *
 * A request ends when both halves are done: the request read (req_done)
 * and the response written (resp_done).  Either can finish first: a replica
 * may answer before the upload ends (the rest of the body is then read and
 * dropped), and a client may send its whole body before the answer starts.
 *
 * Callbacks may arrive from inside the parser or from an upstream's read
 * loop, so nothing here frees the connection synchronously: front_close()
 * only marks it, and the resume event frees it from the top of the loop.
 *
 * This file is the connection (accept, read, timers, keep-alive, pipelining,
 * free); one request and its answer are in front_req.c (front_impl.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "clientlim.h"
#include "deadline.h"
#include "conf.h"
#include "front.h"
#include "front_impl.h"
#include "h2.h"
#include "http1.h"
#include "log.h"
#include "net.h"
#include "reqlog.h"
#include "resp.h"
#include "sock.h"
#include "stream.h"
#include "tls.h"
#include "wctx.h"
#include "worker.h"

static void	front_process(struct front *);
static void	front_close(struct front *);
static void	front_timeout_close(struct front *, const char *);

static void
front_link(struct front *f)
{
	LIST_INSERT_HEAD(&f->w->fronts, f, link);
}

static void
front_free(struct front *f)
{
	LIST_REMOVE(f, link);
	if (f->req != NULL || f->log.status != 0)
		front_reqlog(f, !f->resp_done);
	if (f->stream != NULL)
		front_stream_release(f, 1);
	http1_free(f->parser);
	if (f->sock != NULL)
		sock_free(f->sock);
	deadline_del(&f->timer);
	event_free(f->resume);
	free(f->target);
	free(f->name);
	free(f->admin_body);
	free(f->subject);
	if (f->sock != NULL) {		/* else handed over to h2.c */
		clientlim_close(f->client_key);
		worker_conn_close(f->w);
	}
	free(f);
}

/* Stop reading; free once what we wrote has gone out. */
static void
front_close(struct front *f)
{
	f->closing = 1;
	front_disarm(f);
	sock_read_enable(f->sock, 0);
	if (f->stream != NULL)
		front_stream_release(f, 1);
	/* A client that never reads must not keep us forever. */
	front_arm(f, T_HEADER);
	front_schedule(f);
}

/* Both halves done: reset for the next request on this connection. */
static void
front_next(struct front *f)
{
	front_reqlog(f, 0);
	http1_next(f->parser);
	f->req = NULL;
	f->req_done = f->resp_done = f->resp_started = 0;
	f->local_status = 0;
	f->local_why = NULL;
	f->framing = RESP_LENGTH;
	f->resp_left = 0;
	f->resp_given = f->resp_credited = 0;
	f->request_id[0] = '\0';
	if (!f->keep_alive) {
		front_close(f);
		return;
	}
	front_arm(f, sock_input_len(f->sock) > 0 ?
	    T_HEADER : T_IDLE);
}

static void
front_parse_error(struct front *f)
{
	int status = http1_error_status(f->parser);

	log_debug("client %s: %d: %s", f->peer, status,
	    http1_error_reason(f->parser));
	f->keep_alive = 0;
	if (f->stream != NULL)
		front_stream_release(f, 1);
	if (!f->resp_started) {
		size_t before = front_out_len(f);

		resp_error(front_out(f), 1, status,
		    http1_error_reason(f->parser), f->request_id[0] ?
		    f->request_id : NULL, 0, 0);
		front_count_out(f, before);
		f->log.status = status;
		f->resp_done = 1;
		if (f->log.t_start == 0)
			f->log.t_start = front_now(f);
	}
	front_close(f);
}

/*
 * timeouts.body bounds the gap between two reads; a client dripping a
 * byte per gap would still hold the connection and a replica stream for
 * ever.  So once a body has taken longer than timeouts.body, it must have
 * averaged FRONT_MIN_BODY_RATE, or it is cut off (408).
 */
static int
front_body_too_slow(struct front *f)
{
	double elapsed = front_now(f) - f->log.t_start;

	return elapsed > f->w->conf->timeouts.body &&
	    (double)f->log.bytes_in < elapsed * FRONT_MIN_BODY_RATE;
}

/*
 * The HTTP/2 dispatch point: a connection whose first bytes are the
 * HTTP/2 preface goes to the HTTP/2 edge (h2.c) with its socket, its
 * counts and what it sent; this front is freed.  1: handed over (f is
 * gone), 0: HTTP/1.1, -1: too few bytes yet.
 */
static int
front_sniff_h2(struct front *f)
{
	char head[16];
	ev_ssize_t n;
	int rv;

	n = evbuffer_copyout(sock_input(f->sock), head, sizeof(head));
	if ((rv = h2_sniff(head, n > 0 ? (size_t)n : 0)) != 1)
		return rv;
	if (h2_accept(f->w, f->sock, f->peer, f->admin, f->client_key) == -1) {
		front_close(f);
		return 1;
	}
	f->sock = NULL;
	front_free(f);
	return 1;
}

static void
front_process(struct front *f)
{
	struct evbuffer *in = sock_input(f->sock);
	struct evbuffer_iovec v;
	enum http1_state st;
	size_t consumed;

	while (!f->closing) {
		if (f->req_done) {
			if (!f->resp_done)
				return;		/* the answer is on its way */
			front_next(f);
			continue;
		}
		if (f->stream != NULL && !stream_can_take_body(f->stream)) {
			/* No replica or no credit yet: leave the body in the
			 * socket, where TCP pushes back on the client. */
			sock_read_enable(f->sock, 0);
			return;
		}
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0) {
			/* All parsed: read again (a full input had stopped
			 * reading until now). */
			sock_read_enable(f->sock, 1);
			return;
		}
		if (!f->sniffed) {
			int h2 = front_sniff_h2(f);

			if (h2 == 1)
				return;		/* f is gone */
			if (h2 == -1) {
				sock_read_enable(f->sock, 1);
				return;
			}
			f->sniffed = 1;
		}
		if (http1_idle(f->parser) && f->timer_kind == T_IDLE)
			front_arm(f, T_HEADER);
		st = http1_feed(f->parser, v.iov_base, v.iov_len, &consumed);
		evbuffer_drain(in, consumed);
		if (st == HTTP1_ERROR) {
			front_parse_error(f);
			return;
		}
		if (f->req != NULL && !f->req_done && f->timer_kind == T_BODY) {
			if (front_body_too_slow(f)) {
				front_timeout_close(f, "request body too slow");
				return;
			}
			front_arm(f, T_BODY);	/* the body made progress */
		}
	}
}

static void
front_read_cb(void *arg)
{
	front_process(arg);
}

/* Output at or under FRONT_WRITE_LOW. */
static void
front_drained_cb(void *arg)
{
	struct front *f = arg;

	if (f->closing)
		front_schedule(f);
	else
		front_credit(f);
}

static void
front_resume_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct front *f = arg;

	if (f->closing) {
		if (front_out_len(f) == 0)
			front_free(f);
		return;
	}
	front_process(f);
}

static void
front_error_cb(void *arg, int eof)
{
	struct front *f = arg;

	if (!eof && sock_tls_error(f->sock)[0] != '\0')
		log_debug("client %s: TLS: %s", f->peer,
		    sock_tls_error(f->sock));
	else if (!eof)
		log_debug("client %s: %s", f->peer, strerror(errno));
	/* EOF or error: whatever is in flight is abandoned (CANCEL). */
	front_free(f);
}

/* A client too slow with its request: 408 (unless an answer started). */
static void
front_timeout_close(struct front *f, const char *why)
{
	if (!f->resp_started) {
		size_t before = front_out_len(f);

		resp_error(front_out(f), 1, 408, why, NULL, 0, 0);
		front_count_out(f, before);
		f->log.status = 408;
	}
	front_close(f);
}

static void
front_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct front *f = arg;

	if (!deadline_expired(&f->timer))
		return;
	if (f->closing) {
		front_free(f);		/* the client stopped reading */
		return;
	}
	if (f->timer_kind == T_WATCH) {
		/* Slow to answer: see a client that goes away. */
		f->timer_kind = T_NONE;
		sock_read_enable(f->sock, 1);
	} else if (f->timer_kind == T_HEADER)
		front_timeout_close(f, "request header not received in time");
	else if (f->timer_kind == T_BODY)
		front_timeout_close(f, "request body not received in time");
	else
		front_close(f);
}

static const struct sock_cbs front_sock_cbs = {
	front_read_cb, front_drained_cb, NULL, front_error_cb,
};

/*
 * Over limits.max_connections: a clear 503 in one non-blocking send, then
 * close.  Nothing is allocated for the connection; if the send does not
 * fit in the socket buffer the client sees only the close.
 */
static void
front_refuse(int fd)
{
	static const char msg[] = "HTTP/1.1 503 Service Unavailable\r\n"
	    "content-type: text/plain; charset=utf-8\r\n"
	    "content-length: 51\r\nretry-after: 1\r\nconnection: close\r\n\r\n"
	    "503 Service Unavailable: too many open connections\n";
	ssize_t rv;

	rv = send(fd, msg, sizeof(msg) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)rv;
	evutil_closesocket(fd);
}

/* A TLS listener's connection: the handshake comes first. */
static int
front_tls(struct front *f, struct tls_slot *slot)
{
	struct ssl_st *ssl;
	double timeout;

	if (slot == NULL)
		return 0;
	if ((ssl = tls_slot_ssl(slot, &timeout)) == NULL)
		return -1;
	return sock_tls_accept(f->sock, ssl, timeout);
}

static void
front_open(struct wctx *w, int fd, const struct sockaddr *sa, int socklen,
    int admin, struct tls_slot *slot)
{
	const struct conf *conf = w->conf;
	struct http1_limits lim;
	struct front *f;

	uint64_t client_key;

	if (worker_conn_open(w) == -1) {
		front_refuse(fd);
		return;
	}
	if (clientlim_open(sa, conf->limits.max_connections_per_client,
	    &client_key) == -1) {
		worker_conn_close(w);
		front_refuse(fd);
		return;
	}
	if ((f = calloc(1, sizeof(*f))) == NULL) {
		clientlim_close(client_key);
		worker_conn_close(w);
		evutil_closesocket(fd);
		return;
	}
	f->w = w;
	f->client_key = client_key;
	f->admin = admin;
	net_peer_text(sa, f->peer, sizeof(f->peer));
	lim.max_request_line = conf->limits.max_request_line;
	lim.max_header_bytes = conf->limits.max_header_bytes;
	lim.max_headers = conf->limits.max_headers;
	lim.max_body = conf->limits.max_body;
	f->parser = http1_new(&lim, &front_http1_callbacks, f);
	f->sock = sock_new(w->base, fd, &front_sock_cbs, f);
	deadline_init(&f->timer, w->base, front_timer_cb, f);
	f->resume = event_new(w->base, -1, 0, front_resume_cb, f);
	if (f->parser == NULL || f->sock == NULL || f->resume == NULL ||
	    front_tls(f, slot) == -1) {
		if (f->sock == NULL)
			evutil_closesocket(fd);
		else
			sock_free(f->sock);
		if (f->parser != NULL)
			http1_free(f->parser);
		if (f->resume != NULL)
			event_free(f->resume);
		clientlim_close(client_key);
		worker_conn_close(w);
		free(f);
		return;
	}
	f->keep_alive = 1;
	f->minor = 1;
	f->log.upstream_s = -1;
	front_link(f);
	sock_set_limits(f->sock, FRONT_READ_HIGH, FRONT_WRITE_LOW);
	front_arm(f, T_HEADER);
}

void
front_accept(struct wctx *w, int fd, const struct sockaddr *sa, int socklen,
    int admin)
{
	front_open(w, fd, sa, socklen, admin, NULL);
}

/* Worker shutdown: every connection goes, in-flight requests cancelled. */
void
front_free_all(struct wctx *w)
{
	while (!LIST_EMPTY(&w->fronts))
		front_free(LIST_FIRST(&w->fronts));
	h2_free_all(w);
}

/*
 * Graceful stop: idle connections close now; busy ones close after the
 * response in progress (keep-alive off), so nothing in flight is lost.
 * Returns how many connections are still busy.
 */
unsigned
front_drain_all(struct wctx *w)
{
	struct front *f, *next;
	unsigned busy = 0;

	for (f = LIST_FIRST(&w->fronts); f != NULL; f = next) {
		next = LIST_NEXT(f, link);
		if (f->closing)
			continue;
		if (f->req == NULL && http1_idle(f->parser)) {
			front_close(f);
			continue;
		}
		f->keep_alive = 0;
		busy++;
	}
	return busy + h2_drain_all(w);
}

/* worker_add_listener's accept functions, by listener kind. */
void
front_accept_client(struct wctx *w, int fd, const struct sockaddr *sa,
    int socklen, void *arg)
{
	front_open(w, fd, sa, socklen, 0, arg);
}

void
front_accept_admin(struct wctx *w, int fd, const struct sockaddr *sa,
    int socklen, void *arg)
{
	front_open(w, fd, sa, socklen, 1, arg);
}
