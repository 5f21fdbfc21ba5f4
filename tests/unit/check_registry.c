/*
 * check_registry.c -- registry_reload: what a reload keeps, changes, adds
 * and removes; spawn socket generations; a failed reload changes nothing.
 * Confs are written to a file and loaded with conf_load, as the daemon does.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "conf.h"
#include "registry.h"

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
	r = registry_new(c1, 2, tmpdir, err, sizeof err);
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
	r = registry_new(c1, 1, tmpdir, err, sizeof err);
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
	r = registry_new(c1, 1, tmpdir, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	/* A socket path too long for sun_path fails in the plan phase. */
	memset(dir, 'd', sizeof dir);
	memcpy(dir, "/tmp/", 5);
	dir[sizeof dir - 1] = '\0';
	registry_free(r);
	r = registry_new(c1, 1, dir, err, sizeof err);
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
	r = registry_new(c1, 2, tmpdir, err, sizeof err);
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
