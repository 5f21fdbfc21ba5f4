/*
 * main.c -- start-up, signals, reload, graceful stop.
 *
 * The main thread owns the conf, the registry and the supervisor, and sits
 * in its own event loop for signals, child exits and a few timers; the
 * workers own every client and replica connection.
 *
 * Reload (SIGHUP) is checked whole before anything changes: the new conf
 * is loaded and validated, spawn commands looked up, log files opened and
 * the registry's new state planned; any error is logged and the running
 * conf stays.  Then the registry switches under its mutex, new replicas
 * start, and each worker gets the new snapshot through its inbox and
 * switches between two events, refreshing the handles of changed
 * deployments and dropping those of removed ones.  When every worker has
 * switched, retired replicas drain and systemd hears READY=1 again.
 *
 * Stop (SIGTERM, SIGINT): the workers close their listeners and idle
 * connections and let busy ones finish, up to timeouts.drain; then the
 * workers stop and the replicas are stopped.  A second signal stops at
 * once.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "accesslog.h"
#include "conf.h"
#include "dns.h"
#include "front.h"
#include "handle.h"
#include "log.h"
#include "metrics.h"
#include "monotime.h"
#include "net.h"
#include "registry.h"
#include "route.h"
#include "sdnotify.h"
#include "supervise.h"
#include "worker.h"

#define INGRESSD_VERSION	"0.1.0"
#define DEFAULT_CONF		"/etc/ingressd/ingressd.json"
#define DRAIN_TICK_MS		50
#define STATUS_EVERY_SEC	5
#define NSIGNALS		5
#define MAX_INHERITED		64

struct reload_job;

struct daemon {
	const char	*path;
	int		 debug;
	struct worker_snap *snap;	/* the running conf */
	const struct conf *conf;	/* snap's */
	struct event_base *base;
	struct registry	*reg;
	struct supervise *sv;
	struct dns	*dns;		/* dns deployments' lookups */
	struct worker	*workers[CONF_MAX_WORKERS];
	unsigned	 nworkers;
	unsigned	 started;	/* worker threads running */
	char		 runtime_dir[256];
	int		 made_runtime_dir;
	unsigned	 gen;		/* reloads applied */
	struct reload_job *jobs;	/* reloads not yet seen by every worker */
	int		 stopping;
	double		 drain_deadline;
	struct event	*sigs[NSIGNALS];
	struct event	*drain_ev;
	struct event	*watchdog_ev;
	struct event	*status_ev;
	unsigned	 beats[CONF_MAX_WORKERS];
	int		 inherited[MAX_INHERITED];	/* socket activation */
	unsigned	 ninherited;
};

/* Names a registration or a DNS answer changed, on their way to every
 * worker; the last worker to apply them frees them. */
struct names_job {
	_Atomic unsigned pending;
	struct reg_change *changes;
	unsigned	 nchanges;
};

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

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: ingressd [-dhtV] [-c file]\n"
	    "  -c file  configuration file (default %s)\n"
	    "  -t       check the configuration and exit\n"
	    "  -d       debug logging\n"
	    "  -V       print the version and exit\n"
	    "  -h       this help\n"
	    "signals: HUP reload, USR1 reopen log files, TERM/INT graceful "
	    "stop\n", DEFAULT_CONF);
}

/* Start-up ------------------------------------------------------------- */

static int
daemon_runtime_dir(struct daemon *d, char *err, size_t errlen)
{
	const char *dir = d->conf->runtime_dir;

	if (dir == NULL)
		dir = getenv("RUNTIME_DIRECTORY");	/* systemd */
	if (dir != NULL) {
		snprintf(d->runtime_dir, sizeof(d->runtime_dir), "%s", dir);
		if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
			snprintf(err, errlen, "runtime_dir %s: %s", dir,
			    strerror(errno));
			return -1;
		}
		return 0;
	}
	snprintf(d->runtime_dir, sizeof(d->runtime_dir), "/tmp/ingressd.XXXXXX");
	if (mkdtemp(d->runtime_dir) == NULL) {
		snprintf(err, errlen, "mkdtemp %s: %s", d->runtime_dir,
		    strerror(errno));
		return -1;
	}
	d->made_runtime_dir = 1;
	return 0;
}

static int
daemon_same_addr(const struct sockaddr_storage *a, const struct net_addr *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)&b->ss;
	const struct sockaddr_in6 *a6 = (const void *)a,
	    *b6 = (const void *)&b->ss;
	const struct sockaddr_un *au = (const void *)a,
	    *bu = (const void *)&b->ss;

	if (a->ss_family != b->ss.ss_family)
		return 0;
	switch (a->ss_family) {
	case AF_INET:
		return a4->sin_port == b4->sin_port &&
		    a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	case AF_INET6:
		return a6->sin6_port == b6->sin6_port &&
		    memcmp(&a6->sin6_addr, &b6->sin6_addr,
		    sizeof(a6->sin6_addr)) == 0;
	case AF_UNIX:
		return strncmp(au->sun_path, bu->sun_path,
		    sizeof(au->sun_path)) == 0;
	}
	return 0;
}

/* A socket systemd passed us for this address (taken), or -1. */
static int
daemon_inherited(struct daemon *d, const struct net_addr *addr)
{
	struct sockaddr_storage ss;
	socklen_t len;
	unsigned i;
	int fd;

	for (i = 0; i < d->ninherited; i++) {
		if ((fd = d->inherited[i]) == -1)
			continue;
		len = sizeof(ss);
		memset(&ss, 0, sizeof(ss));
		if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
		    daemon_same_addr(&ss, addr)) {
			d->inherited[i] = -1;
			return fd;
		}
	}
	return -1;
}

/* Passed sockets no listen address wanted. */
static void
daemon_close_inherited(struct daemon *d)
{
	unsigned i;

	for (i = 0; i < d->ninherited; i++) {
		if (d->inherited[i] == -1)
			continue;
		log_warnx("socket activation: descriptor %d matches no listen "
		    "address in the conf: closed", d->inherited[i]);
		close(d->inherited[i]);
		d->inherited[i] = -1;
	}
}

/*
 * Bind one socket per worker per TCP address (SO_REUSEPORT lets the kernel
 * spread connections); a unix socket can be bound once, and so can a
 * socket systemd passed us, so the workers share those through dup()ed
 * descriptors.
 */
static int
daemon_listen(struct daemon *d, const char *key, const char *text, int admin,
    char *err, size_t errlen)
{
	struct net_addr addr;
	unsigned i, n = admin ? 1 : d->nworkers;
	int fd = -1, shared, passed;
	char msg[512] = "";

	if (net_addr_parse(text, &addr, msg, sizeof(msg)) == -1)
		goto fail;
	passed = daemon_inherited(d, &addr);
	shared = passed != -1 || net_addr_is_unix(&addr);
	for (i = 0; i < n; i++) {
		if (i == 0 && passed != -1)
			fd = passed;
		else if (shared && i > 0)
			fd = dup(fd);
		else
			fd = net_listen(&addr, n > 1, msg, sizeof(msg));
		if (fd == -1) {
			if (msg[0] == '\0')
				snprintf(msg, sizeof(msg), "%s: %s", text,
				    strerror(errno));
			goto fail;
		}
		if (worker_add_listener(d->workers[i], fd, admin ?
		    front_accept_admin : front_accept_client, NULL) == -1) {
			close(fd);
			snprintf(msg, sizeof(msg), "%s: too many listeners",
			    text);
			goto fail;
		}
	}
	log_info("listening on %s%s%s", text, admin ? " (admin)" : "",
	    passed != -1 ? " (socket from systemd)" : "");
	return 0;
fail:
	snprintf(err, errlen, "cannot listen: %s: %s", key, msg);
	return -1;
}

/* Error log: stderr, or a file put in its place (children inherit it). */
static int
daemon_error_log_fd(const char *path, char *err, size_t errlen)
{
	if (path == NULL || strcmp(path, "stderr") == 0)
		return -2;
	return accesslog_open_file(path, err, errlen);
}

static void
daemon_error_log_set(int fd)
{
	if (fd == -1)
		return;
	dup2(fd == -2 ? accesslog_stderr() : fd, STDERR_FILENO);
	if (fd >= 0)
		close(fd);
}

static int
daemon_logs(struct daemon *d, char *err, size_t errlen)
{
	const struct conf *c = d->conf;
	int efd, afd = -1;

	if ((efd = daemon_error_log_fd(c->error_log, err, errlen)) == -1)
		return -1;
	if (c->access_log != NULL && strcmp(c->access_log, "stderr") != 0 &&
	    (afd = accesslog_open_file(c->access_log, err, errlen)) == -1) {
		if (efd >= 0)
			close(efd);
		return -1;
	}
	if (efd >= 0)
		daemon_error_log_set(efd);
	accesslog_set(c->access_log, afd, (int)c->access_log_format);
	return 0;
}

static void
daemon_prewarm_cb(struct worker *w, void *arg)
{
	handle_get(worker_ctx(w), arg);
}

/* On each worker's thread. */
static void
daemon_names_cb(struct worker *w, void *arg)
{
	struct names_job *job = arg;

	worker_apply_changes(w, job->changes, job->nchanges);
	if (atomic_fetch_sub(&job->pending, 1) == 1) {
		registry_changes_free(job->changes, job->nchanges);
		free(job);
	}
}

/*
 * The registry's notify hook, on the thread that changed it (the admin
 * API's worker, or this one for DNS): each worker hears of each change
 * once, exactly as of a reload's per-name changes.
 */
static void
daemon_names_changed(void *arg, const struct reg_change *ch, unsigned n)
{
	struct daemon *d = arg;
	struct names_job *job;
	unsigned i;

	if ((job = calloc(1, sizeof(*job))) == NULL ||
	    (job->changes = calloc(n, sizeof(*ch))) == NULL) {
		free(job);
		log_warnx("out of memory: registry change not pushed");
		return;
	}
	for (i = 0; i < n; i++) {
		job->changes[i].kind = ch[i].kind;
		if ((job->changes[i].name = strdup(ch[i].name)) == NULL) {
			registry_changes_free(job->changes, i);
			free(job);
			log_warnx("out of memory: registry change not pushed");
			return;
		}
	}
	job->nchanges = n;
	atomic_init(&job->pending, d->nworkers);
	for (i = 0; i < d->nworkers; i++)
		worker_post(d->workers[i], daemon_names_cb, job);
}

/* The front edge, as the workers call it. */
static const struct worker_hooks daemon_worker_hooks = {
	.drain_all = front_drain_all,
	.free_all = front_free_all,
};

/* Workers made and their sockets bound; no thread runs yet. */
static int
daemon_bind(struct daemon *d, char *err, size_t errlen)
{
	const struct conf *c = d->conf;
	unsigned i;
	char key[32];

	for (i = 0; i < d->nworkers; i++) {
		if ((d->workers[i] = worker_new(i, d->snap, d->reg,
		    &daemon_worker_hooks)) == NULL) {
			snprintf(err, errlen, "worker %u: out of memory", i);
			return -1;
		}
	}
	for (i = 0; i < c->nlisten; i++) {
		snprintf(key, sizeof(key), "listen[%u]", i);
		if (daemon_listen(d, key, c->listen[i], 0, err, errlen) == -1)
			return -1;
	}
	if (c->admin != NULL &&
	    daemon_listen(d, "admin", c->admin, 1, err, errlen) == -1)
		return -1;
	daemon_close_inherited(d);
	return 0;
}

static int
daemon_start_workers(struct daemon *d, char *err, size_t errlen)
{
	const struct conf *c = d->conf;
	unsigned i, j;

	for (i = 0; i < c->ndeployments; i++) {
		if (!c->deployments[i].prewarm)
			continue;
		for (j = 0; j < d->nworkers; j++)
			worker_post(d->workers[j], daemon_prewarm_cb,
			    c->deployments[i].name);
	}
	for (i = 0; i < d->nworkers; i++) {
		if (worker_start(d->workers[i]) == -1) {
			snprintf(err, errlen, "worker %u: cannot start thread", i);
			return -1;
		}
		d->started++;
	}
	return 0;
}

/*
 * Order: everything that can fail on the conf or the host first (log
 * files, commands, sockets), then the replicas, so they are starting
 * while the workers come up, then the worker threads.
 */
static int
daemon_start(struct daemon *d, char *err, size_t errlen)
{
	struct route_table *routes;
	char msg[512];

	d->nworkers = d->conf->workers;
	if (metrics_init(d->nworkers, INGRESSD_VERSION) == -1 ||
	    accesslog_init(d->nworkers) == -1) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (daemon_logs(d, err, errlen) == -1 ||
	    supervise_check(d->conf, err, errlen) == -1 ||
	    daemon_runtime_dir(d, err, errlen) == -1)
		return -1;
	if ((d->reg = registry_new(d->conf, d->nworkers, d->runtime_dir, msg,
	    sizeof(msg))) == NULL) {
		snprintf(err, errlen, "%s: %s", d->conf->path, msg);
		return -1;
	}
	if ((routes = route_table_new(d->conf)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* From here the snapshot owns the conf. */
	if ((d->snap = worker_snap_new((struct conf *)d->conf, routes)) ==
	    NULL) {
		route_table_free(routes);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (daemon_bind(d, err, errlen) == -1)
		return -1;
	registry_set_notify(d->reg, daemon_names_changed, d);
	if ((d->dns = dns_new(d->base, d->reg)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (dns_apply(d->dns, d->conf, err, errlen) == -1)
		return -1;
	if ((d->sv = supervise_new(d->base, d->reg)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (supervise_apply(d->sv, d->conf, 0, err, errlen) == -1)
		return -1;
	return daemon_start_workers(d, err, errlen);
}

/* Status and watchdog -------------------------------------------------- */

static void
daemon_status(struct daemon *d)
{
	if (d->stopping)
		return;
	sdnotify_status("serving: %u connection(s), %u deployment(s), "
	    "%u replica process(es), %u worker(s), %u reload(s)",
	    worker_conns(), registry_ndeployments(d->reg),
	    supervise_running(d->sv), d->nworkers, d->gen);
}

static void
daemon_status_cb(evutil_socket_t fd, short ev, void *arg)
{
	daemon_status(arg);
}

/*
 * The watchdog is fed only while every worker's loop turns: each tick
 * checks that the beat posted to every worker on the previous tick was
 * run, then posts the next.  A stuck worker starves systemd of WATCHDOG=1
 * and it restarts us.
 */
static void
daemon_watchdog_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct daemon *d = arg;
	unsigned i, b;
	int ok = 1;

	for (i = 0; i < d->started; i++) {
		b = worker_beats(d->workers[i]);
		if (b == d->beats[i]) {
			log_warnx("worker %u is not responding: no watchdog "
			    "ping", i);
			ok = 0;
		}
		d->beats[i] = b;
	}
	if (ok)
		sdnotify_watchdog();
	for (i = 0; i < d->started; i++)
		worker_beat(d->workers[i]);
}

static void
daemon_timers(struct daemon *d)
{
	struct timeval status = { STATUS_EVERY_SEC, 0 }, wd;
	uint64_t usec = sdnotify_watchdog_usec();
	unsigned i;

	d->status_ev = event_new(d->base, -1, EV_PERSIST, daemon_status_cb, d);
	if (d->status_ev != NULL)
		evtimer_add(d->status_ev, &status);
	if (usec == 0)
		return;
	/* Ping at half the interval, as sd_watchdog_enabled(3) advises. */
	usec /= 2;
	wd.tv_sec = (time_t)(usec / 1000000);
	wd.tv_usec = (suseconds_t)(usec % 1000000);
	for (i = 0; i < d->started; i++) {
		d->beats[i] = worker_beats(d->workers[i]);
		worker_beat(d->workers[i]);
	}
	sdnotify_watchdog();
	d->watchdog_ev = event_new(d->base, -1, EV_PERSIST, daemon_watchdog_cb,
	    d);
	if (d->watchdog_ev != NULL)
		evtimer_add(d->watchdog_ev, &wd);
}

/* Reload --------------------------------------------------------------- */

static int
daemon_strv_eq(char **a, unsigned na, char **b, unsigned nb)
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
daemon_str_eq(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* What a reload cannot change in a running process: say so. */
static void
daemon_restart_only(const struct conf *old, const struct conf *new)
{
	if (!daemon_strv_eq(old->listen, old->nlisten, new->listen,
	    new->nlisten))
		log_warnx("reload: listen changed: still listening on the old "
		    "addresses; restart ingressd to apply");
	if (!daemon_str_eq(old->admin, new->admin))
		log_warnx("reload: admin changed: restart ingressd to apply");
	if (old->workers != new->workers)
		log_warnx("reload: workers changed: still %u; restart "
		    "ingressd to apply", old->workers);
	if (!daemon_str_eq(old->runtime_dir, new->runtime_dir))
		log_warnx("reload: runtime_dir changed: restart ingressd to "
		    "apply");
	if (!daemon_strv_eq(old->nameservers, old->nnameservers,
	    new->nameservers, new->nnameservers))
		log_warnx("reload: resolver changed: restart ingressd to "
		    "apply");
}

/* On each worker's thread. */
static void
daemon_apply_cb(struct worker *w, void *arg)
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

static void
daemon_job_free(struct reload_job *job)
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
daemon_reload_done_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct reload_job *job = arg;
	struct daemon *d = job->d;

	supervise_drain(d->sv, job->gen, d->conf->timeouts.drain);
	log_info("reload %u: every worker switched", job->gen);
	daemon_job_free(job);
	if (d->jobs == NULL && !d->stopping) {
		sdnotify_ready();
		daemon_status(d);
	}
}

/* Log files of the new conf, opened (not yet in use): -1 and err. */
static int
daemon_reload_logs(struct daemon *d, const struct conf *c, int *efd, int *afd,
    char *err, size_t errlen)
{
	*efd = *afd = -1;
	if (!daemon_str_eq(c->error_log, d->conf->error_log) &&
	    (*efd = daemon_error_log_fd(c->error_log, err, errlen)) == -1)
		return -1;
	if (c->access_log != NULL && strcmp(c->access_log, "stderr") != 0 &&
	    !daemon_str_eq(c->access_log, d->conf->access_log) &&
	    (*afd = accesslog_open_file(c->access_log, err, errlen)) == -1) {
		if (*efd >= 0)
			close(*efd);
		return -1;
	}
	return 0;
}

static struct reload_job *
daemon_job_new(struct daemon *d, struct worker_snap *snap,
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
	if ((job->done = event_new(d->base, -1, 0, daemon_reload_done_cb,
	    job)) == NULL) {
		free(job);
		return NULL;
	}
	job->next = d->jobs;
	d->jobs = job;
	return job;
}

static void
daemon_log_changes(unsigned gen, const struct reg_change *ch, unsigned n)
{
	static const char *what[] = { "added", "changed", "removed" };
	unsigned i;

	for (i = 0; i < n; i++)
		log_info("reload %u: deployment %s %s", gen, ch[i].name,
		    what[ch[i].kind]);
}

/* Everything checked: switch the registry, replicas, logs and workers. */
static void
daemon_reload_commit(struct daemon *d, struct conf *conf,
    struct route_table *routes, struct reg_change *ch, unsigned nch,
    int efd, int afd)
{
	struct worker_snap *snap;
	struct reload_job *job;
	char err[512];
	unsigned i;

	if ((snap = worker_snap_new(conf, routes)) == NULL ||
	    (job = daemon_job_new(d, snap, ch, nch)) == NULL)
		fatalx("reload: out of memory");	/* registry moved on */
	daemon_error_log_set(efd);
	accesslog_set(conf->access_log, afd, (int)conf->access_log_format);
	log_set_level(d->debug ? LOG_LEVEL_DEBUG :
	    log_level_parse(conf->log_level));
	if (supervise_apply(d->sv, conf, job->gen, err, sizeof(err)) == -1)
		log_warnx("reload %u: %s", job->gen, err);
	if (dns_apply(d->dns, conf, err, sizeof(err)) == -1)
		log_warnx("reload %u: %s", job->gen, err);
	daemon_log_changes(job->gen, ch, nch);
	/* Each worker takes its own reference when it switches; the job
	 * holds the one worker_snap_new gave us until they all have. */
	for (i = 0; i < d->nworkers; i++)
		worker_post(d->workers[i], daemon_apply_cb, job);
	worker_snap_unref(d->snap);
	worker_snap_ref(snap);
	d->snap = snap;
	d->conf = conf;
	metrics_reloaded(1);
	log_info("reload %u: %s loaded: %u route(s), %u deployment(s)",
	    job->gen, conf->path, conf->nroutes, conf->ndeployments);
}

static void
daemon_reload(struct daemon *d)
{
	struct route_table *routes = NULL;
	struct reg_change *ch = NULL;
	struct conf *conf;
	char err[1024], msg[512];
	unsigned nch = 0;
	int efd = -1, afd = -1;

	sdnotify_reloading();
	log_info("SIGHUP: reloading %s", d->path);
	if ((conf = conf_load(d->path, err, sizeof(err))) == NULL)
		goto fail;
	if (supervise_check(conf, err, sizeof(err)) == -1 ||
	    daemon_reload_logs(d, conf, &efd, &afd, err, sizeof(err)) == -1)
		goto fail;
	if ((routes = route_table_new(conf)) == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	if (registry_reload(d->reg, conf, &ch, &nch, msg, sizeof(msg)) == -1) {
		snprintf(err, sizeof(err), "%s: %s", conf->path, msg);
		goto fail;
	}
	daemon_restart_only(d->conf, conf);
	daemon_reload_commit(d, conf, routes, ch, nch, efd, afd);
	return;
fail:
	log_warnx("reload failed, keeping the running configuration: %s", err);
	if (efd >= 0)
		close(efd);
	if (afd >= 0)
		close(afd);
	route_table_free(routes);
	conf_free(conf);
	metrics_reloaded(0);
	if (d->jobs == NULL)
		sdnotify_ready();
}

/* SIGUSR1: logrotate moved the files away; open them again. */
static void
daemon_reopen_logs(struct daemon *d)
{
	char err[512];
	int fd;

	if (d->conf->error_log != NULL &&
	    strcmp(d->conf->error_log, "stderr") != 0) {
		if ((fd = accesslog_open_file(d->conf->error_log, err,
		    sizeof(err))) == -1)
			log_warnx("SIGUSR1: error_log: %s", err);
		else
			daemon_error_log_set(fd);
	}
	if (accesslog_reopen(err, sizeof(err)) == -1)
		log_warnx("SIGUSR1: access_log: %s", err);
	log_info("SIGUSR1: log files reopened");
}

/* Stop ----------------------------------------------------------------- */

static void
daemon_drain_cb(struct worker *w, void *arg)
{
	worker_drain(w);
}

static void
daemon_drain_tick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct daemon *d = arg;
	unsigned i, busy = 0;
	int b, unknown = 0;

	for (i = 0; i < d->started; i++) {
		if ((b = worker_busy(d->workers[i])) < 0)
			unknown = 1;
		else
			busy += (unsigned)b;
	}
	if (!unknown && busy == 0) {
		log_info("drained: no request in flight");
		event_base_loopexit(d->base, NULL);
	} else if (monotime_now() >= d->drain_deadline) {
		log_warnx("drain timeout (%.1fs): closing %u busy "
		    "connection(s)", d->conf->timeouts.drain, busy);
		event_base_loopexit(d->base, NULL);
	} else
		sdnotify_status("stopping: %u connection(s) busy", busy);
}

static void
daemon_stop_begin(struct daemon *d, int sig)
{
	struct timeval tick = { 0, DRAIN_TICK_MS * 1000 };
	unsigned i;

	if (d->stopping) {
		log_warnx("signal %d again: stopping now", sig);
		event_base_loopexit(d->base, NULL);
		return;
	}
	d->stopping = 1;
	sdnotify_stopping();
	log_info("signal %d: stopping: no new connections, in-flight "
	    "requests have %.1fs", sig, d->conf->timeouts.drain);
	for (i = 0; i < d->started; i++)
		worker_post(d->workers[i], daemon_drain_cb, NULL);
	d->drain_deadline = monotime_now() + d->conf->timeouts.drain;
	d->drain_ev = event_new(d->base, -1, EV_PERSIST, daemon_drain_tick_cb,
	    d);
	if (d->drain_ev == NULL)
		event_base_loopexit(d->base, NULL);
	else
		evtimer_add(d->drain_ev, &tick);
}

static void
daemon_signal_cb(evutil_socket_t sig, short ev, void *arg)
{
	struct daemon *d = arg;

	switch (sig) {
	case SIGHUP:
		if (d->stopping)
			log_warnx("SIGHUP while stopping: ignored");
		else
			daemon_reload(d);
		break;
	case SIGUSR1:
		daemon_reopen_logs(d);
		break;
	default:
		daemon_stop_begin(d, (int)sig);
		break;
	}
}

static void
daemon_stop(struct daemon *d)
{
	unsigned i;

	for (i = 0; i < d->started; i++)
		worker_stop(d->workers[i]);
	for (i = 0; i < d->started; i++)
		worker_join(d->workers[i]);
	if (d->sv != NULL)
		supervise_stop(d->sv, 2.0);
	dns_free(d->dns);
	for (i = 0; i < d->nworkers; i++)
		worker_free(d->workers[i]);
	while (d->jobs != NULL)
		daemon_job_free(d->jobs);
	supervise_free(d->sv);
	registry_free(d->reg);
	if (d->made_runtime_dir)
		rmdir(d->runtime_dir);
	if (d->drain_ev != NULL)
		event_free(d->drain_ev);
	if (d->watchdog_ev != NULL)
		event_free(d->watchdog_ev);
	if (d->status_ev != NULL)
		event_free(d->status_ev);
}

static int
daemon_signals(struct daemon *d)
{
	static const int sigs[NSIGNALS] = {
		SIGTERM, SIGINT, SIGHUP, SIGUSR1, 0,
	};
	unsigned i;

	for (i = 0; i < NSIGNALS && sigs[i] != 0; i++) {
		d->sigs[i] = evsignal_new(d->base, sigs[i], daemon_signal_cb, d);
		if (d->sigs[i] == NULL || evsignal_add(d->sigs[i], NULL) == -1)
			return -1;
	}
	return 0;
}

/* -t: everything that can be checked without starting anything. */
static int
daemon_check(const char *path)
{
	struct conf *conf;
	char err[1024];

	if ((conf = conf_load(path, err, sizeof(err))) == NULL ||
	    supervise_check(conf, err, sizeof(err)) == -1) {
		fprintf(stderr, "ingressd: %s\n", err);
		conf_free(conf);
		return 1;
	}
	fprintf(stderr, "ingressd: configuration %s is ok\n", path);
	conf_free(conf);
	return 0;
}

static int
daemon_run(struct daemon *d)
{
	char err[1024] = "";
	int rv = 0;

	if (daemon_start(d, err, sizeof(err)) == -1) {
		log_warnx("cannot start: %s", err);
		return 1;
	}
	log_info("ingressd %s started: %u worker(s), %u deployment(s), "
	    "runtime dir %s", INGRESSD_VERSION, d->nworkers,
	    d->conf->ndeployments, d->runtime_dir);
	daemon_timers(d);
	sdnotify_ready();
	daemon_status(d);
	if (event_base_dispatch(d->base) == -1)
		rv = 1;
	if (!d->stopping)
		sdnotify_stopping();
	return rv;
}

/* The conf, the log, systemd's variables, the main loop and signals. */
static int
daemon_init(struct daemon *d)
{
	char err[1024];
	unsigned i;
	int level;

	if ((d->conf = conf_load(d->path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "ingressd: %s\n", err);
		return -1;
	}
	level = d->debug ? LOG_LEVEL_DEBUG : log_level_parse(d->conf->log_level);
	log_init(level < 0 ? LOG_LEVEL_INFO : level);
	/* Before any replica is spawned: they must not see NOTIFY_SOCKET. */
	sdnotify_init();
	for (i = 0; i < sdnotify_listen_fds() && i < MAX_INHERITED; i++)
		d->inherited[d->ninherited++] = 3 + (int)i;
	signal(SIGPIPE, SIG_IGN);
	evthread_use_pthreads();
	if ((d->base = event_base_new()) == NULL || daemon_signals(d) == -1)
		fatalx("cannot create the event loop");
	return 0;
}

static void
daemon_free(struct daemon *d)
{
	unsigned i;

	for (i = 0; i < NSIGNALS; i++) {
		if (d->sigs[i] != NULL)
			event_free(d->sigs[i]);
	}
	event_base_free(d->base);
	if (d->snap != NULL)
		worker_snap_unref(d->snap);
	else
		conf_free((struct conf *)d->conf);
	metrics_free();
	accesslog_free();
	sdnotify_free();
	log_info("stopped");
}

int
main(int argc, char **argv)
{
	struct daemon d;
	int ch, check = 0, rv;

	memset(&d, 0, sizeof(d));
	d.path = DEFAULT_CONF;
	while ((ch = getopt(argc, argv, "c:dhtV")) != -1) {
		switch (ch) {
		case 'c':
			d.path = optarg;
			break;
		case 'd':
			d.debug = 1;
			break;
		case 't':
			check = 1;
			break;
		case 'V':
			printf("ingressd %s (wire protocol 1)\n", INGRESSD_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 1;
	}
	if (check)
		return daemon_check(d.path);
	if (daemon_init(&d) == -1)
		return 1;
	rv = daemon_run(&d);
	daemon_stop(&d);
	daemon_free(&d);
	return rv;
}
