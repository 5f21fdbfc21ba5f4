/*
 * reload.c -- SIGHUP: load, check and switch to a new conf.
 *
 * The new conf is checked whole before anything changes (see daemon.c's
 * opening comment); then one reload_job carries the new snapshot to every
 * worker.  Below daemon.c: it never calls up, it tells the daemon that it
 * is ready again through d->ready.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "accesslog.h"
#include "conf.h"
#include "ctl.h"
#include "daemon.h"
#include "dns.h"
#include "dnssrv.h"
#include "handle.h"
#include "log.h"
#include "metrics.h"
#include "registry.h"
#include "reload.h"
#include "tls.h"
#include "route.h"
#include "sdnotify.h"
#include "supervise.h"
#include "worker.h"

/* One reload on its way to the workers. */
struct reload_job {
	struct daemon	*d;
	struct worker_snap *snap;
	struct reg_change *changes;
	unsigned	 nchanges;
	unsigned	 gen;
	_Atomic unsigned pending;	/* workers yet to switch */
	struct event	*done;		/* main thread, when pending is 0 */
	struct reload_job *next;
};

/* Reload --------------------------------------------------------------- */

static int
reload_strv_eq(char **a, unsigned na, char **b, unsigned nb)
{
	unsigned i;

	if (na != nb)
		return 0;
	for (i = 0; i < na; i++) {
		if (strcmp(a[i], b[i]) != 0)
			return 0;
	}
	return 1;
}

static int
reload_str_eq(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

static void
reload_note(char *keys, size_t len, const char *key)
{
	size_t n = strlen(keys);

	snprintf(keys + n, len - n, "%s%s", n > 0 ? ", " : "", key);
}

/*
 * What a reload cannot change in a running process: say so, comparing
 * with what runs (the conf we started with, the workers we have), not
 * with the last conf loaded, which may have asked for a change already.
 * The keys named go into keys for the reload's status.
 */
static void
reload_restart_only(const struct daemon *d, const struct conf *new,
    char *keys, size_t len)
{
	const struct conf *run = worker_snap_conf(d->boot);

	keys[0] = '\0';
	if (!reload_strv_eq(run->listen, run->nlisten, new->listen,
	    new->nlisten)) {
		log_warnx("reload: listen changed: still listening on the old "
		    "addresses; restart ingressd to apply");
		reload_note(keys, len, "listen");
	}
	if (!reload_str_eq(run->admin, new->admin)) {
		log_warnx("reload: admin changed: restart ingressd to apply");
		reload_note(keys, len, "admin");
	}
	if (d->nworkers != new->workers) {
		log_warnx("reload: workers changed: still %u; restart "
		    "ingressd to apply", d->nworkers);
		reload_note(keys, len, "workers");
	}
	if (!reload_str_eq(run->runtime_dir, new->runtime_dir)) {
		log_warnx("reload: runtime_dir changed: restart ingressd to "
		    "apply");
		reload_note(keys, len, "runtime_dir");
	}
	if (!reload_strv_eq(run->nameservers, run->nnameservers,
	    new->nameservers, new->nnameservers)) {
		log_warnx("reload: resolver changed: restart ingressd to "
		    "apply");
		reload_note(keys, len, "resolver");
	}
}

/* On each worker's thread. */
static void
reload_apply_cb(struct worker *w, void *arg)
{
	struct reload_job *job = arg;
	const struct conf *c = worker_snap_conf(job->snap);
	unsigned i;

	worker_switch(w, job->snap);
	worker_apply_changes(w, job->changes, job->nchanges);
	for (i = 0; i < c->ndeployments; i++) {
		if (c->deployments[i].prewarm)
			handle_get(worker_ctx(w), c->deployments[i].name);
	}
	if (atomic_fetch_sub(&job->pending, 1) == 1)
		event_active(job->done, EV_READ, 0);
}

void
reload_job_free(struct reload_job *job)
{
	struct reload_job **pp;

	for (pp = &job->d->jobs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			break;
		}
	}
	if (job->done != NULL)
		event_free(job->done);
	registry_changes_free(job->changes, job->nchanges);
	worker_snap_unref(job->snap);
	free(job);
}

/* Every worker switched: retired replicas may drain now. */
static void
reload_done_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct reload_job *job = arg;
	struct daemon *d = job->d;

	supervise_drain(d->sv, job->gen, d->conf->timeouts.drain);
	log_info("reload %u: every worker switched", job->gen);
	reload_job_free(job);
	if (d->jobs == NULL && !d->stopping)
		d->ready(d);
}

/* Log files of the new conf, opened (not yet in use): -1 and err. */
static int
reload_logs(struct daemon *d, const struct conf *c, int *efd, int *afd,
    char *err, size_t errlen)
{
	*efd = *afd = -1;
	if (!reload_str_eq(c->error_log, d->conf->error_log) &&
	    (*efd = log_file_open(c->error_log, err, errlen)) == -1)
		return -1;
	if (c->access_log != NULL && strcmp(c->access_log, "stderr") != 0 &&
	    !reload_str_eq(c->access_log, d->conf->access_log) &&
	    (*afd = accesslog_open_file(c->access_log, err, errlen)) == -1) {
		if (*efd >= 0)
			close(*efd);
		return -1;
	}
	return 0;
}

static struct reload_job *
reload_job_new(struct daemon *d, struct worker_snap *snap,
    struct reg_change *changes, unsigned nchanges)
{
	struct reload_job *job;

	if ((job = calloc(1, sizeof(*job))) == NULL)
		return NULL;
	job->d = d;
	job->snap = snap;
	job->changes = changes;
	job->nchanges = nchanges;
	job->gen = ++d->gen;
	atomic_init(&job->pending, d->nworkers);
	if ((job->done = event_new(d->base, -1, 0, reload_done_cb,
	    job)) == NULL) {
		free(job);
		return NULL;
	}
	job->next = d->jobs;
	d->jobs = job;
	return job;
}

static void
reload_log_changes(unsigned gen, const struct reg_change *ch, unsigned n)
{
	static const char *what[] = { "added", "changed", "removed" };
	unsigned i;

	for (i = 0; i < n; i++)
		log_info("reload %u: deployment %s %s", gen, ch[i].name,
		    what[ch[i].kind]);
}

/* A plain listener cannot turn into a TLS one in a running process. */
static void
reload_tls_gained(const char *addr, const struct conf *c)
{
	unsigned j;

	for (j = 0; j < c->nlisten; j++) {
		if (strcmp(c->listen[j], addr) == 0 && c->listen_tls[j] != NULL)
			log_warnx("reload: listen %s: TLS added: restart "
			    "ingressd to apply", addr);
	}
}

/*
 * TLS listeners' certificates and settings, rebuilt from the new conf for
 * each running TLS listener whose address it still lists; srv[i] NULL: no
 * change for boot listen[i].  A bad certificate refuses the whole reload
 * (the running contexts stay), naming the file and OpenSSL's reason.
 */
static int
reload_tls_plan(struct daemon *d, const struct conf *c, struct tls_srv **srv,
    char *err, size_t errlen)
{
	const struct conf *boot = worker_snap_conf(d->boot);
	char msg[512];
	unsigned i, j;

	for (i = 0; i < d->ntls; i++) {
		if (d->tls[i] == NULL) {
			reload_tls_gained(boot->listen[i], c);
			continue;
		}
		for (j = 0; j < c->nlisten; j++)
			if (strcmp(c->listen[j], boot->listen[i]) == 0)
				break;
		if (j == c->nlisten || c->listen_tls[j] == NULL) {
			log_warnx("reload: listen %s: TLS settings removed: "
			    "restart ingressd to apply", boot->listen[i]);
			continue;
		}
		if ((srv[i] = tls_srv_new(c->listen_tls[j], msg,
		    sizeof(msg))) == NULL) {
			snprintf(err, errlen, "%s: listen[%u].tls: %s", c->path,
			    j, msg);
			tls_reload_refused();
			return -1;
		}
	}
	return 0;
}

/*
 * The admin listener's TLS, as for listen (srv[d->ntls]): rebuilt if the
 * new conf keeps the boot admin address with "tls"; a bad certificate
 * refuses the reload.  Gained or lost TLS needs a restart.
 */
static int
reload_tls_admin(struct daemon *d, const struct conf *c, struct tls_srv **srv,
    char *err, size_t errlen)
{
	const struct conf *boot = worker_snap_conf(d->boot);
	char msg[512];

	if (boot->admin == NULL || c->admin == NULL ||
	    strcmp(boot->admin, c->admin) != 0)
		return 0;		/* reload_restart_only says so */
	if ((d->admin_tls == NULL) != (c->admin_tls == NULL)) {
		log_warnx("reload: admin %s: TLS %s: restart ingressd to "
		    "apply", c->admin, d->admin_tls == NULL ? "added" :
		    "settings removed");
		return 0;
	}
	if (c->admin_tls == NULL)
		return 0;
	if ((srv[d->ntls] = tls_srv_new(c->admin_tls, msg,
	    sizeof(msg))) == NULL) {
		snprintf(err, errlen, "%s: admin.tls: %s", c->path, msg);
		tls_reload_refused();
		return -1;
	}
	return 0;
}

/* New connections get the new contexts; open ones keep theirs. */
static void
reload_tls_commit(struct daemon *d, struct tls_srv **srv)
{
	unsigned i;

	for (i = 0; i < d->ntls; i++) {
		if (srv[i] != NULL)
			tls_slot_set(d->tls[i], srv[i]);
		srv[i] = NULL;
	}
	if (srv[d->ntls] != NULL)
		tls_slot_set(d->admin_tls, srv[d->ntls]);
	srv[d->ntls] = NULL;
}

static void
reload_tls_free(struct daemon *d, struct tls_srv **srv)
{
	unsigned i;

	for (i = 0; srv != NULL && i <= d->ntls; i++)
		tls_srv_unref(srv[i]);
	free(srv);
}

/* Everything checked: switch the registry, replicas, logs and workers. */
static void
reload_commit(struct daemon *d, struct conf *conf,
    struct route_table *routes, struct reg_change *ch, unsigned nch,
    int efd, int afd)
{
	struct worker_snap *snap;
	struct reload_job *job;
	char err[512];
	unsigned i;

	if ((snap = worker_snap_new(conf, routes)) == NULL ||
	    (job = reload_job_new(d, snap, ch, nch)) == NULL)
		fatalx("reload: out of memory");	/* registry moved on */
	log_redirect(efd);
	accesslog_set(conf->access_log, afd, (int)conf->access_log_format);
	log_set_level(d->debug ? LOG_LEVEL_DEBUG :
	    log_level_parse(conf->log_level));
	if (supervise_apply(d->sv, conf, job->gen, err, sizeof(err)) == -1)
		log_warnx("reload %u: %s", job->gen, err);
	if (dns_apply(d->dns, conf, err, sizeof(err)) == -1)
		log_warnx("reload %u: %s", job->gen, err);
	if (dnssrv_apply(d->dnssrv, conf, err, sizeof(err)) == -1)
		log_warnx("reload %u: %s", job->gen, err);
	reload_log_changes(job->gen, ch, nch);
	/* Each worker takes its own reference when it switches; the job
	 * holds the one worker_snap_new gave us until they all have. */
	for (i = 0; i < d->nworkers; i++)
		worker_post(d->workers[i], reload_apply_cb, job);
	worker_snap_unref(d->snap);
	worker_snap_ref(snap);
	d->snap = snap;
	d->conf = conf;
	metrics_reloaded(1);
	log_info("reload %u: %s loaded: %u route(s), %u deployment(s)",
	    job->gen, conf->path, conf->nroutes, conf->ndeployments);
}

void
reload_run(struct daemon *d)
{
	struct route_table *routes = NULL;
	struct reg_change *ch = NULL;
	struct tls_srv **srv = NULL;
	struct conf *conf;
	char err[1024], msg[512], keys[128];
	unsigned nch = 0;
	int efd = -1, afd = -1;

	sdnotify_reloading();
	log_info("SIGHUP: reloading %s", d->path);
	if ((conf = conf_load(d->path, err, sizeof(err))) == NULL)
		goto fail;
	if ((srv = calloc(d->ntls + 1, sizeof(*srv))) == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	if (reload_tls_plan(d, conf, srv, err, sizeof(err)) == -1 ||
	    reload_tls_admin(d, conf, srv, err, sizeof(err)) == -1 ||
	    supervise_check(conf, err, sizeof(err)) == -1 ||
	    reload_logs(d, conf, &efd, &afd, err, sizeof(err)) == -1)
		goto fail;
	if ((routes = route_table_new(conf)) == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	if (registry_reload(d->reg, conf, &ch, &nch, msg, sizeof(msg)) == -1) {
		snprintf(err, sizeof(err), "%s: %s", conf->path, msg);
		goto fail;
	}
	reload_restart_only(d, conf, keys, sizeof(keys));
	reload_tls_commit(d, srv);
	reload_tls_free(d, srv);
	reload_commit(d, conf, routes, ch, nch, efd, afd);
	ctl_reload_status(d->runtime_dir, 1, "reload %u: %s loaded%s%s%s",
	    d->gen, d->path, keys[0] != '\0' ? "; restart ingressd to apply: " :
	    "", keys, keys[0] != '\0' ? " (unchanged)" : "");
	return;
fail:
	log_warnx("reload failed, keeping the running configuration: %s", err);
	ctl_reload_status(d->runtime_dir, 0, "reload refused, keeping the "
	    "running configuration: %s", err);
	if (efd >= 0)
		close(efd);
	if (afd >= 0)
		close(afd);
	route_table_free(routes);
	reload_tls_free(d, srv);
	conf_free(conf);
	metrics_reloaded(0);
	if (d->jobs == NULL)
		sdnotify_ready();
}
