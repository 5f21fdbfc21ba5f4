/*
 * admin.c -- the /-/ endpoints (see admin.h).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admin.h"
#include "conf.h"
#include "http1.h"
#include "metrics.h"
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

		o = json_pack("{s:s, s:s, s:b}", "prefix", rt->prefix,
		    "deployment", rt->deployment, "strip_prefix",
		    rt->strip_prefix);
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

int
admin_handle(struct worker *w, const struct http1_request *r, int admin,
    char **body, size_t *len, const char **ctype)
{
	*body = NULL;
	*len = 0;
	*ctype = "application/json";
	if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0)
		return 405;
	if (admin_path_is(r, "/-/healthz")) {
		if ((*body = strdup("ok\n")) == NULL)
			return 500;
		*len = 3;
		*ctype = "text/plain";
		return 200;
	}
	if (admin_path_is(r, "/-/routes"))
		return admin_json(admin_routes_json(worker_conf(w)), body, len);
	if (admin_path_is(r, "/-/deployments"))
		return admin_json(registry_status_json(worker_registry(w)),
		    body, len);
	/* Metrics only where operators look: not on the public listeners. */
	if (admin && (admin_path_is(r, "/-/metrics") ||
	    admin_path_is(r, "/metrics"))) {
		if ((*body = metrics_render(worker_registry(w), len)) == NULL)
			return 500;
		*ctype = "text/plain; version=0.0.4; charset=utf-8";
		return 200;
	}
	return 404;
}
