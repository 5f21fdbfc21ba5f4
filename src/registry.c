/*
 * registry.c -- deployment name -> endpoints (see registry.h).
 *
 * A reload runs in two phases.  The plan phase reads the registry without
 * the mutex (writers take turns on wlock, and conf deployments have no
 * other writer), compares each deployment of the new conf with the live
 * one of the same name, parses new addresses (which may ask DNS) and
 * allocates everything it will need.  The commit phase takes the mutex
 * and only links pointers, so it cannot fail half way and workers never
 * see a mix of old and new.  Registration and DNS updates work the same
 * way on one name: allocate under wlock, link under the mutex.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <time.h>

#include "conf.h"
#include "hash.h"
#include "registry.h"
#include "registry_publish.h"

/* A registration waits this long for a reload to finish, then EBUSY. */
#define REG_WLOCK_WAIT_MS	50
#define REG_ID_MAX		63	/* fits reg_endpoint.id */

struct reg_deployment {
	char		*name;
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

/* One deployment of the new conf, as the plan phase sees it. */
enum reg_plan_kind { PLAN_SAME, PLAN_SETTINGS, PLAN_ENDPOINTS, PLAN_NEW };

struct reg_plan {
	const struct conf_deployment *cd;
	struct reg_deployment *old;	/* live one of that name, or NULL */
	enum reg_plan_kind kind;
	struct reg_deployment *dep;	/* PLAN_NEW: allocated */
	char		*command;
	unsigned	 gen;
	struct reg_endpoint **eps;	/* PLAN_NEW, PLAN_ENDPOINTS */
	unsigned	 neps;
};

static const char *hstate_names[] = {
	"idle", "resolving", "warming", "ready", "failed",
};

static const char *estate_names[REG_E_NSTATES] = {
	"idle", "connecting", "warming", "ready", "down",
};

static const char *source_names[] = { "spawn", "endpoints", "dns" };

static void
registry_strv_free(char **v, unsigned n)
{
	unsigned i;

	for (i = 0; v != NULL && i < n; i++)
		free(v[i]);
	free(v);
}

static void
registry_deployment_free(struct reg_deployment *d)
{
	if (d == NULL)
		return;
	free(d->name);
	free(d->command);
	free(d->eps);
	registry_strv_free(d->rids, d->neps);
	free(d->hstate);
	free(d->queued);
	free(d);
}

static void
registry_endpoint_free(struct reg_endpoint *ep)
{
	if (ep == NULL)
		return;
	free(ep->stats);
	free(ep);
}

/* Indexes -------------------------------------------------------------- */

static struct reg_deployment *
registry_index_find(const struct reg_index *x, const char *name)
{
	struct reg_deployment *d;

	if (x->nb == 0)
		return NULL;
	for (d = x->b[hash_name(name) & (x->nb - 1)]; d != NULL;
	    d = d->hnext) {
		if (strcmp(d->name, name) == 0)
			return d;
	}
	return NULL;
}

static void
registry_index_put(struct reg_index *x, struct reg_deployment *d)
{
	unsigned h = hash_name(d->name) & (x->nb - 1);

	d->hnext = x->b[h];
	x->b[h] = d;
}

/* Buckets for n names: at least 2n, a power of two. */
static struct reg_deployment **
registry_index_alloc(unsigned n, unsigned *nb)
{
	*nb = 16;
	while (*nb < 2 * n && *nb < (1u << 30))
		*nb *= 2;
	return calloc(*nb, sizeof(struct reg_deployment *));
}

/* Under the mutex: every member of deps[n] into fresh buckets b[nb].
 * Returns the old bucket array, for the caller to free. */
static struct reg_deployment **
registry_index_rebuild(struct reg_index *x, struct reg_deployment **b,
    unsigned nb, struct reg_deployment **deps, unsigned n)
{
	struct reg_deployment **old = x->b;
	unsigned i;

	x->b = b;
	x->nb = nb;
	for (i = 0; i < n; i++)
		registry_index_put(x, deps[i]);
	return old;
}

/* The live deployment of that name: the conf's first, then registered. */
static struct reg_deployment *
registry_find_live(struct registry *r, const char *name)
{
	struct reg_deployment *d;

	if ((d = registry_index_find(&r->cidx, name)) != NULL)
		return d;
	if ((d = registry_index_find(&r->ridx, name)) != NULL && d->active)
		return d;
	return NULL;
}

struct registry *
registry_new(unsigned nworkers, const char *runtime_dir)
{
	struct registry *r;

	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->runtime_dir = strdup(runtime_dir)) == NULL) {
		free(r);
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->wlock, NULL);
	r->nworkers = nworkers;
	return r;
}

void
registry_free(struct registry *r)
{
	unsigned i;

	if (r == NULL)
		return;
	for (i = 0; i < r->ndeps; i++)
		registry_deployment_free(r->deps[i]);
	for (i = 0; i < r->nregd; i++)
		registry_deployment_free(r->regd[i]);
	for (i = 0; i < r->ngone; i++)
		registry_deployment_free(r->gone[i]);
	for (i = 0; i < r->neps; i++)
		registry_endpoint_free(r->eps[i]);
	free(r->deps);
	free(r->regd);
	free(r->gone);
	free(r->eps);
	free(r->cidx.b);
	free(r->ridx.b);
	free(r->runtime_dir);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->wlock);
	free(r);
}

void
registry_set_notify(struct registry *r, reg_notify_fn fn, void *arg)
{
	r->notify = fn;
	r->notify_arg = arg;
}

/* Plan phase ---------------------------------------------------------- */

/* The argv as one string, to tell whether a command changed. */
static char *
registry_command(const struct conf_deployment *cd)
{
	size_t i, len = 1;
	char *s;

	if (cd->source == CONF_DNS)
		return strdup(cd->dns);
	if (cd->source != CONF_SPAWN)
		return strdup("");
	for (i = 0; cd->command[i] != NULL; i++)
		len += strlen(cd->command[i]) + 1;
	if ((s = calloc(1, len)) == NULL)
		return NULL;
	for (i = 0; cd->command[i] != NULL; i++) {
		if (i > 0)
			strcat(s, "\n");
		strcat(s, cd->command[i]);
	}
	return s;
}

static int
registry_same_endpoints(const struct reg_deployment *d,
    const struct conf_deployment *cd, const char *command)
{
	unsigned i;

	if (d->source != cd->source)
		return 0;
	if (cd->source == CONF_SPAWN)
		return strcmp(d->command, command) == 0 &&
		    d->replicas == cd->replicas;
	if (cd->source == CONF_DNS)
		return strcmp(d->command, command) == 0;
	if (d->neps != cd->nendpoints)
		return 0;
	for (i = 0; i < d->neps; i++) {
		if (strcmp(d->eps[i]->addr.text, cd->endpoints[i]) != 0)
			return 0;
	}
	return 1;
}

static int
registry_same_settings(const struct reg_deployment *d,
    const struct conf_deployment *cd)
{
	return d->max_ongoing == cd->max_ongoing &&
	    d->queue_max == cd->queue_max &&
	    d->queue_timeout == cd->queue_timeout &&
	    d->request_timeout == cd->request_timeout &&
	    d->prewarm == cd->prewarm;
}

/*
 * A spawn generation no deployment of that name used before: the sockets
 * of a removed or replaced one may still be draining.
 */
static unsigned
registry_next_gen(struct registry *r, const char *name)
{
	unsigned i, gen = 0;

	for (i = 0; i < r->ndeps; i++) {
		if (strcmp(r->deps[i]->name, name) == 0 && r->deps[i]->gen > gen)
			gen = r->deps[i]->gen;
	}
	for (i = 0; i < r->ngone; i++) {
		if (strcmp(r->gone[i]->name, name) == 0 && r->gone[i]->gen > gen)
			gen = r->gone[i]->gen;
	}
	return gen + 1;
}

/* An endpoint by address: an existing one, one planned already, or new. */
static struct reg_endpoint *
registry_plan_endpoint(struct registry *r, struct reg_endpoint ***fresh,
    unsigned *nfresh, const char *text, const char *id, char *err,
    size_t errlen)
{
	struct reg_endpoint *ep, **nf;
	unsigned i;

	for (i = 0; i < r->neps; i++) {
		if (strcmp(r->eps[i]->addr.text, text) == 0)
			return r->eps[i];
	}
	for (i = 0; i < *nfresh; i++) {
		if (strcmp((*fresh)[i]->addr.text, text) == 0)
			return (*fresh)[i];
	}
	if ((ep = calloc(1, sizeof(*ep))) == NULL ||
	    (ep->stats = calloc(r->nworkers, sizeof(*ep->stats))) == NULL ||
	    (nf = realloc(*fresh, (*nfresh + 1) * sizeof(*nf))) == NULL) {
		registry_endpoint_free(ep);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*fresh = nf;
	if (net_addr_parse(text, &ep->addr, err, errlen) == -1) {
		registry_endpoint_free(ep);
		return NULL;
	}
	snprintf(ep->id, sizeof(ep->id), "%s", id);
	nf[(*nfresh)++] = ep;
	return ep;
}

/* The endpoints a deployment will have: its addresses, or its sockets. */
static int
registry_plan_endpoints(struct registry *r, struct reg_plan *p,
    struct reg_endpoint ***fresh, unsigned *nfresh, char *err, size_t errlen)
{
	const struct conf_deployment *cd = p->cd;
	char addr[512], id[64], msg[256];
	unsigned i, n;

	/* dns: none until src/dns.c has an answer. */
	n = cd->source == CONF_SPAWN ? cd->replicas :
	    cd->source == CONF_ENDPOINTS ? cd->nendpoints : 0;
	if ((p->eps = calloc(n ? n : 1, sizeof(*p->eps))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (cd->source == CONF_ENDPOINTS) {
			snprintf(addr, sizeof(addr), "%s", cd->endpoints[i]);
			snprintf(id, sizeof(id), "%s", cd->endpoints[i]);
		} else if (p->gen == 1) {
			snprintf(addr, sizeof(addr), "unix:%s/%s-%u.sock",
			    r->runtime_dir, cd->name, i);
			snprintf(id, sizeof(id), "%s-%u", cd->name, i);
		} else {
			snprintf(addr, sizeof(addr), "unix:%s/%s-%u.g%u.sock",
			    r->runtime_dir, cd->name, i, p->gen);
			snprintf(id, sizeof(id), "%s-%u.g%u", cd->name, i,
			    p->gen);
		}
		p->eps[i] = registry_plan_endpoint(r, fresh, nfresh, addr, id,
		    msg, sizeof(msg));
		if (p->eps[i] == NULL) {
			snprintf(err, errlen, "deployments.%s: %s", cd->name,
			    msg);
			return -1;
		}
		p->neps++;
	}
	return 0;
}

static struct reg_deployment *
registry_deployment_new(struct registry *r, const char *name)
{
	struct reg_deployment *d;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	d->name = strdup(name);
	d->hstate = calloc(r->nworkers, sizeof(*d->hstate));
	d->queued = calloc(r->nworkers, sizeof(*d->queued));
	if (d->name == NULL || d->hstate == NULL || d->queued == NULL) {
		registry_deployment_free(d);
		return NULL;
	}
	return d;
}

static int
registry_plan_one(struct registry *r, struct reg_plan *p,
    struct reg_endpoint ***fresh, unsigned *nfresh, char *err, size_t errlen)
{
	const struct conf_deployment *cd = p->cd;

	if ((p->command = registry_command(cd)) == NULL)
		goto oom;
	p->old = registry_index_find(&r->cidx, cd->name);
	if (p->old != NULL && registry_same_endpoints(p->old, cd, p->command)) {
		p->kind = registry_same_settings(p->old, cd) ? PLAN_SAME :
		    PLAN_SETTINGS;
		p->gen = p->old->gen;
		return 0;
	}
	p->kind = p->old != NULL ? PLAN_ENDPOINTS : PLAN_NEW;
	/* Only the replica count changed: keep the sockets that stay. */
	if (p->old != NULL && cd->source == CONF_SPAWN &&
	    p->old->source == CONF_SPAWN &&
	    strcmp(p->old->command, p->command) == 0)
		p->gen = p->old->gen;
	else
		p->gen = cd->source == CONF_SPAWN ?
		    registry_next_gen(r, cd->name) : 0;
	if (p->kind == PLAN_NEW &&
	    (p->dep = registry_deployment_new(r, cd->name)) == NULL)
		goto oom;
	return registry_plan_endpoints(r, p, fresh, nfresh, err, errlen);
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

static void
registry_plan_free(struct reg_plan *plan, unsigned n)
{
	unsigned i;

	for (i = 0; plan != NULL && i < n; i++) {
		free(plan[i].command);
		free(plan[i].eps);
		registry_deployment_free(plan[i].dep);
	}
	free(plan);
}

/* Commit phase --------------------------------------------------------- */

static void
registry_commit_one(struct reg_plan *p)
{
	const struct conf_deployment *cd = p->cd;
	struct reg_deployment *d = p->kind == PLAN_NEW ? p->dep : p->old;
	unsigned i;

	if (p->kind == PLAN_SAME)
		return;
	d->source = cd->source;
	d->replicas = cd->replicas;
	d->max_ongoing = cd->max_ongoing;
	d->queue_max = cd->queue_max;
	d->queue_timeout = cd->queue_timeout;
	d->request_timeout = cd->request_timeout;
	d->prewarm = cd->prewarm;
	d->gen = p->gen;
	d->version++;
	if (p->kind == PLAN_SETTINGS) {
		for (i = 0; i < d->neps; i++)
			atomic_store(&d->eps[i]->max_ongoing, cd->max_ongoing);
		return;
	}
	/* Swap the strings and arrays: the plan frees the old ones. */
	free(d->command);
	d->command = p->command;
	p->command = NULL;
	free(d->eps);
	d->eps = p->eps;
	d->neps = p->neps;
	p->eps = NULL;
	p->dep = NULL;
	for (i = 0; i < d->neps; i++)
		atomic_store(&d->eps[i]->max_ongoing, cd->max_ongoing);
}

static int
registry_add_change(struct reg_change **ch, unsigned *n, const char *name,
    enum reg_change_kind kind)
{
	struct reg_change *nc;

	if ((nc = realloc(*ch, (*n + 1) * sizeof(*nc))) == NULL)
		return -1;
	*ch = nc;
	if ((nc[*n].name = strdup(name)) == NULL)
		return -1;
	nc[(*n)++].kind = kind;
	return 0;
}

/* The change list, and the arrays the commit will need, before the lock. */
static int
registry_plan_changes(struct registry *r, const struct conf *conf,
    struct reg_plan *plan, struct reg_change **ch, unsigned *nch)
{
	unsigned i;

	for (i = 0; i < conf->ndeployments; i++) {
		if (plan[i].kind == PLAN_SAME)
			continue;
		if (registry_add_change(ch, nch, plan[i].cd->name,
		    plan[i].kind == PLAN_NEW ? REG_ADDED : REG_CHANGED) == -1)
			return -1;
	}
	for (i = 0; i < r->ndeps; i++) {
		if (conf_find_deployment(conf, r->deps[i]->name) == NULL &&
		    registry_add_change(ch, nch, r->deps[i]->name,
		    REG_REMOVED) == -1)
			return -1;
	}
	return 0;
}

/* A name the conf takes over from registration: its replicas go. */
static void
registry_deactivate(struct reg_deployment *d)
{
	registry_strv_free(d->rids, d->neps);
	free(d->eps);
	d->rids = NULL;
	d->eps = NULL;
	d->neps = 0;
	d->active = 0;
	d->version++;
}

/* Under the mutex: the new conf's deployments go live. */
static void
registry_commit(struct registry *r, const struct conf *conf,
    struct reg_plan *plan, struct reg_deployment **ndeps,
    struct reg_deployment ***cbuckets, unsigned nb)
{
	struct reg_deployment *reg;
	unsigned i;

	for (i = 0; i < r->ndeps; i++) {
		if (conf_find_deployment(conf, r->deps[i]->name) == NULL)
			r->gone[r->ngone++] = r->deps[i];
	}
	for (i = 0; i < conf->ndeployments; i++) {
		ndeps[i] = plan[i].kind == PLAN_NEW ? plan[i].dep : plan[i].old;
		registry_commit_one(&plan[i]);
		if (plan[i].kind == PLAN_NEW && (reg = registry_index_find(
		    &r->ridx, plan[i].cd->name)) != NULL && reg->active)
			registry_deactivate(reg);
	}
	free(r->deps);
	r->deps = ndeps;
	r->ndeps = conf->ndeployments;
	*cbuckets = registry_index_rebuild(&r->cidx, *cbuckets, nb, ndeps,
	    r->ndeps);
}

int
registry_reload(struct registry *r, const struct conf *conf,
    struct reg_change **changes, unsigned *nchanges, char *err, size_t errlen)
{
	struct reg_plan *plan;
	struct reg_endpoint **fresh = NULL, **neps = NULL;
	struct reg_deployment **ndeps = NULL, **ngone = NULL, **cb = NULL;
	struct reg_change *ch = NULL;
	unsigned i, nfresh = 0, nch = 0, nremoved, nb;

	*changes = NULL;
	*nchanges = 0;
	pthread_mutex_lock(&r->wlock);
	if ((plan = calloc(conf->ndeployments + 1, sizeof(*plan))) == NULL)
		goto oom;
	for (i = 0; i < conf->ndeployments; i++) {
		plan[i].cd = &conf->deployments[i];
		if (registry_plan_one(r, &plan[i], &fresh, &nfresh, err,
		    errlen) == -1)
			goto fail;
	}
	if (registry_plan_changes(r, conf, plan, &ch, &nch) == -1)
		goto oom;
	nremoved = 0;
	for (i = 0; i < nch; i++)
		nremoved += ch[i].kind == REG_REMOVED;
	ndeps = calloc(conf->ndeployments + 1, sizeof(*ndeps));
	ngone = realloc(r->gone, (r->ngone + nremoved + 1) * sizeof(*ngone));
	if (ngone != NULL)
		r->gone = ngone;
	neps = realloc(r->eps, (r->neps + nfresh + 1) * sizeof(*neps));
	if (neps != NULL)
		r->eps = neps;
	cb = registry_index_alloc(conf->ndeployments, &nb);
	if (ndeps == NULL || ngone == NULL || neps == NULL || cb == NULL)
		goto oom;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < nfresh; i++)
		r->eps[r->neps++] = fresh[i];
	registry_commit(r, conf, plan, ndeps, &cb, nb);
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_unlock(&r->wlock);

	free(cb);		/* the old buckets */
	registry_plan_free(plan, conf->ndeployments);
	free(fresh);
	*changes = ch;
	*nchanges = nch;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
fail:
	pthread_mutex_unlock(&r->wlock);
	for (i = 0; i < nfresh; i++)
		registry_endpoint_free(fresh[i]);
	free(fresh);
	free(ndeps);
	free(cb);
	registry_plan_free(plan, conf->ndeployments);
	registry_changes_free(ch, nch);
	return -1;
}

void
registry_changes_free(struct reg_change *ch, unsigned n)
{
	unsigned i;

	for (i = 0; ch != NULL && i < n; i++)
		free(ch[i].name);
	free(ch);
}

/* Registration and DNS ------------------------------------------------- */

static int
registry_name_ok(const char *s, size_t max)
{
	size_t len = strlen(s);

	return len > 0 && len <= max && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789._-") == len;
}

/*
 * The addresses registration takes: none that needs a DNS lookup, since
 * the caller is a worker thread serving clients.
 */
static int
registry_addr_literal(const char *s)
{
	struct in_addr in;
	const char *colon;
	char host[64];
	size_t len;

	if (strncmp(s, "unix:", 5) == 0 || s[0] == '[')
		return 1;
	if ((colon = strrchr(s, ':')) == NULL ||
	    (len = (size_t)(colon - s)) >= sizeof(host))
		return 0;
	memcpy(host, s, len);
	host[len] = '\0';
	return inet_pton(AF_INET, host, &in) == 1;
}

/* A worker must never wait long on a reload: a little, then EBUSY. */
static int
registry_wlock_timed(struct registry *r)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += REG_WLOCK_WAIT_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_mutex_timedlock(&r->wlock, &ts);
}

/* Push one name's change; the writer lock is released. */
static void
registry_tell(struct registry *r, const char *name, enum reg_change_kind kind)
{
	struct reg_change c;

	if (r->notify == NULL)
		return;
	c.name = (char *)name;
	c.kind = kind;
	r->notify(r->notify_arg, &c, 1);
}

/* Room for one more registered name: bigger arrays, allocated before the
 * mutex, since readers walk the list and the index under it. */
struct reg_room {
	struct reg_deployment **list;	/* a bigger regd, or NULL */
	unsigned	 cap;
	struct reg_deployment **nb;	/* bigger index buckets, or NULL */
	unsigned	 nbn;
};

static int
registry_regd_room(struct registry *r, struct reg_room *room)
{
	if (r->nregd == r->capregd) {
		room->cap = r->capregd ? r->capregd * 2 : 64;
		if ((room->list = calloc(room->cap, sizeof(*room->list))) ==
		    NULL)
			return -1;
	}
	if (r->ridx.nb < 2 * (r->nregd + 1) &&
	    (room->nb = registry_index_alloc(r->nregd + 1, &room->nbn)) ==
	    NULL)
		return -1;
	return 0;
}

/* Under the mutex: a new registered name joins the list and the index.
 * room is left holding the old arrays, for the caller to free. */
static void
registry_regd_add(struct registry *r, struct reg_deployment *d,
    struct reg_room *room)
{
	struct reg_deployment **old;

	if (room->list != NULL) {
		if (r->nregd > 0)
			memcpy(room->list, r->regd, r->nregd *
			    sizeof(*room->list));
		old = r->regd;
		r->regd = room->list;
		r->capregd = room->cap;
		room->list = old;
	}
	r->regd[r->nregd++] = d;
	if (room->nb != NULL)
		room->nb = registry_index_rebuild(&r->ridx, room->nb,
		    room->nbn, r->regd, r->nregd);
	else
		registry_index_put(&r->ridx, d);
}

static struct reg_deployment *
registry_regd_new(struct registry *r, const char *name)
{
	struct reg_deployment *d;

	if ((d = registry_deployment_new(r, name)) == NULL)
		return NULL;
	d->registered = 1;
	d->source = CONF_ENDPOINTS;
	d->max_ongoing = 100;
	d->queue_max = 1024;
	return d;
}

/*
 * The new replica arrays of d with replica i (of n) set to ep/id, or
 * appended when i == n.  Strings are shared with the old array except a
 * new id.
 */
static int
registry_regd_arrays(struct reg_deployment *d, unsigned i,
    struct reg_endpoint *ep, const char *id, struct reg_endpoint ***eps,
    char ***rids)
{
	unsigned n = d != NULL ? d->neps : 0, m = i < n ? n : n + 1;

	*eps = calloc(m, sizeof(**eps));
	*rids = calloc(m, sizeof(**rids));
	if (*eps == NULL || *rids == NULL)
		goto fail;
	if (n > 0) {
		memcpy(*eps, d->eps, n * sizeof(**eps));
		memcpy(*rids, d->rids, n * sizeof(**rids));
	}
	(*eps)[i] = ep;
	if (i == n && ((*rids)[i] = strdup(id)) == NULL)
		goto fail;
	return 0;
fail:
	free(*eps);
	free(*rids);
	*eps = NULL;
	*rids = NULL;
	return -1;
}

/* What a registration links in, all allocated before the mutex. */
struct reg_regplan {
	struct reg_deployment *d;	/* the name's, or NULL */
	struct reg_deployment *nd;	/* a new name's */
	struct reg_room	 room;		/* ... and room for it */
	unsigned	 i, n;		/* replica i of n; i == n: a new one */
	struct reg_endpoint *ep;
	struct reg_endpoint **fresh;	/* ep, when it is new */
	unsigned	 nfresh;
	struct reg_endpoint **eps;	/* the name's new arrays */
	char		**rids;
};

static enum reg_result
registry_register_check(const char *name, const char *id,
    const char *address, char *err, size_t errlen)
{
	int name_ok = registry_name_ok(name, 255);

	if (!name_ok || !registry_name_ok(id, REG_ID_MAX)) {
		snprintf(err, errlen, "bad %s (1..%d characters of A-Z a-z "
		    "0-9 . _ -)", name_ok ? "replica id" : "deployment name",
		    name_ok ? REG_ID_MAX : 255);
		return REG_EINVAL;
	}
	if (!registry_addr_literal(address)) {
		snprintf(err, errlen, "bad address \"%s\": must be IP:PORT, "
		    "[IPv6]:PORT or unix:PATH", address);
		return REG_EINVAL;
	}
	return REG_OK;
}

/* A failed plan lets go of what it allocated. */
static void
registry_regplan_undo(struct reg_regplan *rp)
{
	if (rp->rids != NULL && rp->i == rp->n)
		free(rp->rids[rp->i]);
	free(rp->eps);
	free(rp->rids);
	registry_deployment_free(rp->nd);
	free(rp->room.list);
	free(rp->room.nb);
	if (rp->nfresh > 0)
		registry_endpoint_free(rp->fresh[0]);
	free(rp->fresh);
}

/* Under wlock: REG_OK and rp ready to commit, or why not. */
static enum reg_result
registry_register_plan(struct registry *r, struct reg_regplan *rp,
    const char *name, const char *id, const char *address, unsigned max,
    unsigned *version, char *err, size_t errlen)
{
	struct reg_deployment *d;
	struct reg_endpoint **neps;

	if (registry_index_find(&r->cidx, name) != NULL) {
		snprintf(err, errlen, "deployment %s is defined in the "
		    "configuration", name);
		return REG_ECONFLICT;
	}
	d = rp->d = registry_index_find(&r->ridx, name);
	rp->n = d != NULL ? d->neps : 0;
	for (rp->i = 0; rp->i < rp->n && strcmp(d->rids[rp->i], id) != 0;
	    rp->i++)
		continue;
	if (rp->i < rp->n && strcmp(d->eps[rp->i]->addr.text, address) == 0 &&
	    atomic_load(&d->eps[rp->i]->max_ongoing) == max) {
		*version = d->version;
		return REG_UNCHANGED;
	}
	if ((rp->ep = registry_plan_endpoint(r, &rp->fresh, &rp->nfresh,
	    address, id, err, errlen)) == NULL)
		return strcmp(err, "out of memory") == 0 ? REG_ENOMEM :
		    REG_EINVAL;
	if (registry_regd_arrays(d, rp->i, rp->ep, id, &rp->eps,
	    &rp->rids) == -1 || (d == NULL && ((rp->nd = registry_regd_new(r,
	    name)) == NULL || registry_regd_room(r, &rp->room) == -1)))
		goto oom;
	if (rp->nfresh > 0) {
		if ((neps = realloc(r->eps, (r->neps + 1) * sizeof(*neps))) ==
		    NULL)
			goto oom;
		r->eps = neps;
	}
	return REG_OK;
oom:
	snprintf(err, errlen, "out of memory");
	return REG_ENOMEM;
}

/* Under the mutex: only pointers move.  Returns whether the name was
 * live before; rp keeps what is to be freed. */
static int
registry_register_commit(struct registry *r, struct reg_regplan *rp,
    unsigned max, unsigned *version)
{
	struct reg_deployment *d = rp->d;
	struct reg_endpoint **old;
	int was_active;

	if (rp->nfresh > 0)
		r->eps[r->neps++] = rp->fresh[0];
	if (rp->nd != NULL) {
		registry_regd_add(r, rp->nd, &rp->room);
		d = rp->nd;
		rp->nd = NULL;
	}
	was_active = d->active;
	old = d->eps;
	d->eps = rp->eps;
	rp->eps = old;
	free(d->rids);
	d->rids = rp->rids;
	rp->rids = NULL;
	d->neps = rp->i < rp->n ? rp->n : rp->n + 1;
	d->active = 1;
	d->version++;
	atomic_store(&rp->ep->max_ongoing, max);
	*version = d->version;
	return was_active;
}

enum reg_result
registry_register(struct registry *r, const char *name, const char *id,
    const char *address, unsigned max_ongoing, unsigned *version, char *err,
    size_t errlen)
{
	struct reg_regplan rp;
	enum reg_result rv;
	int was_active;

	*version = 0;
	if ((rv = registry_register_check(name, id, address, err, errlen)) !=
	    REG_OK)
		return rv;
	if (registry_wlock_timed(r) != 0) {
		snprintf(err, errlen, "the registry is busy (a reload): retry");
		return REG_EBUSY;
	}
	memset(&rp, 0, sizeof(rp));
	if ((rv = registry_register_plan(r, &rp, name, id, address,
	    max_ongoing, version, err, errlen)) != REG_OK) {
		registry_regplan_undo(&rp);
		pthread_mutex_unlock(&r->wlock);
		return rv;
	}
	pthread_mutex_lock(&r->lock);
	was_active = registry_register_commit(r, &rp, max_ongoing, version);
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_unlock(&r->wlock);
	free(rp.eps);		/* the old arrays and buckets */
	free(rp.room.list);
	free(rp.room.nb);
	free(rp.fresh);
	registry_tell(r, name, was_active ? REG_CHANGED : REG_ADDED);
	return REG_OK;
}

enum reg_result
registry_unregister(struct registry *r, const char *name, const char *id,
    unsigned *version, char *err, size_t errlen)
{
	struct reg_endpoint **eps = NULL, **oeps;
	struct reg_deployment *d;
	char **rids = NULL, **orids, *gone;
	unsigned i, j, k, n;

	*version = 0;
	if (registry_wlock_timed(r) != 0) {
		snprintf(err, errlen, "the registry is busy (a reload): retry");
		return REG_EBUSY;
	}
	if (registry_index_find(&r->cidx, name) != NULL) {
		snprintf(err, errlen, "deployment %s is defined in the "
		    "configuration", name);
		pthread_mutex_unlock(&r->wlock);
		return REG_ECONFLICT;
	}
	d = registry_index_find(&r->ridx, name);
	n = d != NULL && d->active ? d->neps : 0;
	for (i = 0; i < n && strcmp(d->rids[i], id) != 0; i++)
		continue;
	if (i == n) {
		snprintf(err, errlen, "no replica %s registered for %s", id,
		    name);
		pthread_mutex_unlock(&r->wlock);
		return REG_ENOENT;
	}
	if (n > 1 && ((eps = calloc(n - 1, sizeof(*eps))) == NULL ||
	    (rids = calloc(n - 1, sizeof(*rids))) == NULL)) {
		free(eps);
		snprintf(err, errlen, "out of memory");
		pthread_mutex_unlock(&r->wlock);
		return REG_ENOMEM;
	}
	for (j = k = 0; j < n; j++) {
		if (j == i)
			continue;
		eps[k] = d->eps[j];
		rids[k++] = d->rids[j];
	}
	gone = d->rids[i];

	pthread_mutex_lock(&r->lock);
	oeps = d->eps;
	orids = d->rids;
	d->eps = eps;
	d->rids = rids;
	d->neps = n - 1;
	d->active = n > 1;
	d->version++;
	*version = d->version;
	pthread_mutex_unlock(&r->lock);

	pthread_mutex_unlock(&r->wlock);
	free(oeps);
	free(orids);
	free(gone);
	registry_tell(r, name, n > 1 ? REG_CHANGED : REG_REMOVED);
	return REG_OK;
}

/* The same addresses, in any order (a DNS answer's order is not news). */
static int
registry_same_addresses(const struct reg_deployment *d, char *const *addrs,
    unsigned n)
{
	unsigned i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < d->neps; j++) {
			if (strcmp(d->eps[j]->addr.text, addrs[i]) == 0)
				break;
		}
		if (j == d->neps)
			return 0;
	}
	for (j = 0; j < d->neps; j++) {
		for (i = 0; i < n; i++) {
			if (strcmp(d->eps[j]->addr.text, addrs[i]) == 0)
				break;
		}
		if (i == n)
			return 0;
	}
	return 1;
}

/* The endpoints for a DNS answer, duplicates dropped; -1 and err. */
static int
registry_dns_endpoints(struct registry *r, char *const *addrs, unsigned n,
    struct reg_endpoint ***eps, unsigned *neps, struct reg_endpoint ***fresh,
    unsigned *nfresh, char *err, size_t errlen)
{
	struct reg_endpoint *ep;
	unsigned i, j;

	if ((*eps = calloc(n ? n : 1, sizeof(**eps))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if ((ep = registry_plan_endpoint(r, fresh, nfresh, addrs[i],
		    addrs[i], err, errlen)) == NULL)
			return -1;
		for (j = 0; j < *neps && (*eps)[j] != ep; j++)
			continue;
		if (j == *neps)
			(*eps)[(*neps)++] = ep;
	}
	return 0;
}

enum reg_result
registry_set_addresses(struct registry *r, const char *name,
    char *const *addrs, unsigned n, char *err, size_t errlen)
{
	struct reg_endpoint **eps = NULL, **fresh = NULL, **neps;
	struct reg_deployment *d;
	enum reg_result rv = REG_EINVAL;
	unsigned i, m = 0, nfresh = 0;

	pthread_mutex_lock(&r->wlock);
	d = registry_index_find(&r->cidx, name);
	if (d == NULL || d->source != CONF_DNS) {
		snprintf(err, errlen, "no dns deployment named %s", name);
		rv = REG_ENOENT;
		goto out;
	}
	if (registry_same_addresses(d, addrs, n)) {
		rv = REG_UNCHANGED;
		goto out;
	}
	if (registry_dns_endpoints(r, addrs, n, &eps, &m, &fresh, &nfresh,
	    err, errlen) == -1)
		goto out;
	if ((neps = realloc(r->eps, (r->neps + nfresh + 1) *
	    sizeof(*neps))) == NULL) {
		snprintf(err, errlen, "out of memory");
		rv = REG_ENOMEM;
		goto out;
	}
	r->eps = neps;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < nfresh; i++)
		r->eps[r->neps++] = fresh[i];
	nfresh = 0;
	neps = d->eps;
	d->eps = eps;
	eps = neps;
	d->neps = m;
	d->version++;
	for (i = 0; i < m; i++)
		atomic_store(&d->eps[i]->max_ongoing, d->max_ongoing);
	pthread_mutex_unlock(&r->lock);
	rv = REG_OK;
out:
	pthread_mutex_unlock(&r->wlock);
	for (i = 0; i < nfresh; i++)
		registry_endpoint_free(fresh[i]);
	free(fresh);
	free(eps);
	if (rv == REG_OK)
		registry_tell(r, name, REG_CHANGED);
	return rv;
}

/* Lookups and figures -------------------------------------------------- */

int
registry_lookup(struct registry *r, const char *name, struct reg_lookup *out)
{
	struct reg_deployment *d;
	int rv = -1;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&r->lock);
	if ((d = registry_find_live(r, name)) != NULL) {
		out->eps = calloc(d->neps ? d->neps : 1, sizeof(*out->eps));
		if (out->eps != NULL) {
			memcpy(out->eps, d->eps, d->neps * sizeof(*out->eps));
			out->neps = d->neps;
			out->dep = d;
			out->version = d->version;
			out->queue_max = d->queue_max;
			out->queue_timeout = d->queue_timeout;
			out->request_timeout = d->request_timeout;
			out->prewarm = d->prewarm;
			atomic_fetch_add_explicit(&d->resolutions, 1,
			    memory_order_relaxed);
			rv = 0;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return rv;
}

void
registry_publish_hstate(struct reg_deployment *d, unsigned worker,
    enum reg_hstate st)
{
	atomic_store_explicit(&d->hstate[worker], st, memory_order_relaxed);
}

void
registry_publish_queued(struct reg_deployment *d, unsigned worker, unsigned n)
{
	atomic_store_explicit(&d->queued[worker], n, memory_order_relaxed);
}

void
registry_count_eviction(struct reg_deployment *d)
{
	atomic_fetch_add_explicit(&d->evictions, 1, memory_order_relaxed);
}

void
registry_publish_pid(struct reg_endpoint *ep, int pid)
{
	atomic_store(&ep->pid, pid);
}

void
registry_count_restart(struct reg_endpoint *ep)
{
	atomic_fetch_add(&ep->restarts, 1);
}

const char *
registry_estate_str(int st)
{
	if (st < 0 || st >= REG_E_NSTATES)
		return "?";
	return estate_names[st];
}

/* A connection is as good as its state's rank: ready beats warming beats
 * connecting beats down beats idle. */
int
registry_estate_rank(int st)
{
	static const int rank[REG_E_NSTATES] = {
		[REG_E_IDLE] = 0, [REG_E_DOWN] = 1, [REG_E_CONNECTING] = 2,
		[REG_E_WARMING] = 3, [REG_E_READY] = 4,
	};

	if (st < 0 || st >= REG_E_NSTATES)
		return 0;
	return rank[st];
}

unsigned
registry_ndeployments(struct registry *r)
{
	return r->ndeps;
}

struct reg_deployment *
registry_deployment(struct registry *r, unsigned i)
{
	return i < r->ndeps ? r->deps[i] : NULL;
}

const char *
reg_deployment_name(const struct reg_deployment *d)
{
	return d->name;
}

unsigned
reg_deployment_nendpoints(const struct reg_deployment *d)
{
	return d->neps;
}

struct reg_endpoint *
reg_deployment_endpoint(struct reg_deployment *d, unsigned i)
{
	return i < d->neps ? d->eps[i] : NULL;
}

unsigned
registry_in_flight(struct registry *r, const struct reg_endpoint *ep)
{
	unsigned w;
	int n = 0;

	for (w = 0; w < r->nworkers; w++)
		n += atomic_load_explicit(&ep->stats[w].in_flight,
		    memory_order_relaxed);
	return n > 0 ? (unsigned)n : 0;
}

/* An endpoint is as good as its best worker's connection. */
static void
registry_endpoint_figures(struct registry *r, struct reg_endpoint *ep,
    const char *id, int spawned, struct reg_replica_figures *f)
{
	int in_flight = 0, best = REG_E_IDLE, st;
	unsigned w;

	memset(f, 0, sizeof(*f));
	for (w = 0; w < r->nworkers; w++) {
		struct ep_stats *s = &ep->stats[w];

		f->pings += atomic_load_explicit(&s->pings,
		    memory_order_relaxed);
		f->pongs += atomic_load_explicit(&s->pongs,
		    memory_order_relaxed);
		f->missed_pongs += atomic_load_explicit(&s->missed_pongs,
		    memory_order_relaxed);
		f->requests += atomic_load_explicit(&s->requests,
		    memory_order_relaxed);
		in_flight += atomic_load_explicit(&s->in_flight,
		    memory_order_relaxed);
		st = atomic_load_explicit(&s->state, memory_order_relaxed);
		if (registry_estate_rank(st) > registry_estate_rank(best))
			best = st;
	}
	f->id = id;
	f->address = ep->addr.text;
	f->state = (enum reg_estate)best;
	f->in_flight = in_flight > 0 ? (unsigned)in_flight : 0;
	f->pid = atomic_load(&ep->pid);
	f->spawned = spawned;
	f->restarts = atomic_load(&ep->restarts);
}

/*
 * A deployment is as good as its best worker's handle: ready beats
 * warming beats resolving beats failed beats idle (the enum's order is
 * not that: failed comes last in it).
 */
static int
registry_hstate_rank(int st)
{
	static const int rank[REG_H_NSTATES] = {
		[REG_H_IDLE] = 0, [REG_H_FAILED] = 1, [REG_H_RESOLVING] = 2,
		[REG_H_WARMING] = 3, [REG_H_READY] = 4,
	};

	return rank[st];
}

const char *
registry_hstate_str(int st)
{
	if (st < 0 || st >= REG_H_NSTATES)
		return "?";
	return hstate_names[st];
}

/* How many workers hold a handle in each state, and the best of them. */
static void
registry_handle_figures(struct registry *r, struct reg_deployment *d,
    struct reg_figures *f)
{
	unsigned i;
	int st, best = REG_H_IDLE;

	for (i = 0; i < r->nworkers; i++) {
		f->queued += atomic_load_explicit(&d->queued[i],
		    memory_order_relaxed);
		st = atomic_load_explicit(&d->hstate[i], memory_order_relaxed);
		if (st < 0 || st >= REG_H_NSTATES)
			continue;
		f->handles[st]++;
		if (registry_hstate_rank(st) > registry_hstate_rank(best))
			best = st;
	}
	f->state = (enum reg_hstate)best;
}

/* Under the mutex: d's figures to fn.  -1 when out of memory. */
static int
registry_deployment_figures(struct registry *r, struct reg_deployment *d,
    reg_figures_fn fn, void *arg)
{
	struct reg_replica_figures *reps;
	struct reg_figures f;
	unsigned i;

	if ((reps = calloc(d->neps ? d->neps : 1, sizeof(*reps))) == NULL)
		return -1;
	memset(&f, 0, sizeof(f));
	f.name = d->name;
	f.source = d->registered ? "register" : source_names[d->source];
	if (!d->registered && d->source == CONF_DNS)
		f.dns = d->command;
	f.version = d->version;
	f.resolutions = atomic_load(&d->resolutions);
	f.evictions = atomic_load(&d->evictions);
	registry_handle_figures(r, d, &f);
	for (i = 0; i < d->neps; i++)
		registry_endpoint_figures(r, d->eps[i],
		    d->registered ? d->rids[i] : d->eps[i]->id,
		    d->source == CONF_SPAWN, &reps[i]);
	f.replicas = reps;
	f.nreplicas = d->neps;
	fn(arg, &f);
	free(reps);
	return 0;
}

int
registry_figures(struct registry *r, const char *name, reg_figures_fn fn,
    void *arg)
{
	struct reg_deployment *d;
	unsigned i;
	int n = 0;

	pthread_mutex_lock(&r->lock);
	if (name != NULL) {
		if ((d = registry_find_live(r, name)) != NULL)
			n = registry_deployment_figures(r, d, fn, arg) == 0 ?
			    1 : -1;
		pthread_mutex_unlock(&r->lock);
		return n;
	}
	for (i = 0; i < r->ndeps && n != -1; i++)
		n = registry_deployment_figures(r, r->deps[i], fn, arg) == 0 ?
		    n + 1 : -1;
	for (i = 0; i < r->nregd && n != -1; i++) {
		if (r->regd[i]->active)
			n = registry_deployment_figures(r, r->regd[i], fn,
			    arg) == 0 ? n + 1 : -1;
	}
	pthread_mutex_unlock(&r->lock);
	return n;
}
