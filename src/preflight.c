/*
 * preflight.c -- the start's refusals, checked without starting (see
 * preflight.h).
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "conf.h"
#include "net.h"
#include "preflight.h"
#include "tls.h"

/* listen[0..n-1], then admin: each resolved, with its key. */
struct pf_addrs {
	struct net_addr	*na;
	char		(*key)[32];
	unsigned	 n;
};

static void
pf_addrs_free(struct pf_addrs *a)
{
	free(a->na);
	free(a->key);
}

static int
pf_resolve(const struct conf *c, struct pf_addrs *a, char *err,
    size_t errlen)
{
	const char *text;
	char msg[512];
	unsigned i;

	a->n = c->nlisten + (c->admin != NULL);
	a->na = calloc(a->n, sizeof(*a->na));
	a->key = calloc(a->n, sizeof(*a->key));
	if (a->na == NULL || a->key == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < a->n; i++) {
		if (i < c->nlisten) {
			snprintf(a->key[i], sizeof(a->key[i]), "listen[%u]", i);
			text = c->listen[i];
		} else {
			snprintf(a->key[i], sizeof(a->key[i]), "admin");
			text = c->admin;
		}
		if (net_addr_parse(text, &a->na[i], msg, sizeof(msg)) == -1) {
			snprintf(err, errlen, "%s: %s: %s", c->path, a->key[i],
			    msg);
			return -1;
		}
	}
	return 0;
}

/* "localhost:8000" and "127.0.0.1:8000" are one socket address. */
static int
pf_dups(const struct conf *c, const struct pf_addrs *a, char *err,
    size_t errlen)
{
	unsigned i, j;

	for (i = 0; i < a->n; i++) {
		for (j = 0; j < i; j++) {
			if (!net_addr_same(&a->na[i].ss, &a->na[j].ss))
				continue;
			snprintf(err, errlen, "%s: %s: %s is the same address "
			    "as %s (%s)", c->path, a->key[i], a->na[i].text,
			    a->key[j], a->na[j].text);
			return -1;
		}
	}
	return 0;
}

int
preflight_unique(const struct conf *c, char *err, size_t errlen)
{
	struct pf_addrs a;
	int rv;

	memset(&a, 0, sizeof(a));
	rv = pf_resolve(c, &a, err, errlen) == -1 ||
	    pf_dups(c, &a, err, errlen) == -1 ? -1 : 0;
	pf_addrs_free(&a);
	return rv;
}

/* A file we would open for appending (creating it): its directory must
 * exist and let us in and write; an existing file must be writable. */
static int
pf_file(const struct conf *c, const char *key, const char *path, char *err,
    size_t errlen)
{
	char copy[4096], *dir;
	struct stat st;

	if (path == NULL || strcmp(path, "stderr") == 0)
		return 0;
	if (access(path, F_OK) == 0) {
		if (access(path, W_OK) == 0)
			return 0;
		snprintf(err, errlen, "%s: %s: %s: %s", c->path, key, path,
		    strerror(errno));
		return -1;
	}
	snprintf(copy, sizeof(copy), "%s", path);
	dir = dirname(copy);
	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			errno = ENOTDIR;
		else if (access(dir, W_OK | X_OK) == 0)
			return 0;
	}
	snprintf(err, errlen, "%s: %s: %s: directory %s: %s", c->path, key,
	    path, dir, strerror(errno));
	return -1;
}

/* Bind each TCP address once (no listen); a unix one's directory. */
static int
pf_bind(const struct conf *c, const struct pf_addrs *a, char *err,
    size_t errlen, char *note, size_t notelen)
{
	const struct sockaddr_un *sun;
	char msg[512];
	unsigned i;
	size_t n;

	for (i = 0; i < a->n; i++) {
		if (net_addr_is_unix(&a->na[i])) {
			sun = (const struct sockaddr_un *)&a->na[i].ss;
			if (pf_file(c, a->key[i], sun->sun_path, err,
			    errlen) == -1)
				return -1;
			continue;
		}
		if (net_bind_test(&a->na[i], msg, sizeof(msg)) == 0)
			continue;
		if (errno != EADDRINUSE) {
			snprintf(err, errlen, "%s: %s: cannot listen: %s",
			    c->path, a->key[i], msg);
			return -1;
		}
		n = strlen(note);
		snprintf(note + n, notelen - n, "%s%s %s is in use now (a "
		    "running ingressd?); the start fails unless it is free",
		    n > 0 ? "; " : "", a->key[i], a->na[i].text);
	}
	return 0;
}

/* Every certificate against its key, and the replicas' TLS files. */
int
preflight_tls(const struct conf *c, char *err, size_t errlen)
{
	const struct conf_upstream_tls *u;
	struct tls_cli *cl;
	char msg[512];
	unsigned i;

	for (i = 0; i < c->nlisten; i++) {
		if (c->listen_tls[i] != NULL &&
		    tls_check(c->listen_tls[i], msg, sizeof(msg)) == -1) {
			snprintf(err, errlen, "%s: listen[%u].tls: %s", c->path,
			    i, msg);
			return -1;
		}
	}
	if (c->admin_tls != NULL &&
	    tls_check(c->admin_tls, msg, sizeof(msg)) == -1) {
		snprintf(err, errlen, "%s: admin.tls: %s", c->path, msg);
		return -1;
	}
	for (i = 0; i < c->ndeployments; i++) {
		if ((u = c->deployments[i].tls) == NULL)
			continue;
		if ((cl = tls_cli_new(u->ca, u->cert, u->key, u->server_name,
		    msg, sizeof(msg))) == NULL) {
			snprintf(err, errlen, "%s: deployments.%s.tls: %s",
			    c->path, c->deployments[i].name, msg);
			return -1;
		}
		tls_cli_free(cl);
	}
	return 0;
}

int
preflight_check(const struct conf *c, char *err, size_t errlen, char *note,
    size_t notelen)
{
	struct pf_addrs a;
	int rv;

	if (notelen > 0)
		note[0] = '\0';
	if (pf_file(c, "error_log", c->error_log, err, errlen) == -1 ||
	    pf_file(c, "access_log", c->access_log, err, errlen) == -1 ||
	    preflight_tls(c, err, errlen) == -1)
		return -1;
	memset(&a, 0, sizeof(a));
	rv = pf_resolve(c, &a, err, errlen) == -1 ||
	    pf_dups(c, &a, err, errlen) == -1 ||
	    pf_bind(c, &a, err, errlen, note, notelen) == -1 ? -1 : 0;
	pf_addrs_free(&a);
	return rv;
}
