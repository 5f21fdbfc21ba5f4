/*
 * cli.c -- replica options from argv and the environment,
 * replica_new() and replica_main().
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replica_impl.h"

/* Configuration. */

static int
parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char		*end;
	unsigned long	 n;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || n > max)
		return -1;
	*v = n;
	return 0;
}

/* "--name VALUE" or "--name=VALUE"; advances *i past what it used. */
static const char *
opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t	 n = strlen(name);
	char	*a = argv[*i];

	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0' || *i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

struct opts {
	const char	*listen, *id, *deployment, *maxc, *drain, *reg;
	const char	*cert, *key, *client_ca;
};

static int
parse_args(int argc, char **argv, struct opts *o, char *err, size_t errlen)
{
	static const char *const names[] = { "--listen", "--id",
	    "--deployment", "--max-concurrency", "--drain-ms", "--register",
	    "--tls-cert", "--tls-key", "--tls-client-ca" };
	const char	**slot[] = { &o->listen, &o->id, &o->deployment,
	    &o->maxc, &o->drain, &o->reg, &o->cert, &o->key, &o->client_ca };
	const char	 *v;
	size_t		  k;
	int		  i;

	o->listen = getenv("INGRESSD_LISTEN");
	o->id = getenv("INGRESSD_REPLICA_ID");
	o->deployment = getenv("INGRESSD_DEPLOYMENT");
	o->maxc = getenv("INGRESSD_MAX_CONCURRENCY");
	o->drain = getenv("INGRESSD_DRAIN_MS");
	o->reg = getenv("INGRESSD_REGISTER");
	o->cert = getenv("INGRESSD_TLS_CERT");
	o->key = getenv("INGRESSD_TLS_KEY");
	o->client_ca = getenv("INGRESSD_TLS_CLIENT_CA");
	for (i = 1; i < argc; i++) {
		for (k = 0; k < sizeof names / sizeof names[0]; k++) {
			if ((v = opt_value(argc, argv, &i, names[k])) != NULL) {
				*slot[k] = v;
				break;
			}
		}
		if (k == sizeof names / sizeof names[0]) {
			snprintf(err, errlen, "unknown or incomplete option "
			    "\"%s\" (use --listen ADDR, --id ID, --deployment "
			    "NAME, --max-concurrency N, --drain-ms N, "
			    "--register URL, --tls-cert FILE, --tls-key FILE, "
			    "--tls-client-ca FILE)",
			    argv[i]);
			return -1;
		}
	}
	return 0;
}

static int
replica_configure(struct replica *r, int argc, char **argv, char *err,
    size_t errlen)
{
	struct opts	 o;
	unsigned long	 n;

	if (parse_args(argc, argv, &o, err, errlen) != 0)
		return -1;
	if (o.listen == NULL || *o.listen == '\0') {
		snprintf(err, errlen, "no address: use --listen ADDR or "
		    "INGRESSD_LISTEN");
		return -1;
	}
	if (o.id != NULL && *o.id != '\0') {
		if (strlen(o.id) > WIRE_MAX_NAME) {
			snprintf(err, errlen, "replica id too long");
			return -1;
		}
		snprintf(r->id, sizeof r->id, "%s", o.id);
	} else
		snprintf(r->id, sizeof r->id, "replica-%ld", (long)getpid());
	if (o.deployment != NULL) {
		if (strlen(o.deployment) > WIRE_MAX_NAME) {
			snprintf(err, errlen, "deployment name too long");
			return -1;
		}
		snprintf(r->deployment, sizeof r->deployment, "%s",
		    o.deployment);
	}
	r->max_concurrency = 1024;
	if (o.maxc != NULL) {
		if (parse_uint(o.maxc, UINT32_MAX, &n) != 0 || n == 0) {
			snprintf(err, errlen, "bad max concurrency \"%s\"",
			    o.maxc);
			return -1;
		}
		r->max_concurrency = (uint32_t)n;
	}
	r->drain_ms = 2000;
	if (o.drain != NULL) {
		if (parse_uint(o.drain, 3600 * 1000, &n) != 0) {
			snprintf(err, errlen, "bad drain ms \"%s\"", o.drain);
			return -1;
		}
		r->drain_ms = (unsigned)n;
	}
	r->register_url = o.reg != NULL && *o.reg != '\0' ? o.reg : NULL;
	if (replica_listen(r, o.listen, err, errlen) == -1)
		return -1;
	return replica_tls(r, o.cert, o.key, o.client_ca, err, errlen);
}

struct replica *
replica_new(struct event_base *base, int argc, char **argv,
    const struct replica_handler *h, void *arg, char *err, size_t errlen)
{
	struct replica	*r;

	if (h == NULL || h->on_request == NULL) {
		snprintf(err, errlen, "handler has no on_request");
		return NULL;
	}
	if ((r = calloc(1, sizeof *r)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->base = base;
	r->h = *h;
	r->arg = arg;
	r->ops = &req_conn_ops;
	r->drained = replica_drained;
	LIST_INIT(&r->conns);
	r->sigterm = evsignal_new(base, SIGTERM, signal_cb, r);
	r->sigint = evsignal_new(base, SIGINT, signal_cb, r);
	r->drain_ev = evtimer_new(base, drain_timeout_cb, r);
	r->accept_ev = evtimer_new(base, accept_resume_cb, r);
	if (r->sigterm == NULL || r->sigint == NULL || r->drain_ev == NULL ||
	    r->accept_ev == NULL) {
		snprintf(err, errlen, "cannot create events");
		replica_free(r);
		return NULL;
	}
	if (replica_configure(r, argc, argv, err, errlen) != 0) {
		replica_free(r);
		return NULL;
	}
	signal(SIGPIPE, SIG_IGN);
	return r;
}

int
replica_main(const char *name, int argc, char **argv,
    const struct replica_handler *h, void *arg)
{
	struct event_base *base;
	struct replica *r;
	char err[256];
	int rc;

	if ((base = event_base_new()) == NULL) {
		fprintf(stderr, "%s: event_base_new failed\n", name);
		return 1;
	}
	if ((r = replica_new(base, argc, argv, h, arg, err,
	    sizeof err)) == NULL) {
		fprintf(stderr, "%s: %s\n", name, err);
		event_base_free(base);
		return 1;
	}
	rc = replica_run(r);
	replica_free(r);
	event_base_free(base);
	return rc == 0 ? 0 : 1;
}
