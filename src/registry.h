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
 *
 * Only the main thread changes the registry (registry_new, registry_reload),
 * always under the mutex; so the main thread may read it without the mutex.
 * Nothing is freed before registry_free: a deployment removed by a reload
 * moves to a list of gone ones, because handles that still drain requests
 * point at it, and endpoints stay because upstreams point at them.
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
	_Atomic uint64_t missed_pongs;	/* ping intervals that ended with
					 * the PING still unanswered */
	char		 pad[16];	/* keep workers' slots apart */
};

struct reg_endpoint {
	struct net_addr	 addr;
	char		 id[64];	/* replica id: "echo-0" or the address */
	_Atomic int	 pid;		/* spawned: current process, else 0 */
	_Atomic unsigned restarts;	/* spawned: times restarted */
	_Atomic unsigned max_ongoing;	/* cap from the conf; a reload may
					 * change it for the next connection */
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
#define REG_H_NSTATES	5

/* What a reload did to one deployment name. */
enum reg_change_kind {
	REG_ADDED,
	REG_CHANGED,		/* endpoints or settings: handles resolve again */
	REG_REMOVED,
};

struct reg_change {
	char		*name;
	enum reg_change_kind kind;
};

struct registry	*registry_new(const struct conf *, unsigned nworkers,
		    const char *runtime_dir, char *err, size_t errlen);
void		 registry_free(struct registry *);
/*
 * Make the registry match a new conf, all at once under the mutex.  Names
 * that changed, were added or removed are returned in *changes (free with
 * registry_changes_free).  A deployment whose endpoints and settings are
 * the same keeps everything, so handles and connections stay warm.  A
 * spawn deployment whose command changed gets new socket paths, so its new
 * processes can start while the old ones drain.  On error (an address that
 * does not parse) nothing changes and err says which key.
 */
int		 registry_reload(struct registry *, const struct conf *,
		    struct reg_change **changes, unsigned *nchanges, char *err,
		    size_t errlen);
void		 registry_changes_free(struct reg_change *, unsigned);
/* 0 and *out filled, or -1 when the name is unknown. */
int		 registry_lookup(struct registry *, const char *name,
		    struct reg_lookup *out);
void		 registry_publish_hstate(struct reg_deployment *, unsigned worker,
		    enum reg_hstate);
/* Requests waiting in this worker's handle for the deployment. */
void		 registry_publish_queued(struct reg_deployment *,
		    unsigned worker, unsigned n);
/* Live deployments, in conf order (main thread, or under the lock). */
unsigned	 registry_ndeployments(struct registry *);
struct reg_deployment *registry_deployment(struct registry *, unsigned i);
const char	*reg_deployment_name(const struct reg_deployment *);
unsigned	 reg_deployment_nendpoints(const struct reg_deployment *);
struct reg_endpoint *reg_deployment_endpoint(struct reg_deployment *,
		    unsigned i);
/* Streams in flight to ep, summed over the workers. */
unsigned	 registry_in_flight(struct registry *, const struct reg_endpoint *);
/* The /-/deployments document (a new reference). */
struct json_t	*registry_status_json(struct registry *);

#endif
