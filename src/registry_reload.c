/*
 * registry_reload.c -- a conf reload of the registry, as plan and commit
 * (see registry_reload() in registry.h).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "conf.h"
#include "net.h"
#include "registry.h"
#include "registry_impl.h"
#include "tls.h"

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
	struct reg_share *shares;	/* ... and their shares, or NULL */
	unsigned	 neps;
};


/* Plan phase ---------------------------------------------------------- */

static char	*registry_argv_text(const struct conf_deployment *);

/* An inproc deployment's module, args (truncated to what fits: the conf
 * bounds them) and file identity. */
static void
registry_conf_inproc(const struct conf_deployment *cd, struct reg_epopts *o)
{
	struct reg_inproc *ip = &o->inproc;
	size_t off = 0, n;
	unsigned i;

	memcpy(o->protocol, "inproc", 7);
	snprintf(ip->module, sizeof(ip->module), "%s", cd->inproc.module);
	snprintf(ip->file, sizeof(ip->file), "%s", cd->inproc.file);
	for (i = 0; i < cd->inproc.nargs; i++) {
		n = strlen(cd->inproc.args[i]) + 1;
		if (off + n > sizeof(ip->args))
			break;
		memcpy(ip->args + off, cd->inproc.args[i], n);
		off += n;
		ip->nargs++;
	}
}

/* The deployment's "tls" as an endpoint's tls_id: FNV-1a (64 bits) over
 * its four settings, never 0 (0 is none). */
static uint64_t
registry_tls_id(const struct conf_upstream_tls *t)
{
	const char *f[4];
	uint64_t h = 14695981039346656037ull;
	const char *p;
	int i;

	if (t == NULL)
		return 0;
	f[0] = t->ca;
	f[1] = t->cert;
	f[2] = t->key;
	f[3] = t->server_name;
	for (i = 0; i < 4; i++) {
		for (p = f[i] != NULL ? f[i] : ""; *p != '\0'; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
		h = (h ^ (unsigned char)(f[i] != NULL ? 0xff : 0xfe)) *
		    1099511628211ull;	/* a field's end, NULL apart */
	}
	return h != 0 ? h : 1;
}

/* How the deployment's endpoints are spoken to, from its conf. */
static void
registry_conf_opts(const struct conf_deployment *cd, struct reg_epopts *o)
{
	memset(o, 0, sizeof(*o));
	if (cd->source == CONF_INPROC) {
		registry_conf_inproc(cd, o);
		return;
	}
	o->tls_id = registry_tls_id(cd->tls);
	if (cd->protocol == CONF_PROTO_H2C)
		memcpy(o->protocol, "h2c", 4);
	if (cd->protocol == CONF_PROTO_H2)
		memcpy(o->protocol, "h2", 3);
	if (cd->protocol != CONF_PROTO_HTTP)
		return;
	memcpy(o->protocol, "http", 5);
	if (cd->http.health_path != NULL)
		snprintf(o->http.health_path, sizeof(o->http.health_path), "%s",
		    cd->http.health_path);
	o->http.health_interval = cd->http.health_interval;
	o->http.health_timeout = cd->http.health_timeout;
	o->http.idle_timeout = cd->http.idle_timeout;
	o->http.max_5xx = cd->http.max_5xx;
	o->http.prewarm = cd->prewarm;
	o->http.retry_idempotent = cd->http.retry_idempotent;
}

/* The protocol and its settings as text: part of the "command", so that
 * changing them counts as new endpoints (new connections; for spawn, new
 * processes on new ports). */
static char *
registry_opts_text(const struct conf_deployment *cd)
{
	struct reg_epopts o;
	char *s;

	registry_conf_opts(cd, &o);
	if (o.protocol[0] == '\0' && o.tls_id == 0)
		return strdup("");
	if (cd->source == CONF_INPROC)
		return strdup("");	/* the argv text says it all */
	if (asprintf(&s, "\n#%s %s %g %g %g %u %d %d %llx", o.protocol,
	    o.http.health_path,
	    o.http.health_interval, o.http.health_timeout,
	    o.http.idle_timeout, o.http.max_5xx, o.http.prewarm,
	    o.http.retry_idempotent, (unsigned long long)o.tls_id) == -1)
		return NULL;
	return s;
}

/* The argv as one string (with the protocol's settings), to tell whether
 * a command changed. */
static char *
registry_command(const struct conf_deployment *cd)
{
	char *argv, *opts, *s = NULL;

	if ((argv = registry_argv_text(cd)) == NULL)
		return NULL;
	if ((opts = registry_opts_text(cd)) != NULL &&
	    asprintf(&s, "%s%s", argv, opts) == -1)
		s = NULL;
	free(argv);
	free(opts);
	return s;
}

/* Module, file identity and args, one a line. */
static char *
registry_inproc_text(const struct conf_deployment *cd)
{
	char *s, *t;
	unsigned i;

	if (asprintf(&s, "inproc\n%s\n%s", cd->inproc.module,
	    cd->inproc.file) == -1)
		return NULL;
	for (i = 0; i < cd->inproc.nargs; i++) {
		if (asprintf(&t, "%s\n%s", s, cd->inproc.args[i]) == -1) {
			free(s);
			return NULL;
		}
		free(s);
		s = t;
	}
	return s;
}

static char *
registry_argv_text(const struct conf_deployment *cd)
{
	size_t i, len = 1;
	char *s;

	if (cd->source == CONF_DNS || cd->source == CONF_DNS_SRV)
		return strdup(cd->dns);
	if (cd->source == CONF_INPROC)
		return registry_inproc_text(cd);
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
	if (cd->source == CONF_INPROC)
		return strcmp(d->command, command) == 0;
	if (cd->source == CONF_DNS || cd->source == CONF_DNS_SRV ||
	    strcmp(d->command, command) != 0)
		return strcmp(d->command, command) == 0;
	if (d->neps != cd->nendpoints)
		return 0;
	for (i = 0; i < d->neps; i++) {
		if (strcmp(d->eps[i]->addr.text, cd->endpoints[i]) != 0 ||
		    registry_share(d, i).weight != cd->shares[i].weight ||
		    registry_share(d, i).priority != cd->shares[i].priority)
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

/*
 * A spawned HTTP server listens on a loopback TCP port ingressd picks (a
 * free one, asked of the kernel) and passes it (PORT, "{port}" in the
 * command: supervise.c).  A replica the plan keeps (same generation)
 * keeps its port.
 */
static int
registry_http_port(const struct reg_plan *p, unsigned i, char *addr,
    size_t len, char *err, size_t errlen)
{
	int port;

	if (p->old != NULL && p->old->gen == p->gen && i < p->old->neps &&
	    strncmp(p->old->eps[i]->addr.text, "unix:", 5) != 0) {
		snprintf(addr, len, "%s", p->old->eps[i]->addr.text);
		return 0;
	}
	if ((port = net_free_port(err, errlen)) == -1)
		return -1;
	snprintf(addr, len, "127.0.0.1:%d", port);
	return 0;
}

/*
 * A TCP endpoint of a deployment with "tls" gets a client context (unix
 * sockets stay plain: conf refuses them for HTTP and HTTP/2).  The one it
 * had before stays allocated for a worker that may be connecting with it
 * now.
 */
static int
registry_plan_tls(struct reg_endpoint *ep, const struct conf_deployment *cd,
    char *err, size_t errlen)
{
	const struct conf_upstream_tls *t = cd->tls;
	struct tls_cli *cl;
	char msg[200];

	if (t == NULL || net_addr_is_unix(&ep->addr))
		return 0;
	if ((cl = tls_cli_new(t->ca, t->cert, t->key, t->server_name, msg,
	    sizeof(msg))) == NULL) {
		snprintf(err, errlen, "tls: %s", msg);
		return -1;
	}
	tls_cli_retire(cl, atomic_load(&ep->tls));
	atomic_store(&ep->tls, cl);
	return 0;
}

/* An endpoints deployment's shares, or NULL when all are the default. */
static int
registry_plan_shares(struct reg_plan *p)
{
	const struct conf_deployment *cd = p->cd;
	unsigned i;

	for (i = 0; i < cd->nendpoints; i++) {
		if (cd->shares[i].weight != REG_WEIGHT_DEFAULT ||
		    cd->shares[i].priority != REG_PRIORITY_DEFAULT)
			break;
	}
	if (i == cd->nendpoints)
		return 0;
	if ((p->shares = calloc(cd->nendpoints, sizeof(*p->shares))) == NULL)
		return -1;
	for (i = 0; i < cd->nendpoints; i++) {
		p->shares[i].weight = (uint16_t)cd->shares[i].weight;
		p->shares[i].priority = (uint16_t)cd->shares[i].priority;
	}
	return 0;
}

/* The endpoints a deployment will have: its addresses, or its sockets. */
static int
registry_plan_endpoints(struct registry *r, struct reg_plan *p,
    struct reg_endpoint ***fresh, unsigned *nfresh, char *err, size_t errlen)
{
	const struct conf_deployment *cd = p->cd;
	char addr[512], id[64], msg[256];
	struct reg_epopts opts;
	unsigned i, n;

	registry_conf_opts(cd, &opts);
	/* dns: none until src/dns.c has an answer. */
	n = cd->source == CONF_SPAWN ? cd->replicas :
	    cd->source == CONF_ENDPOINTS ? cd->nendpoints :
	    cd->source == CONF_INPROC ? 1 : 0;
	if ((p->eps = calloc(n ? n : 1, sizeof(*p->eps))) == NULL ||
	    (cd->source == CONF_ENDPOINTS && registry_plan_shares(p) == -1)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (cd->source == CONF_ENDPOINTS) {
			snprintf(addr, sizeof(addr), "%s", cd->endpoints[i]);
			snprintf(id, sizeof(id), "%s", cd->endpoints[i]);
		} else if (cd->source == CONF_INPROC) {
			snprintf(addr, sizeof(addr), "inproc:%s",
			    cd->inproc.module);
			if (p->gen <= 1)
				snprintf(id, sizeof(id), "%s-0", cd->name);
			else
				snprintf(id, sizeof(id), "%s-0.g%u", cd->name,
				    p->gen);
		} else if (cd->protocol != CONF_PROTO_WIRE) {
			if (registry_http_port(p, i, addr, sizeof(addr),
			    msg, sizeof(msg)) == -1) {
				snprintf(err, errlen, "deployments.%s: %s",
				    cd->name, msg);
				return -1;
			}
			if (p->gen == 1)
				snprintf(id, sizeof(id), "%s-%u", cd->name, i);
			else
				snprintf(id, sizeof(id), "%s-%u.g%u", cd->name,
				    i, p->gen);
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
		    &opts, msg, sizeof(msg));
		if (p->eps[i] == NULL ||
		    registry_plan_tls(p->eps[i], cd, msg, sizeof(msg)) == -1) {
			snprintf(err, errlen, "deployments.%s: %s", cd->name,
			    msg);
			return -1;
		}
		p->neps++;
	}
	return 0;
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
		p->gen = cd->source == CONF_SPAWN ||
		    cd->source == CONF_INPROC ?
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
		free(plan[i].shares);
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
	registry_conf_opts(cd, &d->opts);
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
	free(d->shares);
	d->eps = p->eps;
	d->shares = p->shares;
	d->neps = p->neps;
	p->eps = NULL;
	p->shares = NULL;
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
	free(d->shares);
	d->rids = NULL;
	d->eps = NULL;
	d->shares = NULL;
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
