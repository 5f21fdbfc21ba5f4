/*
 * fuzz_conf.c -- libFuzzer target for conf_load.
 *
 * The input is written to a memfd and loaded through /proc/self/fd/N, so
 * the real conf_load runs (file read, jansson, validation, error paths)
 * without touching the disk.  A conf that loads must hold what validation
 * promises; one that fails must leave a one-line message naming the file.
 * Host names in addresses are never resolved by conf_load, so random input
 * causes no DNS traffic.
 */
#include <sys/mman.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "route.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int	fd = -1;
static char	path[64];

static void
check_loaded(const struct conf *conf)
{
	const struct conf_deployment	*d;
	const struct conf_route		*r;
	struct route_table		*rt;
	unsigned			 i;

	if (conf->nlisten < 1 || conf->log_level == NULL ||
	    conf->workers < 1 || conf->workers > CONF_MAX_WORKERS ||
	    conf->limits.max_request_line < 256 ||
	    conf->timeouts.header <= 0 || conf->timeouts.drain > 86400)
		abort();
	for (i = 0; i < conf->ndeployments; i++) {
		d = &conf->deployments[i];
		if (d->name == NULL || conf_find_deployment(conf, d->name) != d)
			abort();
		if (d->source == CONF_SPAWN && (d->command == NULL ||
		    d->command[0] == NULL || d->replicas < 1))
			abort();
		if (d->source == CONF_ENDPOINTS && (d->nendpoints < 1 ||
		    d->command != NULL))
			abort();
		if (d->queue_timeout <= 0 || d->request_timeout <= 0)
			abort();
	}
	for (i = 0; i < conf->nroutes; i++) {
		r = &conf->routes[i];
		if (r->prefix[0] != '/' || r->prefix_len != strlen(r->prefix) ||
		    conf_find_deployment(conf, r->deployment) == NULL)
			abort();
	}

	/* Every route is reachable through its own prefix and host. */
	if ((rt = route_table_new(conf)) == NULL)
		abort();
	for (i = 0; i < conf->nroutes; i++) {
		r = &conf->routes[i];
		if (route_match(rt, r->host, r->host ? strlen(r->host) : 0,
		    r->prefix, r->prefix_len) == NULL)
			abort();
	}
	route_match(rt, "h", 1, "/", 1);
	route_table_free(rt);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf	*conf;
	char		 err[1024];

	if (fd == -1) {
		if ((fd = memfd_create("fuzz_conf", 0)) == -1)
			abort();
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) == -1 ||
	    pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();

	memset(err, 'x', sizeof err);
	conf = conf_load(path, err, sizeof err);
	if (conf != NULL) {
		check_loaded(conf);
		conf_free(conf);
		return (0);
	}
	if (memchr(err, '\0', sizeof err) == NULL ||
	    strncmp(err, path, strlen(path)) != 0 || strchr(err, '\n') != NULL)
		abort();
	return (0);
}
