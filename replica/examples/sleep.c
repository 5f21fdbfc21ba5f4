/*
 * sleep.c -- a slow replica, for timeouts, cancellation, streaming and
 * flow-control tests.
 *
 *   ?ms=N          (0..600000) 200 "slept N ms\n" after N ms
 *   ?chunks=N      (1..100000) 200 at once, then N pieces "chunk I\n"
 *                  (I from 1), one every ms milliseconds, no content-length
 *   ?sink=RATE     (1..10^12) reads the request body at RATE bytes/s (the
 *                  body's credit is paused whenever it is ahead), then 200
 *                  {"received": N}
 *   ?source=BYTES  (0..10^12) 200 with content-length BYTES of 'x', written
 *   [&rate=RATE]   at RATE bytes/s (0 or absent: as fast as ingressd's
 *   [&chunked=C]   credit allows), never queueing more than one piece
 *                  beyond the credit; chunked=1 (0 or 1, default 0): no
 *                  content-length, so ingressd sends the body chunked to
 *                  an HTTP/1.1 client (chunked is ignored without source)
 *   path .../stats or ?stats=1: 200 JSON counters of this process:
 *                  requests (other than stats), cancels (on_cancel calls),
 *                  cancel_frames (CANCEL/ERROR frames among them) and
 *                  cancel_codes (by code), open (streams open besides this
 *                  one), bytes_in, bytes_out, pid, replica
 * Waiting is a libevent timer, never a blocking call.  A CANCEL stops the
 * timer and frees everything.  Bad parameters get 400.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "replica_module.h"

#define MS_MAX		600000
#define CHUNKS_MAX	100000
#define PENDING_MAX	(64 << 10)
#define RATE_MAX	1000000000000ULL	/* bytes/s, and bytes */
#define PIECE		(256 << 10)		/* a source write */
#define PIECE_MIN	(16 << 10)		/* worth waking up for */
#define NCODES		16

enum nap_mode { NAP_SLEEP, NAP_CHUNKS, NAP_SINK, NAP_SOURCE };

struct nap {
	struct replica_req *q;
	struct event	*ev;
	struct stats	*st;
	enum nap_mode	 mode;
	unsigned long	 ms;
	unsigned long	 chunks;
	unsigned long	 sent;		/* chunks */
	uint64_t	 rate;		/* bytes/s, 0: unpaced (source) */
	uint64_t	 total;		/* source: bytes to send */
	uint64_t	 done;		/* sink: received, source: written */
	int		 chunked;	/* source: no content-length */
	double		 t0;
};

/* This process's counters, for GET .../stats. */
struct stats {
	uint64_t	 requests;
	uint64_t	 cancels;
	uint64_t	 cancel_frames;
	uint64_t	 cancel_codes[NCODES];
	uint64_t	 bytes_in;
	uint64_t	 bytes_out;
};

static char	 pattern[PIECE];

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
nap_free(struct nap *n)
{
	replica_req_set_user(n->q, NULL);
	event_free(n->ev);
	free(n);
}

static void
nap_arm_s(struct nap *n, double s)
{
	struct timeval tv;

	if (s < 0)
		s = 0;
	tv.tv_sec = (time_t)s;
	tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6);
	evtimer_add(n->ev, &tv);
}

static void
nap_arm(struct nap *n)
{
	nap_arm_s(n, n->ms / 1000.0);
}

/* Bytes the rate allows by now. */
static uint64_t
nap_budget(struct nap *n)
{
	double b = (now() - n->t0) * (double)n->rate;

	return b >= (double)UINT64_MAX ? UINT64_MAX : (uint64_t)b;
}

/* The response may free the req, so the nap goes first. */
static void
nap_sleep_done(struct nap *n)
{
	static const char *const hdrs[] = {
		"content-type", "text/plain", "content-length", NULL, NULL,
	};
	struct replica_req	*q = n->q;
	const char		*h[5];
	char			 body[64], len[16];
	int			 blen;

	blen = snprintf(body, sizeof body, "slept %lu ms\n", n->ms);
	snprintf(len, sizeof len, "%d", blen);
	memcpy(h, hdrs, sizeof h);
	h[3] = len;
	nap_free(n);
	if (replica_respond(q, 200, h, 0) == 0)
		replica_write_end(q, body, (size_t)blen);
}

static void
nap_chunk(struct nap *n)
{
	struct replica_req	*q = n->q;
	char			 body[64];
	int			 blen;

	/* A reader slower than the chunks: wait rather than queue. */
	if (replica_req_pending(q) > PENDING_MAX) {
		nap_arm(n);
		return;
	}
	n->sent++;
	blen = snprintf(body, sizeof body, "chunk %lu\n", n->sent);
	n->st->bytes_out += (uint64_t)blen;
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

/*
 * Source: what the rate allows, a piece at a time.  While a write waits
 * for credit nothing more is written: on_writable calls back here.
 */
static void
nap_source(struct nap *n)
{
	struct replica_req	*q = n->q;
	uint64_t		 due, budget, left = n->total - n->done;

	if (replica_req_pending(q) != 0)
		return;
	budget = n->rate == 0 ? UINT64_MAX : nap_budget(n);
	due = budget > n->done ? budget - n->done : 0;
	if (due > left)
		due = left;
	if (due > PIECE)
		due = PIECE;
	if (due < PIECE_MIN && due < left) {
		/* Not enough due yet: sleep until a small piece is. */
		nap_arm_s(n, (double)(PIECE_MIN - due) / (double)n->rate);
		return;
	}
	n->done += due;
	n->st->bytes_out += due;
	if (n->done == n->total) {
		nap_free(n);
		replica_write_end(q, pattern, (size_t)due);
		return;
	}
	if (replica_write(q, pattern, (size_t)due) != 0) {
		nap_free(n);
		replica_fail(q, "write failed");
		return;
	}
	if (replica_req_pending(q) == 0)
		nap_arm_s(n, 0);
}

/* Sink: ahead of the rate, stop crediting until the rate catches up. */
static void
nap_sink_pace(struct nap *n)
{
	uint64_t budget = nap_budget(n);

	if (n->done <= budget) {
		replica_req_resume(n->q);
		return;
	}
	replica_req_pause(n->q);
	if (!evtimer_pending(n->ev, NULL))
		nap_arm_s(n, (double)(n->done - budget) / (double)n->rate);
}

static void
nap_timer(evutil_socket_t fd, short what, void *arg)
{
	struct nap	*n = arg;

	switch (n->mode) {
	case NAP_SLEEP:
		nap_sleep_done(n);
		break;
	case NAP_CHUNKS:
		nap_chunk(n);
		break;
	case NAP_SOURCE:
		nap_source(n);
		break;
	case NAP_SINK:
		nap_sink_pace(n);
		break;
	}
}

static int
param(struct replica_req *q, const char *key, unsigned long long min,
    unsigned long long max, unsigned long long *v)
{
	char	 buf[24], *end;

	if (!replica_query_get(replica_req_query(q), key, buf, sizeof buf))
		return 0;
	errno = 0;
	*v = strtoull(buf, &end, 10);
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
respond_json(struct replica_req *q, const char *body, size_t len)
{
	const char	*hdrs[] = { "content-type", "application/json",
			    "content-length", NULL, NULL };
	char		 clen[24];

	snprintf(clen, sizeof clen, "%zu", len);
	hdrs[3] = clen;
	if (replica_respond(q, 200, hdrs, 0) == 0)
		replica_write_end(q, body, len);
}

static int
is_stats(struct replica_req *q)
{
	const char	*path = replica_req_path(q);
	size_t		 len = strlen(path);
	char		 v[8];

	return (len >= 6 && strcmp(path + len - 6, "/stats") == 0) ||
	    (replica_query_get(replica_req_query(q), "stats", v, sizeof v) &&
	    strcmp(v, "1") == 0);
}

static void
stats_respond(struct replica_req *q, struct stats *st)
{
	struct replica	*r = replica_req_replica(q);
	char		 body[1024], codes[512];
	size_t		 off = 0;
	unsigned	 i;
	int		 len;

	codes[0] = '\0';
	for (i = 0; i < NCODES; i++) {
		if (st->cancel_codes[i] == 0)
			continue;
		off += (size_t)snprintf(codes + off, sizeof codes - off,
		    "%s\"%u\": %llu", off ? ", " : "", i,
		    (unsigned long long)st->cancel_codes[i]);
	}
	len = snprintf(body, sizeof body, "{\"replica\": \"%s\", \"pid\": %ld, "
	    "\"requests\": %llu, \"cancels\": %llu, \"cancel_frames\": %llu, "
	    "\"cancel_codes\": {%s}, \"open\": %u, \"bytes_in\": %llu, "
	    "\"bytes_out\": %llu}\n", replica_id(r), (long)getpid(),
	    (unsigned long long)st->requests, (unsigned long long)st->cancels,
	    (unsigned long long)st->cancel_frames, codes,
	    replica_active(r) - 1, (unsigned long long)st->bytes_in,
	    (unsigned long long)st->bytes_out);
	respond_json(q, body, (size_t)len);
}

/* The mode and its numbers from the query; -1 after answering 400. */
static int
nap_parse(struct replica_req *q, struct nap *n)
{
	unsigned long long ms = 0, chunks = 0, rate = 0, chunked = 0, v;
	int	rc;

	if (param(q, "ms", 0, MS_MAX, &ms) < 0) {
		bad_request(q, "ms must be 0..600000\n");
		return -1;
	}
	if (param(q, "chunks", 1, CHUNKS_MAX, &chunks) < 0) {
		bad_request(q, "chunks must be 1..100000\n");
		return -1;
	}
	n->ms = (unsigned long)ms;
	n->chunks = (unsigned long)chunks;
	n->mode = chunks != 0 ? NAP_CHUNKS : NAP_SLEEP;
	if ((rc = param(q, "sink", 1, RATE_MAX, &v)) < 0) {
		bad_request(q, "sink must be 1..10^12 bytes/s\n");
		return -1;
	} else if (rc > 0) {
		n->mode = NAP_SINK;
		n->rate = v;
	}
	if ((rc = param(q, "source", 0, RATE_MAX, &v)) < 0 ||
	    param(q, "rate", 0, RATE_MAX, &rate) < 0) {
		bad_request(q, "source and rate must be 0..10^12\n");
		return -1;
	} else if (rc > 0) {
		n->mode = NAP_SOURCE;
		n->total = v;
		n->rate = rate;
	}
	if (param(q, "chunked", 0, 1, &chunked) < 0) {
		bad_request(q, "chunked must be 0 or 1\n");
		return -1;
	}
	n->chunked = chunked != 0;
	return 0;
}

/* The head of a response that streams: at once, before any body. */
static int
nap_start(struct nap *n)
{
	static const char *const stream_hdrs[] = {
		"content-type", "text/plain", NULL,
	};
	const char	*src_hdrs[] = { "content-type",
			    "application/octet-stream", "content-length", NULL,
			    NULL };
	char		 clen[24];

	switch (n->mode) {
	case NAP_CHUNKS:
		if (replica_respond(n->q, 200, stream_hdrs, 0) != 0)
			return -1;
		nap_arm(n);
		return 0;
	case NAP_SOURCE:
		snprintf(clen, sizeof clen, "%llu",
		    (unsigned long long)n->total);
		src_hdrs[3] = clen;
		if (n->chunked)
			src_hdrs[2] = NULL;	/* ingressd picks the framing */
		if (replica_respond(n->q, 200, src_hdrs, n->total == 0) != 0)
			return -1;
		if (n->total == 0) {
			nap_free(n);
			return 0;
		}
		nap_arm_s(n, 0);
		return 0;
	case NAP_SINK:
		return 0;		/* answered at on_end */
	default:
		nap_arm(n);
		return 0;
	}
}

static void
sleep_request(struct replica_req *q, void *arg)
{
	struct stats	*st = arg;
	struct replica	*r = replica_req_replica(q);
	struct nap	*n;

	if (is_stats(q)) {
		stats_respond(q, st);
		return;
	}
	st->requests++;
	if ((n = calloc(1, sizeof *n)) == NULL ||
	    (n->ev = evtimer_new(replica_base(r), nap_timer, n)) == NULL) {
		free(n);
		replica_fail(q, "out of memory");
		return;
	}
	n->q = q;
	n->st = st;
	n->t0 = now();
	replica_req_set_user(q, n);
	if (nap_parse(q, n) != 0) {
		nap_free(n);
		return;
	}
	if (nap_start(n) != 0) {
		nap_free(n);
		replica_fail(q, "cannot respond");
	}
}

static void
sleep_body(struct replica_req *q, const void *p, size_t len, void *arg)
{
	struct stats	*st = arg;
	struct nap	*n = replica_req_user(q);

	st->bytes_in += len;
	if (n != NULL && n->mode == NAP_SINK) {
		n->done += len;
		nap_sink_pace(n);
	}
}

static void
sleep_end(struct replica_req *q, void *arg)
{
	struct nap	*n = replica_req_user(q);
	char		 body[64];
	int		 len;

	if (n == NULL || n->mode != NAP_SINK)
		return;
	len = snprintf(body, sizeof body, "{\"received\": %llu}\n",
	    (unsigned long long)n->done);
	nap_free(n);
	respond_json(q, body, (size_t)len);
}

static void
sleep_writable(struct replica_req *q, void *arg)
{
	struct nap	*n = replica_req_user(q);

	if (n != NULL && n->mode == NAP_SOURCE)
		nap_source(n);
}

static void
sleep_cancel(struct replica_req *q, void *arg)
{
	struct stats	*st = arg;
	struct nap	*n = replica_req_user(q);
	int64_t		 code = replica_req_cancel_code(q);

	st->cancels++;
	if (code >= 0) {
		st->cancel_frames++;
		st->cancel_codes[code < NCODES ? code : NCODES - 1]++;
	}
	if (n != NULL)
		nap_free(n);
}

static void
pattern_fill(void)
{
	memset(pattern, 'x', sizeof pattern);
}

/* The counters are per instance: per process out of ingressd, per worker
 * in it (instances run on several threads: pattern is filled once). */
static int
sleep_init(struct replica *r, int argc, char *const *argv, void **arg,
    char *err, size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if ((*arg = calloc(1, sizeof(struct stats))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_once(&once, pattern_fill);
	return 0;
}

static void
sleep_fini(void *arg)
{
	free(arg);
}

static const struct replica_handler sleep_handler = {
	.on_request = sleep_request,
	.on_body = sleep_body,
	.on_end = sleep_end,
	.on_cancel = sleep_cancel,
	.on_writable = sleep_writable,
};

REPLICA_MODULE("sleep", &sleep_handler, sleep_init, sleep_fini);
