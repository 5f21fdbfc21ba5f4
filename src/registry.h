/*
 * registry.h -- deployment name -> endpoints, shared by all workers.
 *
 * The registry is filled by the main thread from the conf (and later by
 * registration and DNS) and read by workers when a handle is resolved: a
 * lookup copies out the endpoint list under a mutex, which happens once per
 * name per worker, never per request.
 *
 * Endpoints are keyed by address, so several names can share one replica
 * process (and each worker keeps one connection per address).  Live figures
 * (in-flight, pings, pongs, handle states) are kept per worker in slots that
 * only that worker writes (relaxed atomics): the hot path takes no lock and
 * shares no cache line, and the admin page sums the slots.
 */
#ifndef INGRESSD_REGISTRY_H
#define INGRESSD_REGISTRY_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "net.h"

struct conf;
struct registry;
struct reg_deployment;

/* One worker's view of one endpoint; written only by that worker. */
struct ep_stats {
	_Atomic int	 state;		/* enum upstream_state */
	_Atomic int	 in_flight;
	_Atomic uint64_t requests;
	_Atomic uint64_t pings;
	_Atomic uint64_t pongs;
	char		 pad[24];	/* keep workers' slots apart */
};

struct reg_endpoint {
	struct net_addr	 addr;
	char		 id[64];	/* replica id: "echo-0" or the address */
	_Atomic int	 pid;		/* spawned: current process, else 0 */
	_Atomic unsigned restarts;	/* spawned: times restarted */
	unsigned	 max_ongoing;	/* cap from the conf */
	struct ep_stats	*stats;		/* [nworkers] */
};

/* What a worker gets back from a lookup: valid for the registry's life. */
struct reg_lookup {
	struct reg_deployment *dep;
	struct reg_endpoint **eps;	/* caller frees the array (free()) */
	unsigned	 neps;
	unsigned	 version;
	unsigned	 queue_max;
	double		 queue_timeout;
	double		 request_timeout;
};

/* Handle states as published for the admin page, per worker. */
enum reg_hstate {
	REG_H_IDLE = 0, REG_H_RESOLVING, REG_H_WARMING, REG_H_READY, REG_H_FAILED,
};

struct registry	*registry_new(const struct conf *, unsigned nworkers,
		    const char *runtime_dir, char *err, size_t errlen);
void		 registry_free(struct registry *);
/* 0 and *out filled, or -1 when the name is unknown. */
int		 registry_lookup(struct registry *, const char *name,
		    struct reg_lookup *out);
void		 registry_publish_hstate(struct reg_deployment *, unsigned worker,
		    enum reg_hstate);
/* For the supervisor: spawned endpoints of a deployment. */
unsigned	 registry_ndeployments(struct registry *);
struct reg_deployment *registry_deployment(struct registry *, unsigned i);
const char	*reg_deployment_name(const struct reg_deployment *);
unsigned	 reg_deployment_nendpoints(const struct reg_deployment *);
struct reg_endpoint *reg_deployment_endpoint(struct reg_deployment *,
		    unsigned i);
/* The /-/deployments document (a new reference). */
struct json_t	*registry_status_json(struct registry *);

#endif
