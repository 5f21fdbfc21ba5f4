/*
 * admin.c -- the /-/ endpoints (see admin.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "admin.h"
#include "conf.h"
#include "etcd_kv.h"
#include "http1.h"
#include "metrics.h"
#include "ready.h"
#include "registry.h"
#include "worker.h"

int
admin_is_admin_path(const char *path, size_t len, int admin)
{
	/* Prometheus scrapes /metrics by convention: on the admin listener
	 * only, where it cannot shadow a public route. */
	if (admin && len == 8 && memcmp(path, "/metrics", 8) == 0)
		return 1;
	return len >= 3 && memcmp(path, "/-/", 3) == 0;
}

static int
admin_path_is(const struct http1_request *r, const char *path)
{
	return r->path_len == strlen(path) &&
	    memcmp(r->target, path, r->path_len) == 0;
}

static json_t *
admin_routes_json(const struct conf *conf)
{
	json_t *a = json_array(), *o;
	unsigned i;

	for (i = 0; a != NULL && i < conf->nroutes; i++) {
		const struct conf_route *rt = &conf->routes[i];

		o = json_pack("{s:s, s:b}", "prefix", rt->prefix,
		    "strip_prefix", rt->strip_prefix);
		if (o != NULL && rt->from == CONF_FROM_CONF)
			json_object_set_new(o, "deployment",
			    json_string(rt->deployment));
		else if (o != NULL && rt->from == CONF_FROM_PATH)
			json_object_set_new(o, "deployment_from",
			    json_string("path"));
		else if (o != NULL)
			json_object_set_new(o, "deployment_from",
			    json_sprintf("header:%s", rt->from_header));
		if (o != NULL && rt->host != NULL)
			json_object_set_new(o, "host", json_string(rt->host));
		json_array_append_new(a, o);
	}
	return a;
}

static int
admin_json(json_t *doc, char **body, size_t *len)
{
	if (doc == NULL)
		return 500;
	*body = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(doc);
	if (*body == NULL)
		return 500;
	*len = strlen(*body);
	return 200;
}

/* {"error": "..."} with the status. */
static int
admin_error(int status, const char *msg, char **body, size_t *len)
{
	if (admin_json(json_pack("{s:s}", "error", msg), body, len) != 200)
		return 500;
	return status;
}

/*
 * "/-/deployments/NAME" (id NULL) or "/-/deployments/NAME/replicas/ID":
 * 1 and the parts copied out, or 0 when the path is neither.
 */
static int
admin_names_path(const struct http1_request *r, char *name, size_t namelen,
    char *id, size_t idlen, int *has_id)
{
	static const char pre[] = "/-/deployments/", mid[] = "/replicas/";
	const char *p = r->target + sizeof(pre) - 1;
	const char *end = r->target + r->path_len, *slash;
	size_t n;

	if (r->path_len <= sizeof(pre) - 1 ||
	    memcmp(r->target, pre, sizeof(pre) - 1) != 0)
		return 0;
	if ((slash = memchr(p, '/', (size_t)(end - p))) == NULL)
		slash = end;
	if ((n = (size_t)(slash - p)) == 0 || n >= namelen)
		return 0;
	memcpy(name, p, n);
	name[n] = '\0';
	*has_id = slash != end;
	if (!*has_id)
		return 1;
	p = slash;
	if ((size_t)(end - p) <= sizeof(mid) - 1 ||
	    memcmp(p, mid, sizeof(mid) - 1) != 0)
		return 0;
	p += sizeof(mid) - 1;
	if ((n = (size_t)(end - p)) >= idlen || memchr(p, '/', n) != NULL)
		return 0;
	memcpy(id, p, n);
	id[n] = '\0';
	return 1;
}

static const int admin_reg_status[] = {
	[REG_OK] = 200, [REG_UNCHANGED] = 200, [REG_EINVAL] = 400,
	[REG_ECONFLICT] = 409, [REG_ENOENT] = 404, [REG_EBUSY] = 503,
	[REG_ENOMEM] = 500,
};

static int
admin_int_in(json_t *v, json_int_t lo, json_int_t hi)
{
	return json_is_integer(v) && json_integer_value(v) >= lo &&
	    json_integer_value(v) <= hi;
}

/* One key of the PUT body into rep: NULL, or what is wrong with it. */
static const char *
admin_put_key(const char *key, json_t *v, struct reg_replica *rep)
{
	const char *s = json_string_value(v);

	if (strcmp(key, "address") == 0) {
		if (s == NULL)
			return "must be a string";
		rep->address = s;
	} else if (strcmp(key, "protocol") == 0) {
		if (s == NULL || (strcmp(s, "wire") != 0 &&
		    strcmp(s, "http") != 0 && strcmp(s, "h2c") != 0))
			return "must be \"wire\", \"http\" or \"h2c\"";
		rep->protocol = s;
	} else if (strcmp(key, "max_ongoing_requests") == 0) {
		if (!admin_int_in(v, 1, 100000))
			return "must be an integer in 1..100000";
		rep->max_ongoing = (unsigned)json_integer_value(v);
	} else if (strcmp(key, "weight") == 0) {
		/* 0 is DNS SRV's "a very small share" only: a replica meant
		 * as a backup takes a higher priority. */
		if (!admin_int_in(v, 1, 65535))
			return "must be an integer in 1..65535";
		rep->share.weight = (uint16_t)json_integer_value(v);
	} else if (strcmp(key, "priority") == 0) {
		if (!admin_int_in(v, 0, 65535))
			return "must be an integer in 0..65535 (lower is "
			    "preferred)";
		rep->share.priority = (uint16_t)json_integer_value(v);
	} else
		return "unknown key";
	return NULL;
}

/* The PUT body: {"address": "...", "max_ongoing_requests": N,
 * "protocol": "wire" | "http" | "h2c", "weight": W, "priority": P}; the
 * strings point into *doc. */
static int
admin_put_body(const char *reqbody, size_t reqlen, struct reg_replica *rep,
    json_t **doc, char *err, size_t errlen)
{
	json_error_t jerr;
	const char *key, *why;
	json_t *v;

	memset(rep, 0, sizeof(*rep));
	rep->protocol = "wire";
	rep->max_ongoing = 100;
	rep->share.weight = REG_WEIGHT_DEFAULT;
	rep->share.priority = REG_PRIORITY_DEFAULT;
	if ((*doc = json_loadb(reqbody != NULL ? reqbody : "", reqlen,
	    JSON_REJECT_DUPLICATES, &jerr)) == NULL) {
		snprintf(err, errlen, "body: %d:%d: %s", jerr.line,
		    jerr.column, jerr.text);
		return -1;
	}
	if (!json_is_object(*doc)) {
		snprintf(err, errlen, "body: must be a JSON object");
		return -1;
	}
	json_object_foreach(*doc, key, v) {
		if ((why = admin_put_key(key, v, rep)) != NULL) {
			snprintf(err, errlen, "body: %s: %s", key, why);
			return -1;
		}
	}
	if (rep->address == NULL) {
		snprintf(err, errlen, "body: address: required key missing");
		return -1;
	}
	return 0;
}

/*
 * registry.etcd: write the registration through to etcd first, so it
 * reaches every instance (their watches apply it; this one's too, and
 * the local change below is then already made).  0, or the status.
 */
static int
admin_etcd_put(struct worker *w, const char *name, const char *id,
    const struct reg_replica *rep, char **body, size_t *len)
{
	const struct conf_etcd *e = &worker_conf(w)->etcd;
	char err[512], *key, *value;
	enum reg_result rv;
	json_t *doc;
	int rc;

	if (e->nendpoints == 0)
		return 0;
	if ((rv = registry_register_ok(worker_registry(w), name, id,
	    rep->address, err, sizeof(err))) != REG_OK)
		return admin_error(admin_reg_status[rv], err, body, len);
	key = etcd_kv_key(e->prefix, name, id);
	doc = json_pack("{s:s, s:i, s:s, s:i, s:i}", "address", rep->address,
	    "max_ongoing_requests", (int)rep->max_ongoing, "protocol",
	    rep->protocol, "weight", (int)rep->share.weight, "priority",
	    (int)rep->share.priority);
	value = doc != NULL ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) :
	    NULL;
	json_decref(doc);
	rc = key != NULL && value != NULL ? etcd_kv_put(e, key, value, err,
	    sizeof(err)) : -1;
	if (key == NULL || value == NULL)
		snprintf(err, sizeof(err), "out of memory");
	free(key);
	free(value);
	return rc == 0 ? 0 : admin_error(503, err, body, len);
}

/* The delete, through to etcd: 0 (go on locally), or the status. */
static int
admin_etcd_delete(struct worker *w, const char *name, const char *id,
    int *in_etcd, char **body, size_t *len)
{
	const struct conf_etcd *e = &worker_conf(w)->etcd;
	char err[512], *key;
	int rc;

	*in_etcd = 0;
	if (e->nendpoints == 0)
		return 0;
	if ((key = etcd_kv_key(e->prefix, name, id)) == NULL)
		return 500;
	rc = etcd_kv_delete(e, key, err, sizeof(err));
	free(key);
	if (rc == -1)
		return admin_error(503, err, body, len);
	*in_etcd = rc;
	return 0;
}

static int
admin_register(struct worker *w, const char *name, const char *id,
    const char *reqbody, size_t reqlen, char **body, size_t *len)
{
	struct reg_replica rep;
	json_t *doc;
	enum reg_result rv;
	unsigned version;
	char err[512];
	int rc;

	if (admin_put_body(reqbody, reqlen, &rep, &doc, err,
	    sizeof(err)) == -1) {
		json_decref(doc);
		return admin_error(400, err, body, len);
	}
	if ((rc = admin_etcd_put(w, name, id, &rep, body, len)) != 0) {
		json_decref(doc);
		return rc;
	}

	rv = registry_register_replica(worker_registry(w), name, id, &rep,
	    &version, err, sizeof(err));
	if (rv != REG_OK && rv != REG_UNCHANGED) {
		json_decref(doc);
		return admin_error(admin_reg_status[rv], err, body, len);
	}
	rc = admin_json(json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, "
	    "s:b}", "deployment", name, "replica", id, "address",
	    rep.address, "protocol", rep.protocol, "max_ongoing_requests",
	    (int)rep.max_ongoing, "weight", (int)rep.share.weight,
	    "priority", (int)rep.share.priority, "version", (int)version,
	    "changed", rv == REG_OK), body, len);
	json_decref(doc);
	return rc == 200 ? 200 : 500;
}

static int
admin_unregister(struct worker *w, const char *name, const char *id,
    char **body, size_t *len)
{
	enum reg_result rv;
	unsigned version;
	char err[512];
	int rc, in_etcd;

	if ((rc = admin_etcd_delete(w, name, id, &in_etcd, body, len)) != 0)
		return rc;
	rv = registry_unregister(worker_registry(w), name, id, &version, err,
	    sizeof(err));
	/* Gone from etcd but not (or no longer) here: this instance's watch
	 * took it out first. */
	if (rv == REG_ENOENT && in_etcd)
		rv = REG_OK;
	if (rv != REG_OK)
		return admin_error(admin_reg_status[rv], err, body, len);
	return admin_json(json_pack("{s:s, s:s, s:i, s:b}", "deployment",
	    name, "replica", id, "version", (int)version, "removed", 1), body,
	    len);
}

/*
 * /-/deployments/NAME[/replicas/ID]: -1 when the path is not one of
 * these, else the status.
 */
static int
admin_names(struct worker *w, const struct http1_request *r, int admin,
    const char *reqbody, size_t reqlen, char **body, size_t *len)
{
	char name[256], id[64];
	json_t *o;
	int has_id, put, del;

	if (!admin_names_path(r, name, sizeof(name), id, sizeof(id), &has_id))
		return -1;
	put = strcmp(r->method, "PUT") == 0;
	del = strcmp(r->method, "DELETE") == 0;
	if (!has_id) {
		if (strcmp(r->method, "GET") != 0 &&
		    strcmp(r->method, "HEAD") != 0)
			return 405;
		if ((o = registry_name_json(worker_registry(w), name)) == NULL)
			return admin_error(404, "no such deployment", body,
			    len);
		return admin_json(o, body, len);
	}
	if (!put && !del)
		return 405;
	if (!admin)
		return admin_error(403, "registration is served on the admin "
		    "listener only", body, len);
	if (put)
		return admin_register(w, name, id, reqbody, reqlen, body, len);
	return admin_unregister(w, name, id, body, len);
}

/*
 * The /-/ namespace is reserved on every listener.  A public listener
 * serves only the probes there, unless admin_on_public exposes the admin
 * pages too; anything else under /-/ is a 404, as if it did not exist.
 */
static int
admin_is_probe(const struct http1_request *r)
{
	return admin_path_is(r, "/-/healthz") || admin_path_is(r, "/-/ready");
}

/* Open whatever admin_token_file says: probes and the scraper. */
static int
admin_is_open(const struct http1_request *r)
{
	return admin_is_probe(r) || admin_path_is(r, "/metrics") ||
	    admin_path_is(r, "/-/metrics");
}

/*
 * "Authorization: Bearer TOKEN" against admin_token_file's token.  The
 * compare walks the whole expected token whatever was sent and folds
 * every difference into one byte, so its time tells nothing about how
 * much of a guess was right.
 */
static int
admin_authorized(const char *token, const struct http1_request *r)
{
	const struct http1_field *fl, *auth = NULL;
	const char *v;
	size_t vlen, tlen = strlen(token), i;
	unsigned char diff;
	unsigned k;

	for (k = 0; k < r->nfields; k++) {
		fl = &r->fields[k];
		if (fl->name_len != 13 ||
		    strncasecmp(fl->name, "authorization", 13) != 0)
			continue;
		if (auth != NULL)
			return 0;	/* two: ambiguous, refused */
		auth = fl;
	}
	if (auth == NULL || auth->value_len < 7 ||
	    strncasecmp(auth->value, "Bearer ", 7) != 0)
		return 0;
	v = auth->value + 7;
	vlen = auth->value_len - 7;
	diff = vlen != tlen;
	for (i = 0; i < tlen; i++)
		diff |= (unsigned char)token[i] ^
		    (unsigned char)(i < vlen ? v[i] : 0);
	return diff == 0;
}

/* GET /-/ready: "ready", or 503 and the first reason it is not. */
static int
admin_ready(struct worker *w, char **body, size_t *len, const char **ctype)
{
	char why[320];
	int ok = ready_check(w, why, sizeof(why));

	*ctype = "text/plain; charset=utf-8";
	if (ok)
		*body = strdup("ready\n");
	else if (asprintf(body, "not ready: %s\n", why) == -1)
		*body = NULL;
	if (*body == NULL)
		return 500;
	*len = strlen(*body);
	return ok ? 200 : 503;
}

/* Who may see this page here: 0 to go on, else the status to answer. */
static int
admin_gate(struct worker *w, const struct http1_request *r, int admin,
    char **body, size_t *len)
{
	const struct conf *conf = worker_conf(w);

	if (!admin && !conf->admin_on_public && !admin_is_probe(r))
		return 404;
	if (conf->admin_token != NULL && !admin_is_open(r) &&
	    !admin_authorized(conf->admin_token, r))
		return admin_error(401, "this admin page needs "
		    "\"Authorization: Bearer TOKEN\" (admin_token_file)", body,
		    len);
	return 0;
}

int
admin_handle(struct worker *w, const struct http1_request *r, int admin,
    const char *reqbody, size_t reqlen, char **body, size_t *len,
    const char **ctype)
{
	int status;

	*body = NULL;
	*len = 0;
	*ctype = "application/json";
	if ((status = admin_gate(w, r, admin, body, len)) != 0)
		return status;
	if ((status = admin_names(w, r, admin, reqbody, reqlen, body,
	    len)) != -1)
		return status;
	if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0)
		return 405;
	if (admin_path_is(r, "/-/healthz")) {
		if ((*body = strdup("ok\n")) == NULL)
			return 500;
		*len = 3;
		*ctype = "text/plain";
		return 200;
	}
	if (admin_path_is(r, "/-/ready"))
		return admin_ready(w, body, len, ctype);
	if (admin_path_is(r, "/-/routes"))
		return admin_json(admin_routes_json(worker_conf(w)), body, len);
	if (admin_path_is(r, "/-/deployments"))
		return admin_json(registry_status_json(worker_registry(w)),
		    body, len);
	/* Metrics only where operators look: not on the public listeners. */
	if (admin && (admin_path_is(r, "/-/metrics") ||
	    admin_path_is(r, "/metrics"))) {
		if ((*body = metrics_render(worker_registry(w), worker_conns(),
		    len)) == NULL)
			return 500;
		*ctype = "text/plain; version=0.0.4; charset=utf-8";
		return 200;
	}
	return 404;
}
