/*
 * block.c -- a module that does what an in-process handler must not:
 * ?ms=N blocks its thread in on_request for N ms (0..10000), then
 * answers "blocked N ms".  For the stall watchdog's test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "replica_module.h"

static void
block_request(struct replica_req *q, void *arg)
{
	static const char *const hdrs[] = { "content-type", "text/plain",
	    NULL };
	struct timespec ts;
	char v[16], body[64];
	long ms = 0;
	int n;

	if (replica_query_get(replica_req_query(q), "ms", v, sizeof v))
		ms = strtol(v, NULL, 10);
	if (ms < 0 || ms > 10000)
		ms = 0;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
	n = snprintf(body, sizeof body, "blocked %ld ms\n", ms);
	if (replica_respond(q, 200, hdrs, 0) == 0)
		replica_write_end(q, body, (size_t)n);
}

static const struct replica_handler block_handler = {
	.on_request = block_request,
};

REPLICA_MODULE("block", &block_handler, NULL, NULL);
