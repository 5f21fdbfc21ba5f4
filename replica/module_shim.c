/*
 * module_shim.c -- linked into every shared replica module: the replica.h
 * calls a handler makes, forwarded through the table the host binds
 * (replica_module.h says why a table and not symbol resolution).  Built
 * with -fvisibility=hidden: nothing here is seen outside the module.
 */
#include "replica_module.h"

static const struct replica_api *replica_api_;

void
replica_module_bind(const struct replica_api *api)
{
	replica_api_ = api;
}

#define REPLICA_SHIM(ret, name, params, args)				\
	ret name params { return replica_api_->name args; }
#define REPLICA_SHIMV(name, params, args)				\
	void name params { replica_api_->name args; }

REPLICA_API_CALLS(REPLICA_SHIM, REPLICA_SHIMV)
