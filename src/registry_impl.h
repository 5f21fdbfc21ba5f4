/*
 * registry_impl.h -- the registry's private structs and the store helpers
 * its parts share.  Only src/registry*.c include it.
 *
 * registry.c is the store (deployments, endpoints, the name indexes,
 * lookups, published figures); registry_reload.c (a conf reload, plan
 * and commit) and registry_names.c (registration, DNS address sets) build
 * on it.  The store never calls into those parts.
 */
#ifndef INGRESSD_REGISTRY_IMPL_H
#define INGRESSD_REGISTRY_IMPL_H

#include <pthread.h>

#include "conf.h"
#include "registry.h"

/* How a deployment's endpoints are spoken to (registry_plan_endpoint). */
struct reg_epopts {
	char		 protocol[8];	/* "" (wire), "http" or "inproc" */
	uint64_t	 tls_id;	/* reg_endpoint's */
	struct reg_http	 http;
	struct reg_inproc inproc;
};

struct reg_deployment {
	char		*name;
	struct reg_epopts opts;		/* its endpoints' (conf, dns) */
	enum conf_source source;
	int		 registered;	/* no conf entry: the admin API's */
	int		 active;	/* registered: has replicas */
	char		*command;	/* spawn: argv joined by '\n';
					 * dns: "name:port" */
	unsigned	 replicas;
	unsigned	 gen;		/* spawn: socket path generation */
	unsigned	 max_ongoing;
	unsigned	 queue_max;
	double		 queue_timeout;
	double		 request_timeout;
	int		 prewarm;
	struct reg_endpoint **eps;
	struct reg_share *shares;	/* by eps; NULL: all the default */
	char		**rids;		/* registered: replica ids, by eps */
	unsigned	 neps;
	unsigned	 version;
	_Atomic uint64_t resolutions;
	_Atomic uint64_t evictions;
	_Atomic int	*hstate;	/* [nworkers] */
	_Atomic unsigned *queued;	/* [nworkers] */
	struct reg_deployment *hnext;	/* its index's chain */
};

/* Names -> deployments: chained, a power of two buckets. */
struct reg_index {
	struct reg_deployment **b;
	unsigned	 nb;
};

struct registry {
	pthread_mutex_t	 lock;		/* lookups vs. commits */
	pthread_mutex_t	 wlock;		/* one writer at a time */
	unsigned	 nworkers;
	char		*runtime_dir;
	struct reg_deployment **deps;	/* the conf's, in conf order */
	unsigned	 ndeps;
	struct reg_index cidx;		/* deps by name */
	struct reg_deployment **regd;	/* registered, ever (some inactive) */
	unsigned	 nregd, capregd;
	struct reg_index ridx;		/* regd by name */
	struct reg_deployment **gone;	/* removed by a reload */
	unsigned	 ngone;
	struct reg_endpoint **eps;	/* every endpoint, owned here; only
					 * writers touch the array */
	unsigned	 neps;
	reg_notify_fn	 notify;
	void		*notify_arg;
};


/* Replica i's share of d. */
static inline struct reg_share
registry_share(const struct reg_deployment *d, unsigned i)
{
	static const struct reg_share def = { REG_WEIGHT_DEFAULT,
	    REG_PRIORITY_DEFAULT };

	return d->shares != NULL ? d->shares[i] : def;
}

static inline int
registry_share_eq(struct reg_share a, struct reg_share b)
{
	return a.weight == b.weight && a.priority == b.priority;
}

/* registry.c: the store's helpers for the parts that change it. */
void		 registry_strv_free(char **, unsigned);
void		 registry_deployment_free(struct reg_deployment *);
void		 registry_endpoint_free(struct reg_endpoint *);
struct reg_deployment *registry_deployment_new(struct registry *,
		    const char *name);
/* An endpoint by address: an existing one, one in fresh[*nfresh] (made by
 * the caller's plan so far), or a new one appended there. */
struct reg_endpoint *registry_plan_endpoint(struct registry *,
		    struct reg_endpoint ***fresh, unsigned *nfresh,
		    const char *text, const char *id,
		    const struct reg_epopts *, char *err, size_t errlen);
struct reg_deployment *registry_index_find(const struct reg_index *,
		    const char *name);
void		 registry_index_put(struct reg_index *, struct reg_deployment *);
struct reg_deployment **registry_index_alloc(unsigned n, unsigned *nb);
struct reg_deployment **registry_index_rebuild(struct reg_index *,
		    struct reg_deployment **b, unsigned nb,
		    struct reg_deployment **deps, unsigned n);

#endif
