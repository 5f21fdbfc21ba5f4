/*
 * daemon.c -- start-up, status, signals, graceful stop.
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
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "accesslog.h"
#include "conf.h"
#include "ctl.h"
#include "daemon.h"
#include "dns.h"
#include "dnssrv.h"
#include "etcd.h"
#include "front.h"
#include "h2up.h"
#include "hup.h"
#include "inproc.h"
#include "handle.h"
#include "log.h"
#include "metrics.h"
#include "monotime.h"
#include "net.h"
#include "preflight.h"
#include "registry.h"
#include "reload.h"
#include "tls.h"
#include "route.h"
#include "sdnotify.h"
#include "supervise.h"
#include "upstream.h"
#include "worker.h"

#define DRAIN_TICK_MS		50
#define STATUS_EVERY_SEC	5
#define STALL_EVERY_MS		250

/* Names a registration or a DNS answer changed, on their way to every
 * worker; the last worker to apply them frees them. */
struct names_job {
	_Atomic unsigned pending;
	struct reg_change *changes;
	unsigned	 nchanges;
};

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

/*
 * Bind one socket per worker per TCP address (SO_REUSEPORT lets the kernel
 * spread connections); a unix socket can be bound once, and so can a
 * socket systemd passed us, so the workers share those through dup()ed
 * descriptors.
 */
static int
daemon_listen(struct daemon *d, const char *key, const char *text, int admin,
    struct tls_slot *tls, char *err, size_t errlen)
{
	struct net_addr addr;
	unsigned i, n = admin ? 1 : d->nworkers;
	int fd = -1, shared, passed;
	char msg[512] = "";

	if (net_addr_parse(text, &addr, msg, sizeof(msg)) == -1)
		goto fail;
	passed = sdnotify_listen_take(&addr.ss);
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
		    front_accept_admin : front_accept_client, tls) == -1) {
			close(fd);
			snprintf(msg, sizeof(msg), "%s: too many listeners",
			    text);
			goto fail;
		}
	}
	log_info("listening on %s%s%s%s", text, admin ? " (admin)" : "",
	    tls != NULL ? " (TLS)" : "",
	    passed != -1 ? " (socket from systemd)" : "");
	return 0;
fail:
	snprintf(err, errlen, "cannot listen: %s: %s", key, msg);
	return -1;
}

/* Passed sockets no listen address wanted. */
static void
daemon_close_unused(struct daemon *d)
{
	int fd;

	while ((fd = sdnotify_listen_unused()) != -1) {
		log_warnx("socket activation: descriptor %d matches no listen "
		    "address in the conf: closed", fd);
		close(fd);
	}
}

static int
daemon_logs(struct daemon *d, char *err, size_t errlen)
{
	const struct conf *c = d->conf;
	int efd, afd = -1;

	if ((efd = log_file_open(c->error_log, err, errlen)) == -1)
		return -1;
	if (c->access_log != NULL && strcmp(c->access_log, "stderr") != 0 &&
	    (afd = accesslog_open_file(c->access_log, err, errlen)) == -1) {
		if (efd >= 0)
			close(efd);
		return -1;
	}
	if (efd >= 0)
		log_redirect(efd);
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

/* A listener's TLS contexts into *slot, if it has "tls" (ct non-NULL). */
static int
daemon_tls(struct daemon *d, const struct conf_tls *ct, const char *key,
    struct tls_slot **slot, char *err, size_t errlen)
{
	struct tls_srv *srv;
	char msg[512];

	if (ct == NULL)
		return 0;
	if (tls_init(msg, sizeof(msg)) == -1 ||
	    (srv = tls_srv_new(ct, msg, sizeof(msg))) == NULL) {
		snprintf(err, errlen, "%s: %s.tls: %s", d->conf->path, key,
		    msg);
		return -1;
	}
	if ((*slot = tls_slot_new(srv)) == NULL) {
		tls_srv_unref(srv);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

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
	if ((d->tls = calloc(c->nlisten, sizeof(*d->tls))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	d->ntls = c->nlisten;
	for (i = 0; i < c->nlisten; i++) {
		snprintf(key, sizeof(key), "listen[%u]", i);
		if (daemon_tls(d, c->listen_tls[i], key, &d->tls[i], err,
		    errlen) == -1 ||
		    daemon_listen(d, key, c->listen[i], 0, d->tls[i], err,
		    errlen) == -1)
			return -1;
	}
	if (c->admin != NULL && (daemon_tls(d, c->admin_tls, "admin",
	    &d->admin_tls, err, errlen) == -1 ||
	    daemon_listen(d, "admin", c->admin, 1, d->admin_tls, err,
	    errlen) == -1))
		return -1;
	daemon_close_unused(d);
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
 * The upstream edges, each registered under its protocol name (upconn.h),
 * before any worker resolves a name.  The one place that names them: the
 * core picks an edge by the endpoint's protocol.
 */
static int
daemon_edges(char *err, size_t errlen)
{
	if (upstream_register() == -1 || hup_register() == -1 ||
	    inproc_register() == -1 ||
	    h2up_register() == -1) {
		snprintf(err, errlen, "cannot register the upstream edges");
		return -1;
	}
	return 0;
}

/*
 * Order: everything that can fail on the conf or the host first (log
 * files, commands, sockets), then the replicas, so they are starting
 * while the workers come up, then the worker threads.
 */
int
daemon_start(struct daemon *d, char *err, size_t errlen)
{
	struct route_table *routes;
	struct reg_change *changes;
	unsigned nchanges;
	char msg[512];

	d->nworkers = d->conf->workers;
	if (daemon_edges(err, errlen) == -1)
		return -1;
	if (metrics_init(d->nworkers, INGRESSD_VERSION) == -1 ||
	    accesslog_init(d->nworkers) == -1) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (daemon_logs(d, err, errlen) == -1 ||
	    supervise_check(d->conf, err, errlen) == -1 ||
	    preflight_unique(d->conf, err, errlen) == -1 ||
	    preflight_tls(d->conf, err, errlen) == -1 ||
	    daemon_runtime_dir(d, err, errlen) == -1)
		return -1;
	if ((d->reg = registry_new(d->nworkers, d->runtime_dir)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (registry_reload(d->reg, d->conf, &changes, &nchanges, msg,
	    sizeof(msg)) == -1) {
		snprintf(err, errlen, "%s: %s", d->conf->path, msg);
		registry_free(d->reg);
		d->reg = NULL;
		return -1;
	}
	registry_changes_free(changes, nchanges);
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
	worker_snap_ref(d->snap);
	d->boot = d->snap;
	if (daemon_bind(d, err, errlen) == -1 ||
	    ctl_write_pid(d->runtime_dir, err, errlen) == -1)
		return -1;
	registry_set_notify(d->reg, daemon_names_changed, d);
	if ((d->dns = dns_new(d->base, d->reg)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (dns_apply(d->dns, d->conf, err, errlen) == -1)
		return -1;
	if ((d->dnssrv = dnssrv_new(d->base, d->reg)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (dnssrv_apply(d->dnssrv, d->conf, err, errlen) == -1)
		return -1;
	if (d->conf->etcd.nendpoints > 0 && (d->etcd = etcd_new(d->base,
	    d->reg, &d->conf->etcd, err, errlen)) == NULL)
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

void
daemon_status(struct daemon *d)
{
	if (d->stopping)
		return;
	sdnotify_status("serving: %u connection(s), %u deployment(s), "
	    "%u replica process(es), %u worker(s), %u reload(s)",
	    worker_conns(), registry_ndeployments(d->reg),
	    supervise_running(d->sv), d->nworkers, d->gen);
}

/* READY=1 again after reloads, with a fresh status line. */
static void
daemon_ready(struct daemon *d)
{
	sdnotify_ready();
	daemon_status(d);
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

/*
 * The stall watchdog, for in-process modules: a handler that blocks
 * stops its worker's loop.  The same beats as the systemd watchdog, every
 * STALL_EVERY_MS while the conf has an inproc deployment: a worker whose
 * beat has not run for timeouts.worker_stall is logged once per stall,
 * with the module it is inside when ingressd called one.  A new beat is
 * posted only once the last one ran, so a stuck worker's inbox does not
 * grow.
 */
static int
daemon_has_inproc(const struct conf *conf)
{
	unsigned i;

	for (i = 0; i < conf->ndeployments; i++) {
		if (conf->deployments[i].source == CONF_INPROC)
			return 1;
	}
	return 0;
}

static void
daemon_stall_one(struct daemon *d, unsigned i, double now)
{
	unsigned b = worker_beats(d->workers[i]);
	double idle = now - d->stall_since[i];
	char mod[512];

	if (b != d->stall_beats[i] || d->stall_since[i] == 0) {
		if (d->stall_told[i])
			log_info("worker %u: running again after %.1f s", i,
			    idle);
		d->stall_beats[i] = b;
		d->stall_since[i] = now;
		d->stall_told[i] = 0;
		worker_beat(d->workers[i]);
		return;
	}
	if (d->stall_told[i] || idle < d->conf->timeouts.worker_stall)
		return;
	d->stall_told[i] = 1;
	if (inproc_running(i, mod, sizeof(mod)))
		log_warnx("worker %u stalled for %.1f s inside inproc module "
		    "%s: every request on the worker waits", i, idle, mod);
	else
		log_warnx("worker %u stalled for %.1f s (not inside a call "
		    "into an inproc module)", i, idle);
}

static void
daemon_stall_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct daemon *d = arg;
	double now = monotime_now();
	unsigned i;

	if (d->stopping || !daemon_has_inproc(d->conf))
		return;
	for (i = 0; i < d->started; i++)
		daemon_stall_one(d, i, now);
}

void
daemon_timers(struct daemon *d)
{
	struct timeval status = { STATUS_EVERY_SEC, 0 }, wd;
	uint64_t usec = sdnotify_watchdog_usec();
	unsigned i;

	struct timeval stall = { 0, STALL_EVERY_MS * 1000 };

	d->status_ev = event_new(d->base, -1, EV_PERSIST, daemon_status_cb, d);
	if (d->status_ev != NULL)
		evtimer_add(d->status_ev, &status);
	d->stall_ev = event_new(d->base, -1, EV_PERSIST, daemon_stall_cb, d);
	if (d->stall_ev != NULL)
		evtimer_add(d->stall_ev, &stall);
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
			log_redirect(fd);
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
		if (d->stopping) {
			log_warnx("SIGHUP while stopping: ignored");
			ctl_reload_status(d->runtime_dir, 0, "ingressd is "
			    "stopping: reload ignored");
		} else
			reload_run(d);
		break;
	case SIGUSR1:
		daemon_reopen_logs(d);
		break;
	default:
		daemon_stop_begin(d, (int)sig);
		break;
	}
}

void
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
	dnssrv_free(d->dnssrv);
	etcd_free(d->etcd);
	for (i = 0; i < d->nworkers; i++)
		worker_free(d->workers[i]);
	for (i = 0; i < d->ntls; i++)
		tls_slot_free(d->tls[i]);
	free(d->tls);
	tls_slot_free(d->admin_tls);
	while (d->jobs != NULL)
		reload_job_free(d->jobs);
	supervise_free(d->sv);
	registry_free(d->reg);
	if (d->runtime_dir[0] != '\0')
		ctl_remove(d->runtime_dir);
	if (d->made_runtime_dir)
		rmdir(d->runtime_dir);
	if (d->drain_ev != NULL)
		event_free(d->drain_ev);
	if (d->watchdog_ev != NULL)
		event_free(d->watchdog_ev);
	if (d->status_ev != NULL)
		event_free(d->status_ev);
	if (d->stall_ev != NULL)
		event_free(d->stall_ev);
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

/* The conf, the log, systemd's variables, the main loop and signals. */
int
daemon_init(struct daemon *d)
{
	char err[1024];
	int level;

	log_init(d->debug ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	if ((d->conf = conf_load(d->path, err, sizeof(err))) == NULL) {
		log_errx("cannot start: %s", err);
		return -1;
	}
	level = d->debug ? LOG_LEVEL_DEBUG : log_level_parse(d->conf->log_level);
	log_set_level(level < 0 ? LOG_LEVEL_INFO : level);
	/* Before any replica is spawned: they must not see NOTIFY_SOCKET. */
	sdnotify_init();
	d->ready = daemon_ready;
	signal(SIGPIPE, SIG_IGN);
	evthread_use_pthreads();
	if ((d->base = event_base_new()) == NULL || daemon_signals(d) == -1)
		fatalx("cannot create the event loop");
	return 0;
}

void
daemon_free(struct daemon *d)
{
	unsigned i;

	for (i = 0; i < NSIGNALS; i++) {
		if (d->sigs[i] != NULL)
			event_free(d->sigs[i]);
	}
	event_base_free(d->base);
	if (d->boot != NULL)
		worker_snap_unref(d->boot);
	if (d->snap != NULL)
		worker_snap_unref(d->snap);
	else
		conf_free((struct conf *)d->conf);
	metrics_free();
	accesslog_free();
	sdnotify_free();
	log_info("stopped");
}
