/*
 * main.c -- usage, command line, -t and the run entry.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "conf.h"
#include "ctl.h"
#include "daemon.h"
#include "log.h"
#include "preflight.h"
#include "sdnotify.h"
#include "supervise.h"

#define DEFAULT_CONF		"/etc/ingressd/ingressd.json"
#define RELOAD_WAIT_SEC		30	/* -s reload: for the daemon's answer */
#define RELOAD_POLL_MS		20

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: ingressd [-dhtV] [-c file] [-s reload]\n"
	    "  -c file  configuration file (default %s)\n"
	    "  -t       check the configuration and exit\n"
	    "  -s reload  make the running ingressd reload the configuration;\n"
	    "           exit 0 once applied, 1 with the reason if refused\n"
	    "  -d       debug logging\n"
	    "  -V       print the version and exit\n"
	    "  -h       this help\n"
	    "signals: HUP reload, USR1 reopen log files, TERM/INT graceful "
	    "stop\n", DEFAULT_CONF);
}

/* -t: everything the start would refuse, found without starting. */
static int
main_check(const char *path)
{
	struct conf *conf;
	char err[1024], note[1024];

	if ((conf = conf_load(path, err, sizeof(err))) == NULL ||
	    supervise_check(conf, err, sizeof(err)) == -1 ||
	    preflight_check(conf, err, sizeof(err), note, sizeof(note)) == -1) {
		fprintf(stderr, "ingressd: %s\n", err);
		conf_free(conf);
		return 1;
	}
	if (note[0] != '\0')
		fprintf(stderr, "ingressd: note: %s\n", note);
	fprintf(stderr, "ingressd: configuration %s is ok\n", path);
	conf_free(conf);
	return 0;
}

/* The running daemon's runtime directory, as it chose it (daemon.c). */
static const char *
main_runtime_dir(const struct conf *conf)
{
	return conf->runtime_dir != NULL ? conf->runtime_dir :
	    getenv("RUNTIME_DIRECTORY");
}

/* Wait for a reload status newer than seq: 0 applied, 1 refused. */
static int
main_reload_wait(const char *dir, pid_t pid, unsigned seq)
{
	struct timespec nap = { 0, RELOAD_POLL_MS * 1000000L };
	unsigned i, now;
	char text[1200];
	int ok;

	for (i = 0; i < RELOAD_WAIT_SEC * 1000 / RELOAD_POLL_MS; i++) {
		if (ctl_read_status(dir, &now, &ok, text, sizeof(text)) == 0 &&
		    now > seq) {
			fprintf(ok ? stdout : stderr, "ingressd: %s\n", text);
			return ok ? 0 : 1;
		}
		if (kill(pid, 0) == -1 && errno == ESRCH) {
			fprintf(stderr, "ingressd: pid %ld exited during the "
			    "reload\n", (long)pid);
			return 1;
		}
		nanosleep(&nap, NULL);
	}
	fprintf(stderr, "ingressd: no answer from pid %ld within %d s\n",
	    (long)pid, RELOAD_WAIT_SEC);
	return 1;
}

/*
 * -s reload: what systemctl reload runs.  A conf that does not load is
 * refused here, as the daemon would; otherwise SIGHUP the daemon found
 * through its pid file and wait for its own verdict.
 */
static int
main_reload(const char *path)
{
	struct conf *conf;
	const char *dir;
	char err[1024] = "", text[1200];
	unsigned seq;
	pid_t pid;
	int ok;

	if ((conf = conf_load(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "ingressd: reload refused: %s\n", err);
		return 1;
	}
	if ((dir = main_runtime_dir(conf)) == NULL) {
		fprintf(stderr, "ingressd: cannot find the running ingressd: "
		    "%s sets no runtime_dir and $RUNTIME_DIRECTORY is unset\n",
		    path);
		conf_free(conf);
		return 1;
	}
	snprintf(text, sizeof(text), "%s", dir);
	conf_free(conf);
	if (ctl_read_pid(text, &pid, err, sizeof(err)) == -1 ||
	    (kill(pid, 0) == -1 && errno == ESRCH)) {
		fprintf(stderr, "ingressd: no running ingressd in %s: %s\n",
		    text, err[0] != '\0' ? err : "stale pid file");
		return 1;
	}
	if (ctl_read_status(text, &seq, &ok, err, sizeof(err)) == -1)
		seq = 0;
	if (kill(pid, SIGHUP) == -1) {
		fprintf(stderr, "ingressd: kill %ld: %s\n", (long)pid,
		    strerror(errno));
		return 1;
	}
	return main_reload_wait(text, pid, seq);
}

static int
main_run(struct daemon *d)
{
	char err[1024] = "";
	int rv = 0;

	if (daemon_start(d, err, sizeof(err)) == -1) {
		log_errx("cannot start: %s", err);
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

int
main(int argc, char **argv)
{
	struct daemon d;
	int ch, check = 0, reload = 0, rv;

	memset(&d, 0, sizeof(d));
	d.path = DEFAULT_CONF;
	while ((ch = getopt(argc, argv, "c:dhs:tV")) != -1) {
		switch (ch) {
		case 's':
			if (strcmp(optarg, "reload") != 0) {
				fprintf(stderr, "ingressd: -s %s: only "
				    "\"reload\" is known\n", optarg);
				return 1;
			}
			reload = 1;
			break;
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
		return main_check(d.path);
	if (reload)
		return main_reload(d.path);
	if (daemon_init(&d) == -1)
		return 1;
	rv = main_run(&d);
	daemon_stop(&d);
	daemon_free(&d);
	return rv;
}
