/*
 * registry.h -- deployment name -> endpoints, shared by all workers.
 *
 * Names come from four sources: the conf's spawn and endpoints
 * deployments, dns deployments (the conf names a DNS name; src/dns.c
 * resolves it and sets the addresses), and registration (the admin API
 * adds and removes replicas of names that need no conf entry).  Workers
 * read the registry when a handle is resolved: a lookup copies out the
 * endpoint list under a mutex, once per name per worker, never per
 * request.  Lookups go through hash indexes, so 10,000 names cost the
 * same per lookup as ten.
 *
 * Endpoints are keyed by address, so several names can share one replica
 * process (and each worker keeps one connection per address).  Live figures
 * (in-flight, pings, pongs, handle states) are kept per worker in slots that
 * only that worker writes (relaxed atomics): the hot path takes no lock and
 * shares no cache line, and the admin page sums the slots.
 *
 * Writers: the main thread (reload, DNS answers) and the thread serving the
 * admin API (registration).  They take turns on a writer lock, and commit
 * under the mutex readers take.  Conf deployments (the ones
 * registry_deployment() lists) are only ever changed by the main thread,
 * so the main thread may read them without the mutex.  Every version
 * change made outside a reload is told, once per changed name, to the
 * notify hook, which pushes it to the workers.
 *
 * Nothing is freed before registry_free: a deployment removed by a reload
 * moves to a list of gone ones, a registered name that lost its last
 * replica stays (inactive, found by no lookup) and comes back if a replica
 * registers again, because handles that still drain requests point at
 * them; and endpoints stay because upstreams point at them.
 */
#ifndef INGRESSD_REGISTRY_H
#define INGRESSD_REGISTRY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "net.h"

struct conf;
struct registry;
struct reg_deployment;

struct ep_stats;			/* registry_publish.h */

/* A worker's connection to an endpoint, as it publishes it (upstream.c
 * runs the state machine; the registry only names and ranks the states). */
enum reg_estate {
	REG_E_IDLE = 0, REG_E_CONNECTING, REG_E_WARMING, REG_E_READY, REG_E_DOWN,
};
#define REG_E_NSTATES	5

struct tls_cli;

/*
 * protocol "http" (the HTTP/1.1 upstream edge): its health and pool
 * settings.  With the protocol, part of an endpoint's identity: the same
 * address with other settings is another endpoint (other connections).
 */
struct reg_http {
	char		 health_path[208];	/* "": no active check */
	double		 health_interval;
	double		 health_timeout;
	double		 idle_timeout;
	unsigned	 max_5xx;		/* a run of 5xx: out; 0 off */
	int		 prewarm;		/* keep a connection open ahead */
	int		 retry_idempotent;	/* conf_http's */
};

/*
 * source inproc (src/inproc.c): the module and its args; with the
 * module file's identity, part of the endpoint's identity (a reload that
 * changes any of them gives a new instance on the new module).
 */
struct reg_inproc {
	char		 module[256];
	char		 args[1024];	/* each NUL-terminated, back to back */
	unsigned	 nargs;
	char		 file[96];	/* conf_inproc.file */
};

struct reg_endpoint {
	struct net_addr	 addr;		/* inproc: only text, "inproc:MODULE" */
	char		 id[64];	/* replica id: "echo-0" or the address */
	char		 protocol[8];	/* its upstream edge (upconn.h): "wire"
					 * when empty, "http", "h2c", "h2" */
	struct reg_http	 http;		/* protocol "http" only */
	struct reg_inproc inproc;	/* protocol "inproc" only */
	/* The deployment's "tls" settings, hashed (0: none): part of the
	 * identity, so deployments that reach one address with other TLS
	 * settings (a client certificate or not) get their own connections,
	 * and a reload that changes them, new ones. */
	uint64_t	 tls_id;
	_Atomic unsigned max_ongoing;	/* cap from the conf; a reload may
					 * change it for the next connection */
	/* Live figures: written only through registry_publish_* (below and
	 * in registry_publish.h), read only by the registry. */
	_Atomic int	 pid;		/* spawned: current process, else 0 */
	_Atomic unsigned restarts;	/* spawned: times restarted */
	struct ep_stats	*stats;		/* [nworkers] */
	/* TLS toward it (a TCP endpoint of a deployment with "tls": the
	 * wire, HTTP or HTTP/2 edge), or NULL.  Set on the main thread,
	 * read by workers at each connect; one replaced by a reload stays
	 * allocated (tls_cli_retire). */
	struct tls_cli *_Atomic tls;
};

/*
 * A replica's share of one name: weight (0..65535, as in an SRV record; 0
 * only from DNS SRV, a very small share) and priority (0..65535, lower is
 * preferred: a worse level carries traffic only while no better one has a
 * ready replica; balance.h).  They belong to the (name, replica)
 * membership, not to the endpoint: names sharing an address may weigh it
 * differently.
 */
struct reg_share {
	uint16_t	 weight;
	uint16_t	 priority;
};
#define REG_WEIGHT_DEFAULT	1
#define REG_PRIORITY_DEFAULT	0

/* What a worker gets back from a lookup: valid for the registry's life. */
struct reg_lookup {
	struct reg_deployment *dep;
	struct reg_endpoint **eps;	/* caller frees the array (free()) */
	struct reg_share *shares;	/* [neps], in eps's allocation */
	unsigned	 neps;
	unsigned	 version;
	unsigned	 queue_max;
	double		 queue_timeout;	/* 0: timeouts.queue */
	double		 request_timeout; /* 0: timeouts.request */
	int		 prewarm;	/* kept warm: never expires idle */
};

/* Handle states as published for the admin page, per worker. */
enum reg_hstate {
	REG_H_IDLE = 0, REG_H_RESOLVING, REG_H_WARMING, REG_H_READY, REG_H_FAILED,
};
#define REG_H_NSTATES	5

/* What happened to one name (a reload, a registration, DNS). */
enum reg_change_kind {
	REG_ADDED,
	REG_CHANGED,		/* endpoints or settings: handles resolve again */
	REG_REMOVED,
};

struct reg_change {
	char		*name;
	enum reg_change_kind kind;
};

/* Changes made outside a reload (registration, DNS), from the thread that
 * made them, after they are visible to lookups. */
typedef void	(*reg_notify_fn)(void *arg, const struct reg_change *,
		    unsigned n);

/* Outcome of a registration or a DNS update. */
enum reg_result {
	REG_OK = 0,		/* changed: the version went up */
	REG_UNCHANGED,		/* already so: nothing to push */
	REG_EINVAL,		/* bad name, id or address (err says) */
	REG_ECONFLICT,		/* the name belongs to the conf */
	REG_ENOENT,		/* no such deployment or replica */
	REG_EBUSY,		/* a reload holds the registry: retry */
	REG_ENOMEM,
};

/* An empty registry (NULL: out of memory); registry_reload() fills it. */
struct registry	*registry_new(unsigned nworkers, const char *runtime_dir);
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
void		 registry_set_notify(struct registry *, reg_notify_fn,
		    void *arg);
/*
 * Registration (any thread): replica id of name is at address, taking at
 * most max_ongoing requests (shared by every name at that address).  The
 * name needs no conf entry; a name the conf defines is refused.  Only
 * literal addresses, unix paths and localhost: nothing waits on DNS.
 * *version is the name's version after the call.
 */
enum reg_result	 registry_register(struct registry *, const char *name,
		    const char *id, const char *address, unsigned max_ongoing,
		    unsigned *version, char *err, size_t errlen);
/* A registered replica as the admin API and etcd describe it. */
struct reg_replica {
	const char	*address;
	const char	*protocol;	/* "wire" (NULL too), "http", "h2c" */
	unsigned	 max_ongoing;
	struct reg_share share;		/* weight >= 1 (0 is DNS SRV's) */
};
/* Would registry_register take it (name, id, address, not the conf's)?
 * REG_OK, or why not; changes nothing (the admin API asks before it
 * writes a registration through to etcd). */
enum reg_result	 registry_register_ok(struct registry *, const char *name,
		    const char *id, const char *address, char *err,
		    size_t errlen);
/* The same with a protocol ("wire", "http", "h2c": a name's replicas may
 * mix them), a weight and a priority; registry_register is this with the
 * wire protocol and the default share. */
enum reg_result	 registry_register_replica(struct registry *,
		    const char *name, const char *id, const struct reg_replica *,
		    unsigned *version, char *err, size_t errlen);
/* The name goes (lookups fail) when its last replica does. */
enum reg_result	 registry_unregister(struct registry *, const char *name,
		    const char *id, unsigned *version, char *err,
		    size_t errlen);
/* DNS (main thread): the addresses ("1.2.3.4:80", "[::1]:80") of a dns or
 * dns_srv deployment now, in any order, each with its share (shares NULL:
 * the default share); the same set changes nothing.  An address given
 * twice is one replica: the better priority's, with the weights of equal
 * priorities added (registry_share_merge). */
enum reg_result	 registry_set_addresses(struct registry *, const char *name,
		    char *const *addrs, const struct reg_share *shares,
		    unsigned n, char *err, size_t errlen);
/* One replica listed twice in a name (two SRV records, two registered ids
 * at one address): the lower priority wins; at equal ones the weights add
 * up (to 65535). */
void		 registry_share_merge(struct reg_share *into,
		    const struct reg_share *);
/* 0 and *out filled, or -1 when the name is unknown. */
int		 registry_lookup(struct registry *, const char *name,
		    struct reg_lookup *out);
void		 registry_publish_hstate(struct reg_deployment *, unsigned worker,
		    enum reg_hstate);
/* The supervisor: ep's process is now pid (0: none); it was restarted. */
void		 registry_publish_pid(struct reg_endpoint *, int pid);
void		 registry_count_restart(struct reg_endpoint *);
/* Replica connection states: their names, and which is best ("best of"
 * summaries over the workers). */
const char	*registry_estate_str(int);
int		 registry_estate_rank(int);
/* Requests waiting in this worker's handle for the deployment. */
void		 registry_publish_queued(struct reg_deployment *,
		    unsigned worker, unsigned n);
/* A worker dropped its idle handle for the deployment. */
void		 registry_count_eviction(struct reg_deployment *);
/* The conf's deployments, in conf order (main thread, or under the
 * lock); registered names are not among them. */
unsigned	 registry_ndeployments(struct registry *);
struct reg_deployment *registry_deployment(struct registry *, unsigned i);
const char	*reg_deployment_name(const struct reg_deployment *);
unsigned	 reg_deployment_nendpoints(const struct reg_deployment *);
struct reg_endpoint *reg_deployment_endpoint(struct reg_deployment *,
		    unsigned i);
/* Streams in flight to ep, summed over the workers. */
unsigned	 registry_in_flight(struct registry *, const struct reg_endpoint *);

/*
 * Live figures, typed: what the admin page (/-/deployments, rendered by
 * registry_json.c) and /metrics show.  Per-worker slots are summed; a
 * state is the best over the workers.
 */
struct reg_replica_figures {
	const char	*id;		/* "echo-0", a registered id, ... */
	const char	*address;
	enum reg_estate	 state;
	unsigned	 in_flight;
	uint64_t	 requests, pings, pongs, missed_pongs;
	const char	*protocol;	/* "wire", "http" */
	unsigned	 weight;	/* its share of this name */
	unsigned	 priority;
	/* protocol http: active checks and the keep-alive pool */
	uint64_t	 health_passed, health_failed;
	unsigned	 conns_open, conns_idle;
	int		 pid;		/* spawned and running, else 0 */
	int		 spawned;	/* restarts means something */
	unsigned	 restarts;
};

struct reg_figures {
	const char	*name;
	const char	*source;	/* spawn, endpoints, dns, register */
	const char	*dns;		/* dns: "name:port", dns_srv: its
					 * SRV name, else NULL */
	enum reg_hstate	 state;		/* the best handle's */
	unsigned	 handles[REG_H_NSTATES];	/* workers, by state */
	unsigned	 version;
	unsigned	 queued;
	uint64_t	 resolutions, evictions;
	const struct reg_replica_figures *replicas;
	unsigned	 nreplicas;
};

/* Called under the registry's mutex: it must not call the registry, and
 * the figures (strings included) are valid only during the call. */
typedef void	(*reg_figures_fn)(void *arg, const struct reg_figures *);
/*
 * fn for each live name (the conf's in conf order, then registered ones),
 * or for name alone when it is not NULL.  Returns how many names fn saw
 * (0: name unknown), or -1 when out of memory (fn may have seen some).
 */
int		 registry_figures(struct registry *, const char *name,
		    reg_figures_fn fn, void *arg);
const char	*registry_hstate_str(int);

/* registry_json.c: the /-/deployments document (a new reference), every
 * live name; one name's entry, or NULL when the name is unknown. */
struct json_t	*registry_status_json(struct registry *);
struct json_t	*registry_name_json(struct registry *, const char *name);

#endif
