/*
 * main.c -- start-up, signals, threads, shutdown.
 *
 * The main thread owns the conf, the registry and the supervisor, and sits
 * in its own event loop for signals and child exits; the workers own every
 * client and replica connection.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "conf.h"
#include "handle.h"
#include "log.h"
#include "net.h"
#include "registry.h"
#include "route.h"
#include "sdnotify.h"
#include "supervise.h"
#include "worker.h"

#define INGRESSD_VERSION	"0.1.0"
#define DEFAULT_CONF		"/etc/ingressd/ingressd.json"

struct daemon {
	struct conf	*conf;
	struct event_base *base;
	struct registry	*reg;
	struct route_table *routes;
	struct supervise *sv;
	struct worker	*workers[CONF_MAX_WORKERS];
	unsigned	 nworkers;
	char		 runtime_dir[256];
	int		 made_runtime_dir;
};

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: ingressd [-tVh] [-d] [-c file]\n"
	    "  -c file  configuration file (default %s)\n"
	    "  -t       check the configuration and exit\n"
	    "  -d       debug logging\n"
	    "  -V       print the version and exit\n"
	    "  -h       this help\n", DEFAULT_CONF);
}

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
 * spread connections); a unix socket can be bound once, so the workers
 * share it through dup()ed descriptors.
 */
static int
daemon_listen(struct daemon *d, const char *text, int admin, char *err,
    size_t errlen)
{
	struct net_addr addr;
	unsigned i, n = admin ? 1 : d->nworkers;
	int fd = -1, shared;

	if (net_addr_parse(text, &addr, err, errlen) == -1)
		return -1;
	shared = net_addr_is_unix(&addr);
	for (i = 0; i < n; i++) {
		if (shared && i > 0)
			fd = dup(fd);
		else
			fd = net_listen(&addr, n > 1, err, errlen);
		if (fd == -1) {
			if (err[0] == '\0')
				snprintf(err, errlen, "%s: %s", text,
				    strerror(errno));
			return -1;
		}
		if (worker_add_listener(d->workers[i], fd, admin) == -1) {
			close(fd);
			snprintf(err, errlen, "%s: too many listeners", text);
			return -1;
		}
	}
	log_info("listening on %s%s", text, admin ? " (admin)" : "");
	return 0;
}

static void
daemon_prewarm_cb(struct worker *w, void *arg)
{
	handle_get(w, arg);
}

static void
daemon_signal_cb(evutil_socket_t sig, short ev, void *arg)
{
	struct daemon *d = arg;

	if (sig == SIGHUP) {
		log_warnx("SIGHUP: reload is not supported yet; ignored");
		return;
	}
	log_info("signal %d: stopping", (int)sig);
	event_base_loopexit(d->base, NULL);
}

static int
daemon_start(struct daemon *d, char *err, size_t errlen)
{
	unsigned i, j;

	if (daemon_runtime_dir(d, err, errlen) == -1)
		return -1;
	d->nworkers = d->conf->workers;
	if ((d->reg = registry_new(d->conf, d->nworkers, d->runtime_dir, err,
	    errlen)) == NULL)
		return -1;
	if ((d->routes = route_table_new(d->conf)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < d->nworkers; i++) {
		d->workers[i] = worker_new(i, d->conf, d->reg, d->routes);
		if (d->workers[i] == NULL) {
			snprintf(err, errlen, "worker %u: out of memory", i);
			return -1;
		}
	}
	for (i = 0; i < d->conf->nlisten; i++) {
		if (daemon_listen(d, d->conf->listen[i], 0, err, errlen) == -1)
			return -1;
	}
	if (d->conf->admin != NULL &&
	    daemon_listen(d, d->conf->admin, 1, err, errlen) == -1)
		return -1;
	if ((d->sv = supervise_new(d->base, d->conf, d->reg, err,
	    errlen)) == NULL || supervise_start(d->sv, err, errlen) == -1)
		return -1;
	for (i = 0; i < d->conf->ndeployments; i++) {
		if (!d->conf->deployments[i].prewarm)
			continue;
		for (j = 0; j < d->nworkers; j++)
			worker_post(d->workers[j], daemon_prewarm_cb,
			    d->conf->deployments[i].name);
	}
	for (i = 0; i < d->nworkers; i++) {
		if (worker_start(d->workers[i]) == -1) {
			snprintf(err, errlen, "worker %u: cannot start thread", i);
			return -1;
		}
	}
	return 0;
}

static void
daemon_stop(struct daemon *d)
{
	unsigned i;

	for (i = 0; i < d->nworkers; i++) {
		if (d->workers[i] != NULL)
			worker_stop(d->workers[i]);
	}
	for (i = 0; i < d->nworkers; i++) {
		if (d->workers[i] != NULL)
			worker_join(d->workers[i]);
	}
	if (d->sv != NULL)
		supervise_stop(d->sv, 2.0);
	for (i = 0; i < d->nworkers; i++)
		worker_free(d->workers[i]);
	supervise_free(d->sv);
	route_table_free(d->routes);
	registry_free(d->reg);
	if (d->made_runtime_dir)
		rmdir(d->runtime_dir);
}

int
main(int argc, char **argv)
{
	const char *path = DEFAULT_CONF;
	struct daemon d;
	struct event *sigs[3];
	char err[1024] = "";
	int ch, check = 0, debug = 0, rv = 0, level;
	unsigned i;

	while ((ch = getopt(argc, argv, "c:dhtV")) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'd':
			debug = 1;
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
	memset(&d, 0, sizeof(d));
	if ((d.conf = conf_load(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "ingressd: %s\n", err);
		return 1;
	}
	if (check) {
		fprintf(stderr, "ingressd: configuration %s is ok\n", path);
		conf_free(d.conf);
		return 0;
	}
	level = debug ? LOG_LEVEL_DEBUG : log_level_parse(d.conf->log_level);
	log_init(level < 0 ? LOG_LEVEL_INFO : level);
	signal(SIGPIPE, SIG_IGN);
	evthread_use_pthreads();
	if ((d.base = event_base_new()) == NULL)
		fatalx("cannot create the event loop");
	sigs[0] = evsignal_new(d.base, SIGTERM, daemon_signal_cb, &d);
	sigs[1] = evsignal_new(d.base, SIGINT, daemon_signal_cb, &d);
	sigs[2] = evsignal_new(d.base, SIGHUP, daemon_signal_cb, &d);
	for (i = 0; i < 3; i++)
		evsignal_add(sigs[i], NULL);
	if (daemon_start(&d, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		rv = 1;
	} else {
		log_info("ingressd %s started: %u worker(s), %u deployment(s), "
		    "runtime dir %s", INGRESSD_VERSION, d.nworkers,
		    d.conf->ndeployments, d.runtime_dir);
		sdnotify_status("serving: %u worker(s), %u deployment(s)",
		    d.nworkers, d.conf->ndeployments);
		sdnotify_ready();
		event_base_dispatch(d.base);
		sdnotify_stopping();
	}
	daemon_stop(&d);
	for (i = 0; i < 3; i++)
		event_free(sigs[i]);
	event_base_free(d.base);
	conf_free(d.conf);
	log_info("stopped");
	return rv;
}
