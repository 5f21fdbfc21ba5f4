/*
 * etcd.c -- a replica registers itself in etcd with a lease (replica.h:
 * replica_etcd_register).
 *
 * Lease grant, put with the lease, keepalive every TTL/3 from a timer on
 * the replica's loop, revoke on drain.  Each call is one blocking HTTP/1.0
 * POST to etcd's JSON gateway (src/etcd_kv.c), bounded by a 1 s timeout:
 * a millisecond on a nearby etcd, every few seconds, which a replica's
 * loop can afford; an unreachable etcd costs the loop that second per
 * try, and the key simply expires meanwhile (ingressd's HELLO/PING stays
 * the traffic gate).  A keepalive answered without a TTL means the lease
 * is gone (etcd restarted, too late): grant and put again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <jansson.h>

#include "b64.h"
#include "etcd_kv.h"
#include "replica.h"

#define ETCD_DEFAULT_TTL	10
#define ETCD_CALL_TIMEOUT	1.0
#define ETCD_MAX_ENDPOINTS	8

struct replica_etcd {
	char		*endpoints[ETCD_MAX_ENDPOINTS];	/* "IP:PORT" */
	unsigned	 nendpoints, cur;
	char		*key, *value;			/* base64 */
	char		 keytext[512];
	unsigned	 ttl;
	char		 lease[32];			/* "" when none */
	struct event	*timer;
	struct etcd_peer *peer;				/* TLS, credentials */
};

/* What the URL's query said. */
struct replica_etcd_opts {
	int		 https;
	unsigned	 ttl;
	long		 weight, priority;		/* -1: not given */
	const char	*ca, *cert, *key, *server_name;
	const char	*user, *password_file;
};

/* POST body to each endpoint in turn: the parsed answer, or NULL. */
static json_t *
replica_etcd_call(struct replica_etcd *e, const char *path, json_t *body)
{
	char *b = json_dumps(body, JSON_COMPACT), *resp, err[256];
	json_t *doc = NULL;
	unsigned i, k;
	int status;

	json_decref(body);
	for (i = 0; b != NULL && doc == NULL && i < e->nendpoints; i++) {
		k = (e->cur + i) % e->nendpoints;
		status = etcd_kv_post(e->peer, e->endpoints[k], path, b,
		    ETCD_CALL_TIMEOUT, &resp, err, sizeof(err));
		if (status == 200)
			doc = json_loads(resp, 0, NULL);
		if (status != -1)
			free(resp);
		if (doc != NULL)
			e->cur = k;
	}
	free(b);
	return doc;
}

static int
replica_etcd_put(struct replica_etcd *e)
{
	json_t *doc;
	const char *id;
	char ttl[16];

	e->lease[0] = '\0';
	snprintf(ttl, sizeof(ttl), "%u", e->ttl);
	doc = replica_etcd_call(e, "/v3/lease/grant", json_pack("{s:s}",
	    "TTL", ttl));
	id = json_string_value(json_object_get(doc, "ID"));
	if (id == NULL) {
		json_decref(doc);
		e->lease[0] = '\0';
		return -1;
	}
	snprintf(e->lease, sizeof(e->lease), "%s", id);
	json_decref(doc);
	doc = replica_etcd_call(e, "/v3/kv/put", json_pack("{s:s, s:s, s:s}",
	    "key", e->key, "value", e->value, "lease", e->lease));
	json_decref(doc);
	if (doc == NULL) {
		e->lease[0] = '\0';
		return -1;
	}
	fprintf(stderr, "replica: registered %s (lease %s, ttl %us)\n",
	    e->keytext, e->lease, e->ttl);
	return 0;
}

static void
replica_etcd_tick(evutil_socket_t fd, short what, void *arg)
{
	struct replica_etcd *e = arg;
	struct timeval tv = { 1, 0 };
	json_t *doc, *ttl = NULL;

	if (e->lease[0] != '\0') {
		doc = replica_etcd_call(e, "/v3/lease/keepalive",
		    json_pack("{s:s}", "ID", e->lease));
		ttl = json_object_get(json_object_get(doc, "result"), "TTL");
		if (doc != NULL && ttl == NULL)
			fprintf(stderr, "replica: lease %s lost: registering "
			    "again\n", e->lease);
		if (ttl == NULL)
			e->lease[0] = '\0';
		json_decref(doc);
	}
	if (e->lease[0] == '\0')
		(void)replica_etcd_put(e);
	if (e->lease[0] != '\0') {
		tv.tv_sec = e->ttl / 3;
		tv.tv_usec = (e->ttl % 3) * 333333;
	}
	evtimer_add(e->timer, &tv);
}

/* The first line of a password file (free()), or NULL. */
static char *
replica_etcd_password(const char *path)
{
	char buf[1024];
	FILE *fp;
	size_t n;

	if ((fp = fopen(path, "r")) == NULL)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return strdup(buf);
}

/* A decimal in lo..hi, or -1. */
static long
replica_etcd_num(const char *v, long lo, long hi)
{
	char *end;
	long n;

	if (*v < '0' || *v > '9')
		return -1;
	n = strtol(v, &end, 10);
	return *end == '\0' && n >= lo && n <= hi ? n : -1;
}

/* One "name=value" of the query into o; -1 when unknown or bad. */
static int
replica_etcd_param(struct replica_etcd_opts *o, char *kv)
{
	char *v = strchr(kv, '=');
	unsigned long ttl;

	if (v == NULL)
		return -1;
	*v++ = '\0';
	if (strcmp(kv, "ttl") == 0) {
		if ((ttl = strtoul(v, NULL, 10)) < 2 || ttl > 3600)
			return -1;
		o->ttl = (unsigned)ttl;
	} else if (strcmp(kv, "weight") == 0) {
		/* The replica's share of its deployment (ingressd's
		 * balance): 1..65535; priority 0..65535, lower first. */
		if ((o->weight = replica_etcd_num(v, 1, 65535)) == -1)
			return -1;
	} else if (strcmp(kv, "priority") == 0) {
		if ((o->priority = replica_etcd_num(v, 0, 65535)) == -1)
			return -1;
	} else if (strcmp(kv, "ca") == 0)
		o->ca = v;
	else if (strcmp(kv, "cert") == 0)
		o->cert = v;
	else if (strcmp(kv, "key") == 0)
		o->key = v;
	else if (strcmp(kv, "server_name") == 0)
		o->server_name = v;
	else if (strcmp(kv, "user") == 0)
		o->user = v;
	else if (strcmp(kv, "password_file") == 0)
		o->password_file = v;
	else
		return -1;
	return 0;
}

/* "etcd[s]://IP:PORT[,IP:PORT]/PREFIX[?ttl=N&weight=W&priority=P&ca=F&
 * cert=F&key=F&server_name=N&user=U&password_file=F]"; o's strings point
 * into q. */
static int
replica_etcd_parse(struct replica_etcd *e, const char *url, char *prefix,
    size_t plen, char *q, size_t qlen, struct replica_etcd_opts *o)
{
	const char *p, *slash, *qm;
	char *hosts, *h, *save;
	size_t skip = strncmp(url, "etcds://", 8) == 0 ? 8 : 7;

	o->https = skip == 8;
	if ((skip == 7 && strncmp(url, "etcd://", 7) != 0) ||
	    (slash = strchr(url + skip, '/')) == NULL || slash == url + skip)
		return -1;
	if ((hosts = strndup(url + skip, (size_t)(slash - url - skip))) ==
	    NULL)
		return -1;
	for (h = strtok_r(hosts, ",", &save); h != NULL &&
	    e->nendpoints < ETCD_MAX_ENDPOINTS; h = strtok_r(NULL, ",", &save))
		e->endpoints[e->nendpoints++] = strdup(h);
	free(hosts);
	p = slash;
	qm = strchr(p, '?');
	snprintf(prefix, plen, "%.*s", (int)(qm != NULL ? qm - p : (long)
	    strlen(p)), p);
	while (strlen(prefix) > 1 && prefix[strlen(prefix) - 1] == '/')
		prefix[strlen(prefix) - 1] = '\0';
	o->ttl = ETCD_DEFAULT_TTL;
	o->weight = o->priority = -1;
	snprintf(q, qlen, "%s", qm != NULL ? qm + 1 : "");
	for (h = strtok_r(q, "&", &save); h != NULL; h = strtok_r(NULL, "&",
	    &save))
		if (replica_etcd_param(o, h) == -1)
			return -1;
	e->ttl = o->ttl;
	return e->nendpoints > 0 && (o->ca == NULL || o->https) &&
	    (o->cert == NULL) == (o->key == NULL) ? 0 : -1;
}

/* The TLS context and credentials the query named. */
static int
replica_etcd_peer(struct replica_etcd *e, struct replica_etcd_opts *o,
    char *err, size_t errlen)
{
	char *pw = NULL;

	if (o->password_file != NULL && (pw = replica_etcd_password(
	    o->password_file)) == NULL) {
		snprintf(err, errlen, "--register: %s: cannot read",
		    o->password_file);
		return -1;
	}
	e->peer = etcd_peer_new(o->https, o->ca, o->cert, o->key,
	    o->server_name, o->user, pw, err, errlen);
	if (pw != NULL)
		explicit_bzero(pw, strlen(pw));
	free(pw);
	return e->peer != NULL ? 0 : -1;
}

struct replica_etcd *
replica_etcd_register(struct replica *r, const char *url, char *err,
    size_t errlen)
{
	struct replica_etcd *e;
	struct replica_etcd_opts o;
	char prefix[256], q[1024], *value;
	json_t *v;

	memset(&o, 0, sizeof(o));
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return NULL;
	if (replica_etcd_parse(e, url, prefix, sizeof(prefix), q, sizeof(q),
	    &o) == -1 || *replica_deployment(r) == '\0') {
		snprintf(err, errlen, "--register: %s", *replica_deployment(r) ==
		    '\0' ? "needs --deployment NAME" : "must be "
		    "etcd[s]://IP:PORT/PREFIX[?ttl=2..3600&weight=1..65535&"
		    "priority=0..65535&ca=FILE&cert=FILE&key=FILE&"
		    "server_name=NAME&user=U&password_file=FILE]");
		replica_etcd_unregister(e);
		return NULL;
	}
	if (replica_etcd_peer(e, &o, err, errlen) == -1) {
		replica_etcd_unregister(e);
		return NULL;
	}
	snprintf(e->keytext, sizeof(e->keytext), "%s/deployments/%s/"
	    "replicas/%s", prefix, replica_deployment(r), replica_id(r));
	v = json_pack("{s:s}", "address", replica_address(r));
	if (v != NULL && o.weight != -1)
		json_object_set_new(v, "weight", json_integer(o.weight));
	if (v != NULL && o.priority != -1)
		json_object_set_new(v, "priority", json_integer(o.priority));
	value = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	e->key = b64_encode(e->keytext, strlen(e->keytext));
	e->value = value != NULL ? b64_encode(value, strlen(value)) : NULL;
	free(value);
	e->timer = evtimer_new(replica_base(r), replica_etcd_tick, e);
	if (e->key == NULL || e->value == NULL || e->timer == NULL) {
		snprintf(err, errlen, "out of memory");
		replica_etcd_unregister(e);
		return NULL;
	}
	replica_etcd_tick(-1, 0, e);
	return e;
}

void
replica_etcd_unregister(struct replica_etcd *e)
{
	unsigned i;

	if (e == NULL)
		return;
	if (e->lease[0] != '\0') {
		json_decref(replica_etcd_call(e, "/v3/lease/revoke",
		    json_pack("{s:s}", "ID", e->lease)));
		fprintf(stderr, "replica: unregistered %s\n", e->keytext);
	}
	if (e->timer != NULL)
		event_free(e->timer);
	for (i = 0; i < e->nendpoints; i++)
		free(e->endpoints[i]);
	etcd_peer_free(e->peer);
	free(e->key);
	free(e->value);
	free(e);
}
