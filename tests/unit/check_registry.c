/*
 * check_registry.c -- registry_reload: what a reload keeps, changes, adds
 * and removes; spawn socket generations; a failed reload changes nothing.
 * Confs are written to a file and loaded with conf_load, as the daemon does.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "conf.h"
#include "registry.h"
#include "registry_publish.h"

static char	tmpdir[] = "/tmp/check_registry.XXXXXX";
static char	path[256];

static void
setup(void)
{
	if (mkdtemp(tmpdir) == NULL)
		abort();
	snprintf(path, sizeof path, "%s/c.json", tmpdir);
}

static void
teardown(void)
{
	unlink(path);
	rmdir(tmpdir);
}

/* A conf with deployments DEPS (a JSON object body) and no routes. */
static struct conf *
load(const char *deps)
{
	struct conf	*conf;
	char		 err[1024];
	FILE		*fp;

	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fprintf(fp, "{\"routes\": [], \"deployments\": {%s}}", deps);
	ck_assert_int_eq(fclose(fp), 0);
	conf = conf_load(path, err, sizeof err);
	ck_assert_msg(conf != NULL, "%s", err);
	return (conf);
}

static struct reg_deployment *
find(struct registry *r, const char *name)
{
	struct reg_deployment	*d;
	unsigned		 i;

	for (i = 0; (d = registry_deployment(r, i)) != NULL; i++) {
		if (strcmp(reg_deployment_name(d), name) == 0)
			return (d);
	}
	return (NULL);
}

/* A registry filled from conf, as the daemon makes it at start. */
static struct registry *
reg_new(const struct conf *conf, unsigned nworkers, const char *dir,
    char *err, size_t errlen)
{
	struct registry		*r;
	struct reg_change	*ch;
	unsigned		 n;

	if ((r = registry_new(nworkers, dir)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return (NULL);
	}
	if (registry_reload(r, conf, &ch, &n, err, errlen) == -1) {
		registry_free(r);
		return (NULL);
	}
	registry_changes_free(ch, n);
	return (r);
}

/* The change for name in the list: its kind, or -1 if none. */
static int
change_of(const struct reg_change *ch, unsigned n, const char *name)
{
	unsigned	i;

	for (i = 0; i < n; i++) {
		if (strcmp(ch[i].name, name) == 0)
			return ((int)ch[i].kind);
	}
	return (-1);
}

#define SPAWN(n, cmd)	"{\"spawn\": {\"command\": [\"" cmd "\"], " \
			"\"replicas\": " #n "}}"

START_TEST(test_reload_kinds)
{
	struct conf		*c1, *c2;
	struct registry		*r;
	struct reg_change	*ch;
	struct reg_deployment	*echo, *api, *gone;
	struct reg_endpoint	*ep0, *api0;
	struct reg_lookup	 lk;
	unsigned		 n;
	char			 err[512], want[512];

	c1 = load("\"echo\": " SPAWN(2, "/bin/echo") ", "
	    "\"api\": {\"endpoints\": [\"127.0.0.1:9001\"]}, "
	    "\"gone\": {\"endpoints\": [\"127.0.0.1:9002\"]}");
	r = reg_new(c1, 2, tmpdir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_uint_eq(registry_ndeployments(r), 3);
	echo = find(r, "echo");
	api = find(r, "api");
	gone = find(r, "gone");
	ep0 = reg_deployment_endpoint(echo, 0);
	api0 = reg_deployment_endpoint(api, 0);
	snprintf(want, sizeof want, "unix:%s/echo-0.sock", tmpdir);
	ck_assert_str_eq(ep0->addr.text, want);
	ck_assert_str_eq(ep0->id, "echo-0");

	/* The same conf again: nothing changes. */
	ck_assert_int_eq(registry_reload(r, c1, &ch, &n, err, sizeof err), 0);
	ck_assert_uint_eq(n, 0);
	registry_changes_free(ch, n);

	/* echo scales to 3, api's queue changes, gone goes, new comes. */
	c2 = load("\"echo\": " SPAWN(3, "/bin/echo") ", "
	    "\"api\": {\"endpoints\": [\"127.0.0.1:9001\"], \"queue\": 5}, "
	    "\"new\": {\"endpoints\": [\"127.0.0.1:9001\", "
	    "\"127.0.0.1:9003\"]}");
	ck_assert_int_eq(registry_reload(r, c2, &ch, &n, err, sizeof err), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(change_of(ch, n, "echo"), REG_CHANGED);
	ck_assert_int_eq(change_of(ch, n, "api"), REG_CHANGED);
	ck_assert_int_eq(change_of(ch, n, "new"), REG_ADDED);
	ck_assert_int_eq(change_of(ch, n, "gone"), REG_REMOVED);
	registry_changes_free(ch, n);

	/* Same objects for kept names; the sockets that stay are kept. */
	ck_assert_ptr_eq(find(r, "echo"), echo);
	ck_assert_ptr_eq(find(r, "api"), api);
	ck_assert_ptr_null(find(r, "gone"));
	ck_assert_uint_eq(reg_deployment_nendpoints(echo), 3);
	ck_assert_ptr_eq(reg_deployment_endpoint(echo, 0), ep0);
	ck_assert_str_eq(reg_deployment_endpoint(echo, 2)->id, "echo-2");
	/* An address is one endpoint, whichever deployments use it. */
	ck_assert_ptr_eq(reg_deployment_endpoint(find(r, "new"), 0), api0);

	ck_assert_int_eq(registry_lookup(r, "api", &lk), 0);
	ck_assert_uint_eq(lk.queue_max, 5);
	ck_assert_uint_eq(lk.version, 2);
	ck_assert_ptr_eq(lk.dep, api);
	free(lk.eps);
	ck_assert_int_eq(registry_lookup(r, "gone", &lk), -1);
	/* Still valid for a handle that drains: reading it is safe. */
	ck_assert_str_eq(reg_deployment_name(gone), "gone");

	registry_free(r);
	conf_free(c1);
	conf_free(c2);
}
END_TEST

START_TEST(test_spawn_generations)
{
	struct conf		*c1, *c2, *c3, *c4;
	struct registry		*r;
	struct reg_change	*ch;
	struct reg_deployment	*echo;
	unsigned		 n;
	char			 err[512], want[512];

	c1 = load("\"echo\": " SPAWN(2, "/bin/echo"));
	r = reg_new(c1, 1, tmpdir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	echo = find(r, "echo");

	/* A new command: new sockets, so the old processes can drain. */
	c2 = load("\"echo\": " SPAWN(2, "/bin/cat"));
	ck_assert_int_eq(registry_reload(r, c2, &ch, &n, err, sizeof err), 0);
	ck_assert_int_eq(change_of(ch, n, "echo"), REG_CHANGED);
	registry_changes_free(ch, n);
	snprintf(want, sizeof want, "unix:%s/echo-1.g2.sock", tmpdir);
	ck_assert_str_eq(reg_deployment_endpoint(echo, 1)->addr.text, want);
	ck_assert_str_eq(reg_deployment_endpoint(echo, 1)->id, "echo-1.g2");

	/* Removed, then added again: a generation never used before. */
	c3 = load("");
	ck_assert_int_eq(registry_reload(r, c3, &ch, &n, err, sizeof err), 0);
	ck_assert_int_eq(change_of(ch, n, "echo"), REG_REMOVED);
	registry_changes_free(ch, n);
	c4 = load("\"echo\": " SPAWN(1, "/bin/echo"));
	ck_assert_int_eq(registry_reload(r, c4, &ch, &n, err, sizeof err), 0);
	ck_assert_int_eq(change_of(ch, n, "echo"), REG_ADDED);
	registry_changes_free(ch, n);
	ck_assert_ptr_ne(find(r, "echo"), echo);
	ck_assert_str_eq(reg_deployment_endpoint(find(r, "echo"), 0)->id,
	    "echo-0.g3");

	registry_free(r);
	conf_free(c1);
	conf_free(c2);
	conf_free(c3);
	conf_free(c4);
}
END_TEST

START_TEST(test_failed_reload_changes_nothing)
{
	struct conf		*c1, *c2;
	struct registry		*r;
	struct reg_change	*ch;
	unsigned		 n;
	char			 err[512], dir[300];

	c1 = load("\"api\": {\"endpoints\": [\"127.0.0.1:9001\"]}");
	r = reg_new(c1, 1, tmpdir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	/* A socket path too long for sun_path fails in the plan phase. */
	memset(dir, 'd', sizeof dir);
	memcpy(dir, "/tmp/", 5);
	dir[sizeof dir - 1] = '\0';
	registry_free(r);
	r = reg_new(c1, 1, dir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	c2 = load("\"api\": {\"endpoints\": [\"127.0.0.1:9001\"]}, "
	    "\"echo\": " SPAWN(1, "/bin/echo"));
	ck_assert_int_eq(registry_reload(r, c2, &ch, &n, err, sizeof err), -1);
	ck_assert_msg(strncmp(err, "deployments.echo: bad address", 29) == 0,
	    "%s", err);
	ck_assert_ptr_null(ch);
	ck_assert_uint_eq(registry_ndeployments(r), 1);
	ck_assert_ptr_null(find(r, "echo"));
	registry_free(r);
	conf_free(c1);
	conf_free(c2);
}
END_TEST

START_TEST(test_status_json)
{
	struct conf	*c1;
	struct registry	*r;
	json_t		*doc, *api;
	char		 err[512];

	c1 = load("\"api\": {\"endpoints\": [\"127.0.0.1:9001\"]}");
	r = reg_new(c1, 2, tmpdir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	registry_publish_queued(find(r, "api"), 0, 3);
	registry_publish_queued(find(r, "api"), 1, 4);
	registry_publish_hstate(find(r, "api"), 1, REG_H_READY);
	doc = registry_status_json(r);
	api = json_object_get(doc, "api");
	ck_assert_ptr_nonnull(api);
	ck_assert_int_eq(json_integer_value(json_object_get(api, "queued")), 7);
	ck_assert_str_eq(json_string_value(json_object_get(api, "state")),
	    "ready");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(
	    api, "handles"), "ready")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(api, "version")),
	    1);
	json_decref(doc);
	registry_free(r);
	conf_free(c1);
}
END_TEST

/* One worker ready, another failed: the deployment is ready. */
START_TEST(test_status_best_worker)
{
	struct conf	*c1;
	struct registry	*r;
	json_t		*doc;
	char		 err[512];

	c1 = load("\"api\": {\"endpoints\": [\"127.0.0.1:9001\"]}");
	r = reg_new(c1, 2, tmpdir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	registry_publish_hstate(find(r, "api"), 0, REG_H_READY);
	registry_publish_hstate(find(r, "api"), 1, REG_H_FAILED);
	doc = registry_status_json(r);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc,
	    "api"), "state")), "ready");
	json_decref(doc);
	registry_publish_hstate(find(r, "api"), 0, REG_H_IDLE);
	doc = registry_status_json(r);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc,
	    "api"), "state")), "failed");
	json_decref(doc);
	registry_free(r);
	conf_free(c1);
}
END_TEST

/* What registry_figures showed: names in order, and the last ones seen. */
struct seen {
	char		 names[256];
	unsigned	 calls;
	struct reg_figures f;		/* of "api" or of the one named */
	struct reg_replica_figures rep[2];
	struct reg_replica_figures echo0;
};

static void
saw(void *arg, const struct reg_figures *f)
{
	struct seen	*sn = arg;
	size_t		 len = strlen(sn->names);
	unsigned	 i;

	snprintf(sn->names + len, sizeof sn->names - len, "%s%s",
	    len ? " " : "", f->name);
	sn->calls++;
	if (strcmp(f->name, "echo") == 0) {
		ck_assert_uint_eq(f->nreplicas, 2);
		sn->echo0 = f->replicas[0];
		return;
	}
	sn->f = *f;
	sn->f.replicas = NULL;	/* valid only during the call */
	for (i = 0; i < f->nreplicas && i < 2; i++)
		sn->rep[i] = f->replicas[i];
}

/* The typed figures: per-worker slots summed, states the best of the
 * workers', names in conf order then registered ones. */
START_TEST(test_figures)
{
	struct conf		*c1;
	struct registry		*r;
	struct reg_deployment	*api;
	struct reg_endpoint	*a0, *e0;
	struct reg_lookup	 lk;
	struct seen		 sn;
	unsigned		 v;
	char			 err[512];

	c1 = load("\"echo\": " SPAWN(2, "/bin/echo") ", "
	    "\"api\": {\"endpoints\": [\"127.0.0.1:9001\", "
	    "\"127.0.0.1:9002\"]}, "
	    "\"dn\": {\"dns\": \"localhost:80\"}");
	r = reg_new(c1, 2, tmpdir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_int_eq(registry_register(r, "m1", "a", "127.0.0.1:9100", 4,
	    &v, err, sizeof err), REG_OK);
	api = find(r, "api");
	a0 = reg_deployment_endpoint(api, 0);
	e0 = reg_deployment_endpoint(find(r, "echo"), 0);

	registry_publish_estate(registry_ep_slot(a0, 0), REG_E_READY);
	registry_publish_estate(registry_ep_slot(a0, 1), REG_E_DOWN);
	registry_publish_in_flight(registry_ep_slot(a0, 0), 2);
	registry_publish_in_flight(registry_ep_slot(a0, 1), 3);
	registry_count_request(registry_ep_slot(a0, 0));
	registry_count_request(registry_ep_slot(a0, 1));
	registry_count_request(registry_ep_slot(a0, 1));
	registry_count_ping(registry_ep_slot(a0, 0));
	registry_count_pong(registry_ep_slot(a0, 0));
	registry_count_missed_pong(registry_ep_slot(a0, 1));
	registry_publish_pid(e0, 4242);
	registry_count_restart(e0);
	registry_count_restart(e0);
	registry_publish_queued(api, 0, 1);
	registry_publish_queued(api, 1, 5);
	registry_publish_hstate(api, 0, REG_H_FAILED);
	registry_publish_hstate(api, 1, REG_H_WARMING);
	registry_count_eviction(api);
	ck_assert_int_eq(registry_lookup(r, "api", &lk), 0);
	free(lk.eps);

	memset(&sn, 0, sizeof sn);
	ck_assert_int_eq(registry_figures(r, NULL, saw, &sn), 4);
	ck_assert_str_eq(sn.names, "echo api dn m1");

	memset(&sn, 0, sizeof sn);
	ck_assert_int_eq(registry_figures(r, "api", saw, &sn), 1);
	ck_assert_str_eq(sn.f.source, "endpoints");
	ck_assert_ptr_null(sn.f.dns);
	ck_assert_int_eq(sn.f.state, REG_H_WARMING);
	ck_assert_uint_eq(sn.f.handles[REG_H_FAILED], 1);
	ck_assert_uint_eq(sn.f.handles[REG_H_WARMING], 1);
	ck_assert_uint_eq(sn.f.handles[REG_H_READY], 0);
	ck_assert_uint_eq(sn.f.queued, 6);
	ck_assert_uint_eq(sn.f.resolutions, 1);
	ck_assert_uint_eq(sn.f.evictions, 1);
	ck_assert_uint_eq(sn.f.version, 1);
	ck_assert_uint_eq(sn.f.nreplicas, 2);
	ck_assert_str_eq(sn.rep[0].address, "127.0.0.1:9001");
	ck_assert_int_eq(sn.rep[0].state, REG_E_READY);
	ck_assert_uint_eq(sn.rep[0].in_flight, 5);
	ck_assert_uint_eq(sn.rep[0].requests, 3);
	ck_assert_uint_eq(sn.rep[0].pings, 1);
	ck_assert_uint_eq(sn.rep[0].pongs, 1);
	ck_assert_uint_eq(sn.rep[0].missed_pongs, 1);
	ck_assert_int_eq(sn.rep[0].pid, 0);
	ck_assert_int_eq(sn.rep[0].spawned, 0);
	ck_assert_int_eq(sn.rep[1].state, REG_E_IDLE);
	ck_assert_uint_eq(sn.rep[1].requests, 0);

	memset(&sn, 0, sizeof sn);
	ck_assert_int_eq(registry_figures(r, "echo", saw, &sn), 1);
	ck_assert_str_eq(sn.echo0.id, "echo-0");
	ck_assert_int_eq(sn.echo0.pid, 4242);
	ck_assert_int_eq(sn.echo0.spawned, 1);
	ck_assert_uint_eq(sn.echo0.restarts, 2);

	memset(&sn, 0, sizeof sn);
	ck_assert_int_eq(registry_figures(r, "dn", saw, &sn), 1);
	ck_assert_str_eq(sn.f.source, "dns");
	ck_assert_str_eq(sn.f.dns, "localhost:80");

	memset(&sn, 0, sizeof sn);
	ck_assert_int_eq(registry_figures(r, "m1", saw, &sn), 1);
	ck_assert_str_eq(sn.f.source, "register");
	ck_assert_str_eq(sn.rep[0].id, "a");
	ck_assert_str_eq(sn.rep[0].address, "127.0.0.1:9100");

	memset(&sn, 0, sizeof sn);
	ck_assert_int_eq(registry_figures(r, "nope", saw, &sn), 0);
	ck_assert_uint_eq(sn.calls, 0);
	registry_free(r);
	conf_free(c1);
}
END_TEST

/* A replica is as good as its best connection: ready > warming >
 * connecting > down > idle. */
START_TEST(test_estate_rank)
{
	static const enum reg_estate order[] = {
		REG_E_IDLE, REG_E_DOWN, REG_E_CONNECTING, REG_E_WARMING,
		REG_E_READY,
	};
	unsigned	i;

	for (i = 1; i < sizeof order / sizeof order[0]; i++)
		ck_assert_int_gt(registry_estate_rank(order[i]),
		    registry_estate_rank(order[i - 1]));
	ck_assert_str_eq(registry_estate_str(REG_E_READY), "ready");
	ck_assert_str_eq(registry_estate_str(REG_E_DOWN), "down");
	ck_assert_str_eq(registry_estate_str(REG_E_NSTATES), "?");
	ck_assert_str_eq(registry_estate_str(-1), "?");
}
END_TEST

/* What the notify hook heard: "kind:name" lines. */
static char	heard[4096];

static void
hear(void *arg, const struct reg_change *ch, unsigned n)
{
	unsigned	i;
	size_t		len;

	for (i = 0; i < n; i++) {
		len = strlen(heard);
		snprintf(heard + len, sizeof heard - len, "%d:%s\n",
		    (int)ch[i].kind, ch[i].name);
	}
	(*(int *)arg)++;
}

/* A lookup's endpoint addresses, joined with spaces ("" if none). */
static const char *
addrs_of(struct registry *r, const char *name)
{
	static char		 buf[1024];
	struct reg_lookup	 lk;
	unsigned		 i;
	size_t			 len;

	buf[0] = '\0';
	if (registry_lookup(r, name, &lk) == -1)
		return ("(unknown)");
	for (i = 0; i < lk.neps; i++) {
		len = strlen(buf);
		snprintf(buf + len, sizeof buf - len, "%s%s", i ? " " : "",
		    lk.eps[i]->addr.text);
	}
	free(lk.eps);
	return (buf);
}

START_TEST(test_register)
{
	struct conf		*c1, *c2;
	struct registry		*r;
	struct reg_change	*ch;
	struct reg_lookup	 lk;
	struct reg_endpoint	*ep;
	unsigned		 n, v;
	char			 err[512];
	int			 calls = 0;
	json_t			*doc, *m;

	c1 = load("\"api\": {\"endpoints\": [\"127.0.0.1:9001\"]}");
	r = reg_new(c1, 2, tmpdir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	registry_set_notify(r, hear, &calls);
	heard[0] = '\0';

	/* A name without a conf entry; the address api uses is shared. */
	ck_assert_int_eq(registry_register(r, "m1", "a", "127.0.0.1:9001", 7,
	    &v, err, sizeof err), REG_OK);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(registry_lookup(r, "m1", &lk), 0);
	ck_assert_uint_eq(lk.neps, 1);
	ck_assert_ptr_eq(lk.eps[0], reg_deployment_endpoint(find(r, "api"),
	    0));
	ck_assert_uint_eq(lk.eps[0]->max_ongoing, 7);
	ck_assert_uint_eq(lk.queue_max, 1024);
	ck_assert_double_eq(lk.queue_timeout, 0);	/* the conf's */
	ep = lk.eps[0];
	free(lk.eps);
	/* Registered names are not conf deployments. */
	ck_assert_uint_eq(registry_ndeployments(r), 1);
	ck_assert_ptr_null(find(r, "m1"));

	/* The same again changes nothing and pushes nothing. */
	ck_assert_int_eq(registry_register(r, "m1", "a", "127.0.0.1:9001", 7,
	    &v, err, sizeof err), REG_UNCHANGED);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(registry_register(r, "m1", "b",
	    "unix:/tmp/m1-b.sock", 100, &v, err, sizeof err), REG_OK);
	ck_assert_uint_eq(v, 2);
	ck_assert_str_eq(addrs_of(r, "m1"),
	    "127.0.0.1:9001 unix:/tmp/m1-b.sock");
	/* A replica that moves keeps its place. */
	ck_assert_int_eq(registry_register(r, "m1", "a", "127.0.0.1:9005", 7,
	    &v, err, sizeof err), REG_OK);
	ck_assert_str_eq(addrs_of(r, "m1"),
	    "127.0.0.1:9005 unix:/tmp/m1-b.sock");
	ck_assert_int_eq(calls, 3);
	ck_assert_str_eq(heard, "0:m1\n1:m1\n1:m1\n");

	/* Refused: bad input, a name the conf owns, unknown replicas. */
	ck_assert_int_eq(registry_register(r, "a b", "a", "127.0.0.1:1", 1,
	    &v, err, sizeof err), REG_EINVAL);
	ck_assert_str_eq(err, "bad deployment name (1..255 characters of "
	    "A-Z a-z 0-9 . _ -)");
	ck_assert_int_eq(registry_register(r, "m1", "a/b", "127.0.0.1:1", 1,
	    &v, err, sizeof err), REG_EINVAL);
	ck_assert_str_eq(err, "bad replica id (1..63 characters of A-Z a-z "
	    "0-9 . _ -)");
	ck_assert_int_eq(registry_register(r, "m1", "c", "replica.example:1",
	    1, &v, err, sizeof err), REG_EINVAL);
	ck_assert_int_eq(registry_register(r, "m1", "c", "127.0.0.1:99999",
	    1, &v, err, sizeof err), REG_EINVAL);
	ck_assert_str_eq(err, "bad address \"127.0.0.1:99999\": port out of "
	    "range (must be IP:PORT, [IPv6]:PORT or unix:PATH)");
	ck_assert_int_eq(registry_register(r, "api", "c", "127.0.0.1:1", 1,
	    &v, err, sizeof err), REG_ECONFLICT);
	ck_assert_int_eq(registry_unregister(r, "api", "c", &v, err,
	    sizeof err), REG_ECONFLICT);
	ck_assert_int_eq(registry_unregister(r, "m1", "zz", &v, err,
	    sizeof err), REG_ENOENT);
	ck_assert_int_eq(registry_unregister(r, "nope", "a", &v, err,
	    sizeof err), REG_ENOENT);
	ck_assert_int_eq(calls, 3);

	/* The last replica goes: so does the name, until it comes back. */
	heard[0] = '\0';
	ck_assert_int_eq(registry_unregister(r, "m1", "a", &v, err,
	    sizeof err), REG_OK);
	ck_assert_str_eq(addrs_of(r, "m1"), "unix:/tmp/m1-b.sock");
	ck_assert_int_eq(registry_unregister(r, "m1", "b", &v, err,
	    sizeof err), REG_OK);
	ck_assert_uint_eq(v, 5);
	ck_assert_str_eq(addrs_of(r, "m1"), "(unknown)");
	doc = registry_status_json(r);
	ck_assert_ptr_null(json_object_get(doc, "m1"));
	json_decref(doc);
	ck_assert_ptr_null(registry_name_json(r, "m1"));
	ck_assert_int_eq(registry_register(r, "m1", "a", "127.0.0.1:9001", 3,
	    &v, err, sizeof err), REG_OK);
	ck_assert_uint_eq(v, 6);	/* versions never go back */
	ck_assert_uint_eq(ep->max_ongoing, 3);
	ck_assert_str_eq(heard, "1:m1\n2:m1\n0:m1\n");
	m = registry_name_json(r, "m1");
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(json_string_value(json_object_get(m, "source")),
	    "register");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
	    json_object_get(m, "replicas"), 0), "id")), "a");
	json_decref(m);

	/* The conf takes a registered name over: its replicas go. */
	c2 = load("\"api\": {\"endpoints\": [\"127.0.0.1:9001\"]}, "
	    "\"m1\": {\"endpoints\": [\"127.0.0.1:9009\"]}");
	ck_assert_int_eq(registry_reload(r, c2, &ch, &n, err, sizeof err), 0);
	ck_assert_int_eq(change_of(ch, n, "m1"), REG_ADDED);
	registry_changes_free(ch, n);
	ck_assert_str_eq(addrs_of(r, "m1"), "127.0.0.1:9009");
	ck_assert_int_eq(registry_register(r, "m1", "a", "127.0.0.1:9001", 3,
	    &v, err, sizeof err), REG_ECONFLICT);
	/* ... and a reload never removes a registered name. */
	ck_assert_int_eq(registry_register(r, "m2", "a", "127.0.0.1:9001", 3,
	    &v, err, sizeof err), REG_OK);
	ck_assert_int_eq(registry_reload(r, c1, &ch, &n, err, sizeof err), 0);
	ck_assert_int_eq(change_of(ch, n, "m1"), REG_REMOVED);
	ck_assert_int_eq(change_of(ch, n, "m2"), -1);
	registry_changes_free(ch, n);
	ck_assert_str_eq(addrs_of(r, "m2"), "127.0.0.1:9001");
	ck_assert_str_eq(addrs_of(r, "m1"), "(unknown)");

	registry_free(r);
	conf_free(c1);
	conf_free(c2);
}
END_TEST

/* Ten thousand names: every one found, each with its own version. */
START_TEST(test_many_names)
{
	struct conf		*c1;
	struct registry		*r;
	struct reg_lookup	 lk;
	unsigned		 i, v;
	char			 err[512], name[32];
	json_t			*doc;

	c1 = load("");
	r = reg_new(c1, 1, tmpdir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	for (i = 0; i < 10000; i++) {
		snprintf(name, sizeof name, "model-%u", i);
		ck_assert_int_eq(registry_register(r, name, "r0",
		    "127.0.0.1:9001", 10, &v, err, sizeof err), REG_OK);
		if (i % 2 == 0)
			ck_assert_int_eq(registry_register(r, name, "r1",
			    "127.0.0.1:9002", 10, &v, err, sizeof err), REG_OK);
	}
	for (i = 0; i < 10000; i++) {
		snprintf(name, sizeof name, "model-%u", i);
		ck_assert_int_eq(registry_lookup(r, name, &lk), 0);
		ck_assert_uint_eq(lk.neps, i % 2 == 0 ? 2 : 1);
		ck_assert_uint_eq(lk.version, i % 2 == 0 ? 2 : 1);
		free(lk.eps);
	}
	ck_assert_int_eq(registry_lookup(r, "model-10000", &lk), -1);
	doc = registry_status_json(r);
	ck_assert_uint_eq(json_object_size(doc), 10000);
	json_decref(doc);
	registry_free(r);
	conf_free(c1);
}
END_TEST

START_TEST(test_dns_addresses)
{
	struct conf		*c1, *c2;
	struct registry		*r;
	struct reg_change	*ch;
	struct reg_lookup	 lk;
	unsigned		 n;
	char			 err[512];
	char			*a1[] = { "127.0.0.2:80", "[::1]:80" };
	char			*a2[] = { "[::1]:80", "127.0.0.2:80" };
	char			*a3[] = { "127.0.0.3:80", "127.0.0.3:80" };
	int			 calls = 0;

	c1 = load("\"svc\": {\"dns\": \"svc.example:80\", "
	    "\"max_ongoing_requests\": 9}, "
	    "\"api\": {\"endpoints\": [\"127.0.0.1:9001\"]}");
	r = reg_new(c1, 1, tmpdir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	registry_set_notify(r, hear, &calls);
	heard[0] = '\0';
	/* Known, without replicas until DNS answers. */
	ck_assert_str_eq(addrs_of(r, "svc"), "");
	ck_assert_int_eq(registry_set_addresses(r, "svc", a1, NULL, 2, err,
	    sizeof err), REG_OK);
	ck_assert_str_eq(addrs_of(r, "svc"), "127.0.0.2:80 [::1]:80");
	ck_assert_int_eq(registry_lookup(r, "svc", &lk), 0);
	ck_assert_uint_eq(lk.eps[1]->max_ongoing, 9);
	ck_assert_str_eq(lk.eps[1]->id, "[::1]:80");
	ck_assert_uint_eq(lk.version, 2);
	free(lk.eps);
	/* The same set in another order is no change. */
	ck_assert_int_eq(registry_set_addresses(r, "svc", a2, NULL, 2, err,
	    sizeof err), REG_UNCHANGED);
	ck_assert_int_eq(registry_set_addresses(r, "svc", a3, NULL, 2, err,
	    sizeof err), REG_OK);
	ck_assert_str_eq(addrs_of(r, "svc"), "127.0.0.3:80");
	ck_assert_int_eq(registry_set_addresses(r, "svc", NULL, NULL, 0, err,
	    sizeof err), REG_OK);
	ck_assert_str_eq(addrs_of(r, "svc"), "");
	ck_assert_int_eq(registry_set_addresses(r, "api", a1, NULL, 2, err,
	    sizeof err), REG_ENOENT);
	ck_assert_str_eq(heard, "1:svc\n1:svc\n1:svc\n");

	/* A reload that keeps "dns" keeps the addresses; a new one drops
	 * them until DNS answers for it. */
	ck_assert_int_eq(registry_set_addresses(r, "svc", a1, NULL, 2, err,
	    sizeof err), REG_OK);
	ck_assert_int_eq(registry_reload(r, c1, &ch, &n, err, sizeof err), 0);
	ck_assert_uint_eq(n, 0);
	registry_changes_free(ch, n);
	ck_assert_str_eq(addrs_of(r, "svc"), "127.0.0.2:80 [::1]:80");
	c2 = load("\"svc\": {\"dns\": \"other.example:80\"}, "
	    "\"api\": {\"endpoints\": [\"127.0.0.1:9001\"]}");
	ck_assert_int_eq(registry_reload(r, c2, &ch, &n, err, sizeof err), 0);
	ck_assert_int_eq(change_of(ch, n, "svc"), REG_CHANGED);
	registry_changes_free(ch, n);
	ck_assert_str_eq(addrs_of(r, "svc"), "");

	registry_free(r);
	conf_free(c1);
	conf_free(c2);
}
END_TEST

/* Lookups and the status page while another thread registers; the
 * writer keeps a model of which replicas each name has. */
static int	has_a[300], has_b[300];

static void *
churn(void *arg)
{
	struct registry	*r = arg;
	unsigned	 i, k, v;
	char		 err[256], name[32];

	for (i = 0; i < 3000; i++) {
		k = i % 300;
		snprintf(name, sizeof name, "c%u", k);
		if (i % 3 == 2) {
			if (registry_unregister(r, name, "a", &v, err,
			    sizeof err) == REG_OK)
				has_a[k] = 0;
		} else if (registry_register(r, name, i % 2 ? "a" : "b",
		    i % 2 ? "127.0.0.1:9001" : "127.0.0.1:9002", 5, &v, err,
		    sizeof err) == REG_OK) {
			if (i % 2)
				has_a[k] = 1;
			else
				has_b[k] = 1;
		}
	}
	return (NULL);
}

START_TEST(test_concurrent_readers)
{
	struct conf		*c1;
	struct registry		*r;
	struct reg_lookup	 lk;
	pthread_t		 t;
	unsigned		 i;
	char			 err[512], name[32];
	json_t			*doc;

	c1 = load("");
	r = reg_new(c1, 1, tmpdir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_int_eq(pthread_create(&t, NULL, churn, r), 0);
	for (i = 0; i < 3000; i++) {
		snprintf(name, sizeof name, "c%u", i % 300);
		if (registry_lookup(r, name, &lk) == 0) {
			ck_assert_uint_ge(lk.neps, 1);
			ck_assert_uint_le(lk.neps, 2);
			free(lk.eps);
		}
		if (i % 100 == 0) {
			doc = registry_status_json(r);
			ck_assert_ptr_nonnull(doc);
			json_decref(doc);
		}
	}
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	/* The registry ends as the writer's model says. */
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof name, "c%u", i);
		if (!has_a[i] && !has_b[i]) {
			ck_assert_int_eq(registry_lookup(r, name, &lk), -1);
			continue;
		}
		ck_assert_int_eq(registry_lookup(r, name, &lk), 0);
		ck_assert_uint_eq(lk.neps, has_a[i] + has_b[i]);
		free(lk.eps);
	}
	registry_free(r);
	conf_free(c1);
}
END_TEST

static Suite *
registry_suite(void)
{
	Suite	*s = suite_create("registry");
	TCase	*tc = tcase_create("registry");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_reload_kinds);
	tcase_add_test(tc, test_spawn_generations);
	tcase_add_test(tc, test_failed_reload_changes_nothing);
	tcase_add_test(tc, test_status_json);
	tcase_add_test(tc, test_status_best_worker);
	tcase_add_test(tc, test_figures);
	tcase_add_test(tc, test_estate_rank);
	tcase_add_test(tc, test_register);
	tcase_add_test(tc, test_many_names);
	tcase_add_test(tc, test_dns_addresses);
	tcase_add_test(tc, test_concurrent_readers);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(registry_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
