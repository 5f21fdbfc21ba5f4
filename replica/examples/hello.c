/*
 * hello.c -- the benchmark replica: every request gets "Hello world!".
 *
 * One RESPONSE frame and one DATA frame carrying FLAG_END, nothing else:
 * the smallest amount of work a replica can do per request, so benchmarks
 * measure ingressd and not this.
 */
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "replica_module.h"

static const char *const hello_hdrs[] = {
	"content-type", "text/plain",
	"content-length", "12",
	NULL,
};

static void
hello_request(struct replica_req *q, void *arg)
{
	if (replica_respond(q, 200, hello_hdrs, 0) == 0)
		replica_write_end(q, "Hello world!", 12);
}

/* A body, if any, is ignored (and so not buffered by the library). */
static void
hello_body(struct replica_req *q, const void *p, size_t n, void *arg)
{
}

static const struct replica_handler hello_handler = {
	.on_request = hello_request,
	.on_body = hello_body,
};

/* build/replica-hello with module_main.c, build/mod-hello.so with the shim. */
REPLICA_MODULE("hello", &hello_handler, NULL, NULL);
