/*
 * replica_module.h -- a replica handler (replica.h) built as a module that
 * either host runs unchanged: loaded into ingressd ("inproc" deployments,
 * src/inproc*.c: requests by direct call on a worker's thread) or served
 * over the wire protocol by build/ingressd-host (a process of its own).
 * The user picks isolation in the conf, not in the code.
 *
 * A module defines its descriptor once:
 *
 *	REPLICA_MODULE("hello", &hello_handler, hello_init, hello_fini);
 *
 * and is linked with -fPIC -shared together with replica/module_shim.c.
 * The same source linked with libingressd-replica.a and
 * replica/module_main.c is a standalone replica binary.
 *
 * How replica_* calls resolve in a module: through a table of functions
 * (struct replica_api) that the host hands over before anything else
 * (bind).  The shim defines every replica.h function a handler may call
 * as a one-line forward through that table, with hidden visibility, so a
 * module has no undefined replica_* symbols: it needs no -rdynamic host,
 * cannot interpose on the host's own functions (ingressd-host links the
 * real library; ingressd has no replica_* symbols at all), and the same
 * .so works in both hosts.  The price is one indirect call per API call.
 *
 * The ABI: a host reads abi, the first word of the descriptor, before
 * anything else and refuses a module whose number is not its own, naming
 * the module and both numbers.  Bump REPLICA_MODULE_ABI whenever struct
 * replica_module, struct replica_api, struct replica_handler or the
 * meaning of any replica.h call changes; append to the api table only.
 *
 * Instances: init runs once per instance -- per worker thread in ingressd,
 * once in ingressd-host -- on that thread, with the module's args; what it
 * stores in *arg is the arg of every handler callback of that instance,
 * and fini gets it back when the instance goes (no request is alive then).
 * Module state shared across instances must be read-only or locked:
 * in ingressd, instances run on several threads at once.
 */
#ifndef INGRESSD_REPLICA_MODULE_H
#define INGRESSD_REPLICA_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "replica.h"

#define REPLICA_MODULE_ABI	1
#define REPLICA_MODULE_SYMBOL	"ingressd_module"

/*
 * Every replica.h call a handler may make, as X(return type, name,
 * (parameters), (arguments)); XV for the ones returning void.  The table,
 * the shim's forwards and the library's table are generated from it.
 */
#define REPLICA_API_CALLS(X, XV)					\
	X(const char *, replica_id, (struct replica *r), (r))		\
	X(const char *, replica_deployment, (struct replica *r), (r))	\
	X(const char *, replica_address, (struct replica *r), (r))	\
	X(struct event_base *, replica_base, (struct replica *r), (r))	\
	X(unsigned, replica_active, (struct replica *r), (r))		\
	X(struct replica *, replica_req_replica, (struct replica_req *q), (q)) \
	X(uint32_t, replica_req_stream, (struct replica_req *q), (q))	\
	X(const char *, replica_req_method, (struct replica_req *q), (q)) \
	X(const char *, replica_req_target, (struct replica_req *q), (q)) \
	X(const char *, replica_req_path, (struct replica_req *q), (q))	\
	X(const char *, replica_req_query, (struct replica_req *q), (q))	\
	X(const char *, replica_req_deployment, (struct replica_req *q), (q)) \
	X(const char *, replica_req_request_id, (struct replica_req *q), (q)) \
	X(uint32_t, replica_req_deadline_ms, (struct replica_req *q), (q)) \
	X(const char *, replica_req_header, (struct replica_req *q,	\
	    const char *name), (q, name))					\
	X(unsigned, replica_req_header_count, (struct replica_req *q), (q)) \
	X(int, replica_req_header_at, (struct replica_req *q, unsigned i, \
	    const char **name, const char **value), (q, i, name, value))	\
	X(size_t, replica_req_body_length, (struct replica_req *q), (q))	\
	X(struct evbuffer *, replica_req_body, (struct replica_req *q), (q)) \
	X(unsigned, replica_req_conn_pings, (struct replica_req *q), (q))	\
	X(size_t, replica_req_pending, (struct replica_req *q), (q))	\
	X(int64_t, replica_req_cancel_code, (struct replica_req *q), (q))	\
	XV(replica_req_pause, (struct replica_req *q), (q))		\
	XV(replica_req_resume, (struct replica_req *q), (q))		\
	X(int, replica_req_paused, (struct replica_req *q), (q))		\
	XV(replica_req_set_user, (struct replica_req *q, void *u), (q, u)) \
	X(void *, replica_req_user, (struct replica_req *q), (q))		\
	X(int, replica_respond, (struct replica_req *q, int status,	\
	    const char *const *hdrs, int end), (q, status, hdrs, end))	\
	X(int, replica_write, (struct replica_req *q, const void *p,	\
	    size_t n), (q, p, n))						\
	X(int, replica_write_end, (struct replica_req *q, const void *p,	\
	    size_t n), (q, p, n))						\
	X(int, replica_end, (struct replica_req *q), (q))			\
	X(int, replica_fail, (struct replica_req *q, const char *text),	\
	    (q, text))								\
	X(int, replica_query_get, (const char *query, const char *key,	\
	    char *buf, size_t len), (query, key, buf, len))

#define REPLICA_API_FIELD(ret, name, params, args)	ret (*name) params;
#define REPLICA_API_FIELDV(name, params, args)	void (*name) params;

/* What a host gives a module: its implementation of replica.h. */
struct replica_api {
	uint32_t	 abi;		/* REPLICA_MODULE_ABI */
	REPLICA_API_CALLS(REPLICA_API_FIELD, REPLICA_API_FIELDV)
};

struct replica_module {
	uint32_t	 abi;		/* REPLICA_MODULE_ABI: keep first */
	const char	*name;
	const struct replica_handler *handler;
	/* Optional.  0, or -1 with a reason in err (the instance is not
	 * started; ingressd takes the deployment out of rotation). */
	int	(*init)(struct replica *, int argc, char *const *argv,
		    void **arg, char *err, size_t errlen);
	/* Optional: the instance is gone (no request is alive); arg is what
	 * init stored. */
	void	(*fini)(void *arg);
	/* The shim's, in a shared module; the library's no-op when the
	 * module is linked into a binary with the library itself. */
	void	(*bind)(const struct replica_api *);
};

/* The shim (or the library): where bind points. */
void	replica_module_bind(const struct replica_api *);

#define REPLICA_MODULE(name, handler, init, fini)			\
	__attribute__((visibility("default")))				\
	const struct replica_module ingressd_module = {			\
		REPLICA_MODULE_ABI, (name), (handler), (init), (fini),	\
		replica_module_bind,					\
	}

/* libingressd-replica: the real functions, for a host. */
extern const struct replica_api replica_lib_api;
/*
 * Serve module m over the wire protocol: replica options (replica.h) from
 * ropts (argv-style, ropts[0] the program name) and the environment, the
 * module's own args from margc/margv.  Returns the exit status.  The
 * caller has bound the module already (or linked it in).
 */
int	replica_module_main(const struct replica_module *m, int rargc,
	    char **rargv, int margc, char **margv);

#endif
