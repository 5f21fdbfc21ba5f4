/*
 * main.c -- usage, command line, -t and the run entry.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "conf.h"
#include "daemon.h"
#include "log.h"
#include "sdnotify.h"
#include "supervise.h"

#define DEFAULT_CONF		"/etc/ingressd/ingressd.json"

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

/* -t: everything that can be checked without starting anything. */
static int
main_check(const char *path)
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
		return main_check(d.path);
	if (daemon_init(&d) == -1)
		return 1;
	rv = main_run(&d);
	daemon_stop(&d);
	daemon_free(&d);
	return rv;
}
