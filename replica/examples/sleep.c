/*
 * sleep.c -- a slow replica, for timeouts, cancellation and streaming tests.
 *
 *   ?ms=N          (0..600000) 200 "slept N ms\n" after N ms
 *   ?chunks=N      (1..100000) 200 at once, then N pieces "chunk I\n"
 *                  (I from 1), one every ms milliseconds, no content-length
 * Waiting is a libevent timer, never a blocking call.  A CANCEL stops the
 * timer and frees everything.  Bad parameters get 400.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "replica.h"

#define MS_MAX		600000
#define CHUNKS_MAX	100000
#define PENDING_MAX	(64 << 10)

struct nap {
	struct replica_req *q;
	struct event	*ev;
	unsigned long	 ms;
	unsigned long	 chunks;	/* 0: one answer after ms */
	unsigned long	 sent;
};

static void
nap_free(struct nap *n)
{
	replica_req_set_user(n->q, NULL);
	event_free(n->ev);
	free(n);
}

static void
nap_arm(struct nap *n)
{
	struct timeval tv = { n->ms / 1000, (n->ms % 1000) * 1000 };

	evtimer_add(n->ev, &tv);
}

/* The response may free the req, so the nap goes first. */
static void
nap_timer(evutil_socket_t fd, short what, void *arg)
{
	static const char *const hdrs[] = {
		"content-type", "text/plain", "content-length", NULL, NULL,
	};
	struct nap		*n = arg;
	struct replica_req	*q = n->q;
	const char		*h[5];
	char			 body[64], len[16];
	int			 blen;

	if (n->chunks == 0) {
		blen = snprintf(body, sizeof body, "slept %lu ms\n", n->ms);
		snprintf(len, sizeof len, "%d", blen);
		memcpy(h, hdrs, sizeof h);
		h[3] = len;
		nap_free(n);
		if (replica_respond(q, 200, h, 0) == 0)
			replica_write_end(q, body, (size_t)blen);
		return;
	}
	/* A reader slower than the chunks: wait rather than queue. */
	if (replica_req_pending(q) > PENDING_MAX) {
		nap_arm(n);
		return;
	}
	n->sent++;
	blen = snprintf(body, sizeof body, "chunk %lu\n", n->sent);
	if (n->sent == n->chunks) {
		nap_free(n);
		replica_write_end(q, body, (size_t)blen);
		return;
	}
	if (replica_write(q, body, (size_t)blen) != 0) {
		nap_free(n);
		replica_fail(q, "write failed");
		return;
	}
	nap_arm(n);
}

static int
param(struct replica_req *q, const char *key, unsigned long min,
    unsigned long max, unsigned long *v)
{
	char	 buf[16], *end;

	if (!replica_query_get(replica_req_query(q), key, buf, sizeof buf))
		return 0;
	errno = 0;
	*v = strtoul(buf, &end, 10);
	if (buf[0] < '0' || buf[0] > '9' || *end != '\0' || errno != 0 ||
	    *v < min || *v > max)
		return -1;
	return 1;
}

static void
bad_request(struct replica_req *q, const char *why)
{
	const char *hdrs[] = { "content-type", "text/plain", NULL };

	if (replica_respond(q, 400, hdrs, 0) == 0)
		replica_write_end(q, why, strlen(why));
}

static void
sleep_request(struct replica_req *q, void *arg)
{
	static const char *const stream_hdrs[] = {
		"content-type", "text/plain", NULL,
	};
	struct replica	*r = replica_req_replica(q);
	struct nap	*n;
	unsigned long	 ms = 0, chunks = 0;

	if (param(q, "ms", 0, MS_MAX, &ms) < 0) {
		bad_request(q, "ms must be 0..600000\n");
		return;
	}
	if (param(q, "chunks", 1, CHUNKS_MAX, &chunks) < 0) {
		bad_request(q, "chunks must be 1..100000\n");
		return;
	}
	if ((n = calloc(1, sizeof *n)) == NULL ||
	    (n->ev = evtimer_new(replica_base(r), nap_timer, n)) == NULL) {
		free(n);
		replica_fail(q, "out of memory");
		return;
	}
	n->q = q;
	n->ms = ms;
	n->chunks = chunks;
	replica_req_set_user(q, n);
	if (chunks != 0 && replica_respond(q, 200, stream_hdrs, 0) != 0) {
		nap_free(n);
		replica_fail(q, "cannot respond");
		return;
	}
	nap_arm(n);
}

static void
sleep_body(struct replica_req *q, const void *p, size_t len, void *arg)
{
}

static void
sleep_cancel(struct replica_req *q, void *arg)
{
	struct nap	*n = replica_req_user(q);

	if (n != NULL)
		nap_free(n);
}

int
main(int argc, char **argv)
{
	static const struct replica_handler h = {
		.on_request = sleep_request,
		.on_body = sleep_body,
		.on_cancel = sleep_cancel,
	};
	struct event_base	*base;
	struct replica		*r;
	char			 err[256];
	int			 rc;

	if ((base = event_base_new()) == NULL) {
		fprintf(stderr, "replica-sleep: event_base_new failed\n");
		return 1;
	}
	if ((r = replica_new(base, argc, argv, &h, NULL, err,
	    sizeof err)) == NULL) {
		fprintf(stderr, "replica-sleep: %s\n", err);
		event_base_free(base);
		return 1;
	}
	rc = replica_run(r);
	replica_free(r);
	event_base_free(base);
	return rc == 0 ? 0 : 1;
}
