/*
 * registry_names.c -- names the conf does not list: registration through
 * the admin API (any thread) and the address sets src/dns.c resolves for
 * dns deployments (main thread).  Like a reload, each change is allocated
 * under the writer lock and linked under the mutex readers take.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include "conf.h"
#include "net.h"
#include "registry.h"
#include "registry_impl.h"

/* A registration waits this long for a reload to finish, then EBUSY. */
#define REG_WLOCK_WAIT_MS	50
#define REG_ID_MAX		63	/* fits reg_endpoint.id */

/* Registration and DNS ------------------------------------------------- */

static int
registry_name_ok(const char *s, size_t max)
{
	size_t len = strlen(s);

	return len > 0 && len <= max && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789._-") == len;
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
	struct reg_share *shares;	/* (a registered name always has one) */
};

/*
 * The new replica arrays of d with replica i (of n) set to ep/id/share,
 * or appended when i == n.  Strings are shared with the old array except
 * a new id.
 */
static int
registry_regd_arrays(struct reg_regplan *rp, const char *id,
    struct reg_share share)
{
	struct reg_deployment *d = rp->d;
	unsigned i = rp->i, n = rp->n, m = i < n ? n : n + 1, j;

	rp->eps = calloc(m, sizeof(*rp->eps));
	rp->rids = calloc(m, sizeof(*rp->rids));
	rp->shares = calloc(m, sizeof(*rp->shares));
	if (rp->eps == NULL || rp->rids == NULL || rp->shares == NULL)
		goto fail;
	if (n > 0) {
		memcpy(rp->eps, d->eps, n * sizeof(*rp->eps));
		memcpy(rp->rids, d->rids, n * sizeof(*rp->rids));
	}
	for (j = 0; j < n; j++)
		rp->shares[j] = registry_share(d, j);
	rp->eps[i] = rp->ep;
	rp->shares[i] = share;
	if (i == n && (rp->rids[i] = strdup(id)) == NULL)
		goto fail;
	return 0;
fail:
	free(rp->eps);
	free(rp->rids);
	free(rp->shares);
	rp->eps = NULL;
	rp->rids = NULL;
	rp->shares = NULL;
	return -1;
}

static enum reg_result
registry_register_check(const char *name, const char *id,
    const char *address, char *err, size_t errlen)
{
	int name_ok = registry_name_ok(name, 255);
	char why[320];

	if (!name_ok || !registry_name_ok(id, REG_ID_MAX)) {
		snprintf(err, errlen, "bad %s (1..%d characters of A-Z a-z "
		    "0-9 . _ -)", name_ok ? "replica id" : "deployment name",
		    name_ok ? REG_ID_MAX : 255);
		return REG_EINVAL;
	}
	/* No name that needs a DNS lookup: the caller is a worker thread
	 * serving clients. */
	if (net_addr_literal(address, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "%s (must be IP:PORT, [IPv6]:PORT or "
		    "unix:PATH)", why);
		return REG_EINVAL;
	}
	return REG_OK;
}

enum reg_result
registry_register_ok(struct registry *r, const char *name, const char *id,
    const char *address, char *err, size_t errlen)
{
	enum reg_result rv;

	if ((rv = registry_register_check(name, id, address, err, errlen)) !=
	    REG_OK)
		return rv;
	pthread_mutex_lock(&r->lock);
	if (registry_index_find(&r->cidx, name) != NULL) {
		snprintf(err, errlen, "deployment %s is defined in the "
		    "configuration", name);
		rv = REG_ECONFLICT;
	}
	pthread_mutex_unlock(&r->lock);
	return rv;
}

/* A failed plan lets go of what it allocated. */
static void
registry_regplan_undo(struct reg_regplan *rp)
{
	if (rp->rids != NULL && rp->i == rp->n)
		free(rp->rids[rp->i]);
	free(rp->eps);
	free(rp->rids);
	free(rp->shares);
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
    const char *name, const char *id, const struct reg_replica *rep,
    const struct reg_epopts *opts, unsigned *version, char *err,
    size_t errlen)
{
	const char *address = rep->address;
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
	    strcmp(d->eps[rp->i]->protocol, opts->protocol) == 0 &&
	    atomic_load(&d->eps[rp->i]->max_ongoing) == rep->max_ongoing &&
	    registry_share_eq(registry_share(d, rp->i), rep->share)) {
		*version = d->version;
		return REG_UNCHANGED;
	}
	if ((rp->ep = registry_plan_endpoint(r, &rp->fresh, &rp->nfresh,
	    address, id, opts, err, errlen)) == NULL)
		return strcmp(err, "out of memory") == 0 ? REG_ENOMEM :
		    REG_EINVAL;
	if (registry_regd_arrays(rp, id, rep->share) == -1 ||
	    (d == NULL && ((rp->nd = registry_regd_new(r,
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
	struct reg_share *olds;
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
	olds = d->shares;
	d->shares = rp->shares;
	rp->shares = olds;
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
	struct reg_replica rep;

	memset(&rep, 0, sizeof(rep));
	rep.address = address;
	rep.max_ongoing = max_ongoing;
	rep.share.weight = REG_WEIGHT_DEFAULT;
	rep.share.priority = REG_PRIORITY_DEFAULT;
	return registry_register_replica(r, name, id, &rep, version, err,
	    errlen);
}

enum reg_result
registry_register_replica(struct registry *r, const char *name,
    const char *id, const struct reg_replica *rep, unsigned *version,
    char *err, size_t errlen)
{
	const char *protocol = rep->protocol != NULL ? rep->protocol : "wire";
	struct reg_epopts opts;
	struct reg_regplan rp;
	enum reg_result rv;
	int was_active;

	*version = 0;
	/* A registered HTTP replica gets the pool's defaults and no active
	 * check (the conf sets those for its own deployments). */
	memset(&opts, 0, sizeof(opts));
	if (strcmp(protocol, "http") == 0) {
		memcpy(opts.protocol, "http", 5);
		opts.http.health_interval = 5;
		opts.http.health_timeout = 1;
		opts.http.idle_timeout = 4;
	} else if (strcmp(protocol, "h2c") == 0)
		memcpy(opts.protocol, "h2c", 4);
	else if (strcmp(protocol, "wire") != 0) {
		snprintf(err, errlen, "protocol: must be \"wire\", \"http\" "
		    "or \"h2c\"");
		return REG_EINVAL;
	}
	if (rep->share.weight == 0) {
		snprintf(err, errlen, "weight: must be an integer in 1..65535");
		return REG_EINVAL;
	}
	if ((rv = registry_register_check(name, id, rep->address, err,
	    errlen)) != REG_OK)
		return rv;
	if (registry_wlock_timed(r) != 0) {
		snprintf(err, errlen, "the registry is busy (a reload): retry");
		return REG_EBUSY;
	}
	memset(&rp, 0, sizeof(rp));
	if ((rv = registry_register_plan(r, &rp, name, id, rep, &opts,
	    version, err, errlen)) != REG_OK) {
		registry_regplan_undo(&rp);
		pthread_mutex_unlock(&r->wlock);
		return rv;
	}
	pthread_mutex_lock(&r->lock);
	was_active = registry_register_commit(r, &rp, rep->max_ongoing,
	    version);
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_unlock(&r->wlock);
	free(rp.eps);		/* the old arrays and buckets */
	free(rp.shares);
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
	struct reg_share *shares = NULL, *oshares;
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
	    (rids = calloc(n - 1, sizeof(*rids))) == NULL ||
	    (shares = calloc(n - 1, sizeof(*shares))) == NULL)) {
		free(eps);
		free(rids);
		snprintf(err, errlen, "out of memory");
		pthread_mutex_unlock(&r->wlock);
		return REG_ENOMEM;
	}
	for (j = k = 0; j < n; j++) {
		if (j == i)
			continue;
		eps[k] = d->eps[j];
		shares[k] = registry_share(d, j);
		rids[k++] = d->rids[j];
	}
	gone = d->rids[i];

	pthread_mutex_lock(&r->lock);
	oeps = d->eps;
	orids = d->rids;
	oshares = d->shares;
	d->eps = eps;
	d->rids = rids;
	d->shares = shares;
	d->neps = n - 1;
	d->active = n > 1;
	d->version++;
	*version = d->version;
	pthread_mutex_unlock(&r->lock);

	pthread_mutex_unlock(&r->wlock);
	free(oeps);
	free(orids);
	free(oshares);
	free(gone);
	registry_tell(r, name, n > 1 ? REG_CHANGED : REG_REMOVED);
	return REG_OK;
}

/* addrs[i]'s share in the answer: every entry of that address merged. */
static struct reg_share
registry_answer_share(char *const *addrs, const struct reg_share *in,
    unsigned n, unsigned i)
{
	static const struct reg_share def = { REG_WEIGHT_DEFAULT,
	    REG_PRIORITY_DEFAULT };
	struct reg_share s;
	unsigned k;

	if (in == NULL)
		return def;
	s = in[i];
	for (k = i + 1; k < n; k++) {
		if (strcmp(addrs[k], addrs[i]) == 0)
			registry_share_merge(&s, &in[k]);
	}
	return s;
}

/* The same addresses with the same shares, in any order (a DNS answer's
 * order is not news).  Text compares only: nothing is planned for an
 * answer that changes nothing, the common case every interval. */
static int
registry_same_answer(const struct reg_deployment *d, char *const *addrs,
    const struct reg_share *in, unsigned n)
{
	unsigned i, j, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < i && strcmp(addrs[k], addrs[i]) != 0; k++)
			continue;
		if (k < i)
			continue;	/* merged into its first entry */
		for (j = 0; j < d->neps; j++) {
			if (strcmp(d->eps[j]->addr.text, addrs[i]) == 0)
				break;
		}
		if (j == d->neps || !registry_share_eq(registry_share(d, j),
		    registry_answer_share(addrs, in, n, i)))
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

/* The endpoints for a DNS answer with their shares, an address given
 * twice merged into one; -1 and err. */
static int
registry_dns_endpoints(struct registry *r, const struct reg_epopts *opts,
    char *const *addrs, const struct reg_share *in, unsigned n,
    struct reg_endpoint ***eps, struct reg_share **shares, unsigned *neps,
    struct reg_endpoint ***fresh, unsigned *nfresh, char *err,
    size_t errlen)
{
	static const struct reg_share def = { REG_WEIGHT_DEFAULT,
	    REG_PRIORITY_DEFAULT };
	struct reg_endpoint *ep;
	unsigned i, j;

	if ((*eps = calloc(n ? n : 1, sizeof(**eps))) == NULL ||
	    (*shares = calloc(n ? n : 1, sizeof(**shares))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if ((ep = registry_plan_endpoint(r, fresh, nfresh, addrs[i],
		    addrs[i], opts, err, errlen)) == NULL)
			return -1;
		for (j = 0; j < *neps && (*eps)[j] != ep; j++)
			continue;
		if (j < *neps) {
			registry_share_merge(&(*shares)[j], in ? &in[i] : &def);
			continue;
		}
		(*eps)[*neps] = ep;
		(*shares)[(*neps)++] = in != NULL ? in[i] : def;
	}
	return 0;
}

/* Every share the default: none kept (the deployment's shares NULL). */
static int
registry_shares_default(const struct reg_share *s, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		if (s[i].weight != REG_WEIGHT_DEFAULT ||
		    s[i].priority != REG_PRIORITY_DEFAULT)
			return 0;
	}
	return 1;
}

enum reg_result
registry_set_addresses(struct registry *r, const char *name,
    char *const *addrs, const struct reg_share *in, unsigned n, char *err,
    size_t errlen)
{
	struct reg_endpoint **eps = NULL, **fresh = NULL, **neps;
	struct reg_share *shares = NULL, *olds;
	struct reg_deployment *d;
	enum reg_result rv = REG_EINVAL;
	unsigned i, m = 0, nfresh = 0;

	pthread_mutex_lock(&r->wlock);
	d = registry_index_find(&r->cidx, name);
	if (d == NULL || (d->source != CONF_DNS &&
	    d->source != CONF_DNS_SRV)) {
		snprintf(err, errlen, "no dns deployment named %s", name);
		rv = REG_ENOENT;
		goto out;
	}
	if (registry_same_answer(d, addrs, in, n)) {
		rv = REG_UNCHANGED;
		goto out;
	}
	if (registry_dns_endpoints(r, &d->opts, addrs, in, n, &eps, &shares,
	    &m, &fresh, &nfresh, err, errlen) == -1)
		goto out;
	if (registry_shares_default(shares, m)) {
		free(shares);
		shares = NULL;
	}
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
	olds = d->shares;
	d->shares = shares;
	shares = olds;
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
	free(shares);
	if (rv == REG_OK)
		registry_tell(r, name, REG_CHANGED);
	return rv;
}
