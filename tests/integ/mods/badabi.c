/*
 * badabi.c -- a module built against a replica_module.h from another
 * time: its ABI word is not ours, so every host must refuse it (and say
 * so, naming the module and both versions) before calling anything in it.
 */
#include "replica_module.h"

static void
badabi_request(struct replica_req *q, void *arg)
{
	replica_fail(q, "this module must never run");
}

static const struct replica_handler badabi_handler = {
	.on_request = badabi_request,
};

__attribute__((visibility("default")))
const struct replica_module ingressd_module = {
	REPLICA_MODULE_ABI + 998, "badabi", &badabi_handler, NULL, NULL,
	replica_module_bind,
};
