/*
 * grpc-echo.c -- an example gRPC replica on raw message bytes: the
 * service ingressd.example.Echo.
 *
 *   Unary         answers the request message unchanged
 *   ServerStream  answers the request message 3 times
 *   ClientStream  answers one message: every request message, joined
 *   BidiStream    answers each request message as it arrives
 *   Abort         answers no message: status INVALID_ARGUMENT, message
 *                 "aborted: " and the request message (Trailers-Only)
 *   Stats         answers "cancels=N": the BidiStream calls cancelled so
 *                 far (client cancel, deadline), so a test sees the CANCEL
 *   Source        server streaming, for benches and flow-control tests:
 *                 the request message is a byte count, 8 bytes big-endian
 *                 (at most 2^40; anything else: INVALID_ARGUMENT); the
 *                 answer is that many bytes of 'x' in messages of 64 KiB
 *                 (the last one shorter; none for 0), then status 0.
 *                 Sent as fast as ingressd's credit allows and never more
 *                 than one message beyond it: the rest waits for
 *                 on_writable, so a slow reader slows the source down
 *   SourceStats   answers "sent=N": the message bytes every Source call
 *                 handed to the library so far (how far the source ran
 *                 ahead of a reader)
 *
 * Metadata: every request key x-echo-NAME comes back as response metadata
 * x-echo-NAME and as a trailer x-trail-NAME, same value (Unary,
 * ServerStream, ClientStream, BidiStream); a -bin value is decoded and
 * sent again from its bytes.
 *
 * Every call that answers ends with grpc-status 0 in the trailers.  The
 * messages are whatever bytes the client sends (any protobuf, or none):
 * nothing here parses them.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "replica.h"
#include "replica_grpc.h"

#define ECHO_ABORT_MAX	200
#define SOURCE_MSG	(64u << 10)	/* Source's message size */
#define SOURCE_MAX	(1ull << 40)	/* and its largest count */

static unsigned	echo_cancels;	/* one thread: the replica's loop */
static unsigned char source_msg[SOURCE_MSG];	/* 'x's, made in main */
static uint64_t	source_sent;

/* One x-echo-NAME field back as a header and an x-trail-NAME trailer. */
static void
echo_field(struct replica_req *q, const char *name, const char *value)
{
	char trail[sizeof "x-trail-" + 256];
	unsigned char bin[1024];
	ssize_t n;

	snprintf(trail, sizeof trail, "x-trail-%s", name + 7);
	if (replica_grpc_metadata_check(name, value) != 0)
		return;		/* not a name or value we may send back */
	if (strlen(name) > 4 && strcmp(name + strlen(name) - 4, "-bin") == 0 &&
	    (n = replica_grpc_metadata_decode(value, bin, sizeof bin)) >= 0) {
		replica_grpc_header_add_bin(q, name, bin, (size_t)n);
		replica_grpc_trailer_add_bin(q, trail, bin, (size_t)n);
		return;
	}
	replica_grpc_header_add(q, name, value);
	replica_grpc_trailer_add(q, trail, value);
}

static void
echo_metadata(struct replica_req *q)
{
	const char *name, *value;
	char lower[256];
	unsigned i;
	size_t k;

	/* Names as sent: lowercase over HTTP/2, any case over HTTP/1.1. */
	for (i = 0; replica_req_header_at(q, i, &name, &value) == 0; i++) {
		for (k = 0; name[k] != '\0' && k < sizeof lower - 1; k++)
			lower[k] = (char)tolower((unsigned char)name[k]);
		lower[k] = '\0';
		if (name[k] == '\0' && strncmp(lower, "x-echo-", 7) == 0)
			echo_field(q, lower, value);
	}
}

static void
echo_unary(struct replica_req *q, const void *msg, size_t n, void *arg)
{
	echo_metadata(q);
	if (replica_grpc_send(q, msg, n) == 0)
		replica_grpc_finish(q, GRPC_OK, NULL);
}

static void
echo_server_stream(struct replica_req *q, const void *msg, size_t n,
    void *arg)
{
	int i;

	echo_metadata(q);
	for (i = 0; i < 3; i++)
		if (replica_grpc_send(q, msg, n) != 0)
			return;
	replica_grpc_finish(q, GRPC_OK, NULL);
}

static void
echo_abort(struct replica_req *q, const void *msg, size_t n, void *arg)
{
	char text[sizeof "aborted: " + ECHO_ABORT_MAX];

	snprintf(text, sizeof text, "aborted: %.*s",
	    (int)(n > ECHO_ABORT_MAX ? ECHO_ABORT_MAX : n), (const char *)msg);
	replica_grpc_finish(q, GRPC_INVALID_ARGUMENT, text);
}

/* ClientStream: the messages so far, in the call's user buffer. */
static void
echo_collect(struct replica_req *q, const void *msg, size_t n, void *arg)
{
	struct evbuffer *all = replica_grpc_user(q);

	if (all == NULL) {
		if ((all = evbuffer_new()) == NULL) {
			replica_grpc_finish(q, GRPC_RESOURCE_EXHAUSTED,
			    "out of memory");
			return;
		}
		replica_grpc_set_user(q, all);
		echo_metadata(q);
	}
	evbuffer_add(all, msg, n);
}

static void
echo_collected(struct replica_req *q, void *arg)
{
	struct evbuffer *all = replica_grpc_user(q);
	size_t n = all != NULL ? evbuffer_get_length(all) : 0;

	if (all == NULL)
		echo_metadata(q);	/* no message: not done yet */
	if (replica_grpc_send(q, n ? evbuffer_pullup(all, -1) : NULL, n) == 0)
		replica_grpc_finish(q, GRPC_OK, NULL);
	replica_grpc_set_user(q, NULL);	/* a late on_cancel finds none */
	if (all != NULL)
		evbuffer_free(all);
}

static void
echo_collect_cancel(struct replica_req *q, void *arg)
{
	struct evbuffer *all = replica_grpc_user(q);

	replica_grpc_set_user(q, NULL);
	if (all != NULL)
		evbuffer_free(all);
}

static void
echo_bidi(struct replica_req *q, const void *msg, size_t n, void *arg)
{
	if (replica_grpc_user(q) == NULL) {	/* the first message */
		echo_metadata(q);
		replica_grpc_set_user(q, q);
	}
	replica_grpc_send(q, msg, n);
}

static void
echo_bidi_cancel(struct replica_req *q, void *arg)
{
	echo_cancels++;
}

static void
echo_stats(struct replica_req *q, const void *msg, size_t n, void *arg)
{
	char text[32];
	int len = snprintf(text, sizeof text, "cancels=%u", echo_cancels);

	if (replica_grpc_send(q, text, (size_t)len) == 0)
		replica_grpc_finish(q, GRPC_OK, NULL);
}

/* Source: the bytes still to send, in the call's user pointer. */
struct source {
	uint64_t	 left;
};

/* Messages while the library holds none back for want of credit; the
 * end once all are out.  A send that queues leaves pending non-zero and
 * on_writable brings us back when it has gone. */
static void
source_pump(struct replica_req *q, void *arg)
{
	struct source *src = replica_grpc_user(q);
	size_t n;

	if (src == NULL)
		return;
	while (src->left > 0 && replica_req_pending(q) == 0) {
		n = src->left < SOURCE_MSG ? (size_t)src->left : SOURCE_MSG;
		if (replica_grpc_send(q, source_msg, n) != 0)
			return;		/* cancelled: on_cancel frees */
		src->left -= n;
		source_sent += n;
	}
	if (src->left > 0)
		return;
	replica_grpc_set_user(q, NULL);
	free(src);
	replica_grpc_finish(q, GRPC_OK, NULL);
}

static void
source_start(struct replica_req *q, const void *msg, size_t n, void *arg)
{
	const unsigned char *p = msg;
	struct source *src;
	uint64_t count = 0;
	size_t i;

	for (i = 0; i < n && n == 8; i++)
		count = count << 8 | p[i];
	if (n != 8 || count > SOURCE_MAX) {
		replica_grpc_finish(q, GRPC_INVALID_ARGUMENT,
		    "Source wants an 8-byte big-endian count, at most 2^40");
		return;
	}
	if ((src = calloc(1, sizeof *src)) == NULL) {
		replica_grpc_finish(q, GRPC_RESOURCE_EXHAUSTED,
		    "out of memory");
		return;
	}
	src->left = count;
	replica_grpc_set_user(q, src);
	source_pump(q, arg);
}

static void
source_cancel(struct replica_req *q, void *arg)
{
	free(replica_grpc_user(q));
	replica_grpc_set_user(q, NULL);
}

static void
source_stats(struct replica_req *q, const void *msg, size_t n, void *arg)
{
	char text[40];
	int len = snprintf(text, sizeof text, "sent=%llu",
	    (unsigned long long)source_sent);

	if (replica_grpc_send(q, text, (size_t)len) == 0)
		replica_grpc_finish(q, GRPC_OK, NULL);
}

static const struct replica_grpc_method echo_methods[] = {
	{ "/ingressd.example.Echo/Unary", echo_unary, NULL, NULL, NULL,
	    NULL },
	{ "/ingressd.example.Echo/ServerStream", echo_server_stream, NULL,
	    NULL, NULL, NULL },
	{ "/ingressd.example.Echo/ClientStream", NULL, echo_collect,
	    echo_collected, echo_collect_cancel, NULL },
	/* on_end NULL: the call ends OK once the client is done. */
	{ "/ingressd.example.Echo/BidiStream", NULL, echo_bidi, NULL,
	    echo_bidi_cancel, NULL },
	{ "/ingressd.example.Echo/Abort", echo_abort, NULL, NULL, NULL, NULL },
	{ "/ingressd.example.Echo/Stats", echo_stats, NULL, NULL, NULL, NULL },
	{ "/ingressd.example.Echo/Source", source_start, NULL, NULL,
	    source_cancel, source_pump },
	{ "/ingressd.example.Echo/SourceStats", source_stats, NULL, NULL, NULL,
	    NULL },
};

static struct replica_grpc_server echo_server = {
	echo_methods, sizeof echo_methods / sizeof echo_methods[0], 0, NULL,
};

int
main(int argc, char **argv)
{
	memset(source_msg, 'x', sizeof source_msg);
	return replica_main("replica-grpc-echo", argc, argv,
	    &replica_grpc_handler, &echo_server);
}
