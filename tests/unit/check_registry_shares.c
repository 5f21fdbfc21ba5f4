/*
 * check_registry_shares.c -- a replica's weight and priority in a name
 * (struct reg_share): from the conf's endpoints (object form, its errors,
 * a reload that changes only a weight), registration (a change of share is
 * a change, weight 0 refused, names sharing an address each keep theirs,
 * unregistration keeps the others'), DNS answers (an address given twice
 * merged); lookups and the /-/deployments JSON show them.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "conf.h"
#include "registry.h"

static char	tmpdir[64];
static char	path[256];

/* A fresh directory per test, with or without Check's fork. */
static void
setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/check_registry_shares.XXXXXX");
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

/* conf_load of {"routes": [], "deployments": {DEPS}}; NULL and err. */
static struct conf *
try_load(const char *deps, char *err, size_t errlen)
{
	FILE	*fp;

	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fprintf(fp, "{\"routes\": [], \"deployments\": {%s}}", deps);
	ck_assert_int_eq(fclose(fp), 0);
	return (conf_load(path, err, errlen));
}

static struct conf *
load(const char *deps)
{
	struct conf	*conf;
	char		 err[1024];

	conf = try_load(deps, err, sizeof err);
	ck_assert_msg(conf != NULL, "%s", err);
	return (conf);
}

static struct registry *
reg_new(const struct conf *conf)
{
	struct registry		*r;
	struct reg_change	*ch;
	unsigned		 n;
	char			 err[512];

	r = registry_new(1, tmpdir);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(registry_reload(r, conf, &ch, &n, err, sizeof err) == 0,
	    "%s", err);
	registry_changes_free(ch, n);
	return (r);
}

/* "address:weight/priority ..." of name as a lookup gives it. */
static const char *
shares_of(struct registry *r, const char *name)
{
	static char		 buf[512];
	struct reg_lookup	 lk;
	size_t			 off = 0;
	unsigned		 i;

	buf[0] = '\0';
	if (registry_lookup(r, name, &lk) == -1)
		return ("(unknown)");
	for (i = 0; i < lk.neps; i++)
		off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s:%u/%u",
		    i ? " " : "", lk.eps[i]->addr.text, lk.shares[i].weight,
		    lk.shares[i].priority);
	free(lk.eps);
	return (buf);
}

/* Replica i of name on /-/deployments: "weight/priority". */
static const char *
json_share(struct registry *r, const char *name, unsigned i)
{
	static char	 buf[64];
	json_t		*doc, *rep;

	doc = registry_name_json(r, name);
	ck_assert_ptr_nonnull(doc);
	rep = json_array_get(json_object_get(doc, "replicas"), i);
	snprintf(buf, sizeof buf, "%lld/%lld",
	    (long long)json_integer_value(json_object_get(rep, "weight")),
	    (long long)json_integer_value(json_object_get(rep, "priority")));
	json_decref(doc);
	return (buf);
}

START_TEST(test_conf_endpoints)
{
	struct conf		*c1, *c2, *c3;
	struct registry		*r;
	struct reg_change	*ch;
	struct reg_lookup	 lk;
	struct reg_endpoint	*ep0;
	unsigned		 n;
	char			 err[512];

	c1 = load("\"api\": {\"endpoints\": [\"127.0.0.1:9001\", "
	    "{\"address\": \"127.0.0.1:9002\", \"weight\": 3}, "
	    "{\"address\": \"127.0.0.1:9003\", \"priority\": 10}]}, "
	    "\"plain\": {\"endpoints\": [\"127.0.0.1:9001\"]}");
	r = reg_new(c1);
	ck_assert_str_eq(shares_of(r, "api"), "127.0.0.1:9001:1/0 "
	    "127.0.0.1:9002:3/0 127.0.0.1:9003:1/10");
	ck_assert_str_eq(shares_of(r, "plain"), "127.0.0.1:9001:1/0");
	ck_assert_str_eq(json_share(r, "api", 1), "3/0");
	ck_assert_str_eq(json_share(r, "api", 2), "1/10");
	ck_assert_str_eq(json_share(r, "plain", 0), "1/0");
	ck_assert_int_eq(registry_lookup(r, "api", &lk), 0);
	ep0 = lk.eps[0];
	free(lk.eps);

	/* The same again: no change.  Only a weight: a change, same
	 * endpoints (connections stay warm). */
	ck_assert_int_eq(registry_reload(r, c1, &ch, &n, err, sizeof err), 0);
	ck_assert_uint_eq(n, 0);
	registry_changes_free(ch, n);
	c2 = load("\"api\": {\"endpoints\": [\"127.0.0.1:9001\", "
	    "{\"address\": \"127.0.0.1:9002\", \"weight\": 4}, "
	    "{\"address\": \"127.0.0.1:9003\", \"priority\": 10}]}, "
	    "\"plain\": {\"endpoints\": [\"127.0.0.1:9001\"]}");
	ck_assert_int_eq(registry_reload(r, c2, &ch, &n, err, sizeof err), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(ch[0].name, "api");
	ck_assert_int_eq(ch[0].kind, REG_CHANGED);
	registry_changes_free(ch, n);
	ck_assert_str_eq(shares_of(r, "api"), "127.0.0.1:9001:1/0 "
	    "127.0.0.1:9002:4/0 127.0.0.1:9003:1/10");
	ck_assert_int_eq(registry_lookup(r, "api", &lk), 0);
	ck_assert_ptr_eq(lk.eps[0], ep0);
	free(lk.eps);
	/* Back to plain strings: the default shares again. */
	c3 = load("\"api\": {\"endpoints\": [\"127.0.0.1:9001\", "
	    "\"127.0.0.1:9002\", \"127.0.0.1:9003\"]}");
	ck_assert_int_eq(registry_reload(r, c3, &ch, &n, err, sizeof err), 0);
	registry_changes_free(ch, n);
	ck_assert_str_eq(shares_of(r, "api"), "127.0.0.1:9001:1/0 "
	    "127.0.0.1:9002:1/0 127.0.0.1:9003:1/0");
	registry_free(r);
	conf_free(c1);
	conf_free(c2);
	conf_free(c3);
}
END_TEST

/* Each bad entry is refused with the file and the key path. */
START_TEST(test_conf_errors)
{
	static const struct {
		const char	*deps;
		const char	*msg;
	} bad[] = {
	    { "\"a\": {\"endpoints\": [{\"address\": \"127.0.0.1:1\", "
		"\"weight\": 0}]}",
		"deployments.a.endpoints[0].weight: must be an integer in "
		"1..65535" },
	    { "\"a\": {\"endpoints\": [\"127.0.0.1:2\", {\"address\": "
		"\"127.0.0.1:1\", \"weight\": 65536}]}",
		"deployments.a.endpoints[1].weight: must be an integer in "
		"1..65535" },
	    { "\"a\": {\"endpoints\": [{\"address\": \"127.0.0.1:1\", "
		"\"priority\": -1}]}",
		"deployments.a.endpoints[0].priority: must be an integer in "
		"0..65535" },
	    { "\"a\": {\"endpoints\": [{\"address\": \"127.0.0.1:1\", "
		"\"priority\": \"1\"}]}",
		"deployments.a.endpoints[0].priority: must be an integer in "
		"0..65535" },
	    { "\"a\": {\"endpoints\": [{\"weight\": 2}]}",
		"deployments.a.endpoints[0].address: required key missing" },
	    { "\"a\": {\"endpoints\": [{\"address\": \"127.0.0.1:1\", "
		"\"wieght\": 2}]}",
		"deployments.a.endpoints[0].wieght: unknown key" },
	    { "\"a\": {\"endpoints\": [{\"address\": \"127.0.0.1:99999\"}]}",
		"deployments.a.endpoints[0].address: bad address "
		"\"127.0.0.1:99999\": port out of range" },
	    { "\"a\": {\"endpoints\": [5]}",
		"deployments.a.endpoints[0]: must be an address string or an "
		"object {\"address\", \"weight\", \"priority\"}" },
	    { "\"a\": {\"endpoints\": []}",
		"deployments.a.endpoints: must be a non-empty array of "
		"address strings or {\"address\", \"weight\", \"priority\"} "
		"objects" },
	};
	char	err[1024], want[1024];
	size_t	i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(try_load(bad[i].deps, err, sizeof err) == NULL,
		    "loaded: %s", bad[i].deps);
		snprintf(want, sizeof want, "%s: %s", path, bad[i].msg);
		ck_assert_str_eq(err, want);
	}
}
END_TEST

static enum reg_result
reg(struct registry *r, const char *name, const char *id, const char *addr,
    unsigned weight, unsigned prio, unsigned *v, char *err, size_t errlen)
{
	struct reg_replica	rep;

	memset(&rep, 0, sizeof rep);
	rep.address = addr;
	rep.max_ongoing = 10;
	rep.share.weight = (uint16_t)weight;
	rep.share.priority = (uint16_t)prio;
	return (registry_register_replica(r, name, id, &rep, v, err, errlen));
}

START_TEST(test_register)
{
	struct conf	*c1;
	struct registry	*r;
	unsigned	 v;
	char		 err[512];

	c1 = load("");
	r = reg_new(c1);
	ck_assert_int_eq(reg(r, "m", "a", "127.0.0.1:9001", 1, 0, &v, err,
	    sizeof err), REG_OK);
	ck_assert_int_eq(reg(r, "m", "b", "127.0.0.1:9002", 3, 0, &v, err,
	    sizeof err), REG_OK);
	ck_assert_int_eq(reg(r, "m", "c", "127.0.0.1:9003", 1, 10, &v, err,
	    sizeof err), REG_OK);
	ck_assert_uint_eq(v, 3);
	ck_assert_str_eq(shares_of(r, "m"), "127.0.0.1:9001:1/0 "
	    "127.0.0.1:9002:3/0 127.0.0.1:9003:1/10");
	ck_assert_str_eq(json_share(r, "m", 1), "3/0");
	/* The same share: unchanged; another: a change. */
	ck_assert_int_eq(reg(r, "m", "b", "127.0.0.1:9002", 3, 0, &v, err,
	    sizeof err), REG_UNCHANGED);
	ck_assert_int_eq(reg(r, "m", "b", "127.0.0.1:9002", 3, 1, &v, err,
	    sizeof err), REG_OK);
	ck_assert_uint_eq(v, 4);
	ck_assert_int_eq(reg(r, "m", "d", "127.0.0.1:9004", 0, 0, &v, err,
	    sizeof err), REG_EINVAL);
	ck_assert_str_eq(err, "weight: must be an integer in 1..65535");
	/* Another name at the same address has a share of its own. */
	ck_assert_int_eq(reg(r, "n", "x", "127.0.0.1:9002", 7, 2, &v, err,
	    sizeof err), REG_OK);
	ck_assert_str_eq(shares_of(r, "n"), "127.0.0.1:9002:7/2");
	ck_assert_str_eq(shares_of(r, "m"), "127.0.0.1:9001:1/0 "
	    "127.0.0.1:9002:3/1 127.0.0.1:9003:1/10");
	/* Unregistering one keeps the others' shares in place. */
	ck_assert_int_eq(registry_unregister(r, "m", "a", &v, err,
	    sizeof err), REG_OK);
	ck_assert_str_eq(shares_of(r, "m"), "127.0.0.1:9002:3/1 "
	    "127.0.0.1:9003:1/10");
	/* registry_register: the default share. */
	ck_assert_int_eq(registry_register(r, "m", "e", "127.0.0.1:9005", 5,
	    &v, err, sizeof err), REG_OK);
	ck_assert_str_eq(json_share(r, "m", 2), "1/0");
	registry_free(r);
	conf_free(c1);
}
END_TEST

START_TEST(test_dns_shares)
{
	struct conf		*c1;
	struct registry		*r;
	char			 err[512];
	char			*a[] = { "127.0.0.2:80", "127.0.0.3:80",
				    "127.0.0.2:80", "127.0.0.4:80",
				    "127.0.0.4:80" };
	struct reg_share	 s[] = { { 1, 1 }, { 0, 5 }, { 2, 1 },
				    { 9, 3 }, { 4, 2 } };

	c1 = load("\"svc\": {\"dns_srv\": \"_svc._tcp.example\"}");
	r = reg_new(c1);
	ck_assert_int_eq(registry_set_addresses(r, "svc", a, s, 2, err,
	    sizeof err), REG_OK);
	ck_assert_str_eq(shares_of(r, "svc"), "127.0.0.2:80:1/1 "
	    "127.0.0.3:80:0/5");
	ck_assert_str_eq(json_share(r, "svc", 1), "0/5");
	ck_assert_int_eq(registry_set_addresses(r, "svc", a, s, 2, err,
	    sizeof err), REG_UNCHANGED);
	/* Same addresses, another weight: a change. */
	s[1].weight = 2;
	ck_assert_int_eq(registry_set_addresses(r, "svc", a, s, 2, err,
	    sizeof err), REG_OK);
	ck_assert_str_eq(shares_of(r, "svc"), "127.0.0.2:80:1/1 "
	    "127.0.0.3:80:2/5");
	/* Twice at one priority: weights add; at two: the better one. */
	ck_assert_int_eq(registry_set_addresses(r, "svc", a, s, 5, err,
	    sizeof err), REG_OK);
	ck_assert_str_eq(shares_of(r, "svc"), "127.0.0.2:80:3/1 "
	    "127.0.0.3:80:2/5 127.0.0.4:80:4/2");
	ck_assert_int_eq(registry_set_addresses(r, "svc", a, s, 5, err,
	    sizeof err), REG_UNCHANGED);
	s[2].weight = 3;		/* 127.0.0.2 merges to 4/1 now */
	ck_assert_int_eq(registry_set_addresses(r, "svc", a, s, 5, err,
	    sizeof err), REG_OK);
	ck_assert_str_eq(shares_of(r, "svc"), "127.0.0.2:80:4/1 "
	    "127.0.0.3:80:2/5 127.0.0.4:80:4/2");
	/* No shares: the default. */
	ck_assert_int_eq(registry_set_addresses(r, "svc", a, NULL, 2, err,
	    sizeof err), REG_OK);
	ck_assert_str_eq(shares_of(r, "svc"), "127.0.0.2:80:1/0 "
	    "127.0.0.3:80:1/0");
	registry_free(r);
	conf_free(c1);
}
END_TEST

START_TEST(test_merge)
{
	struct reg_share	a = { 65000, 2 }, b = { 1000, 2 }, c = { 3, 1 };

	registry_share_merge(&a, &b);
	ck_assert_uint_eq(a.weight, 65535);	/* capped */
	registry_share_merge(&a, &c);
	ck_assert_uint_eq(a.weight, 3);
	ck_assert_uint_eq(a.priority, 1);
	registry_share_merge(&a, &b);		/* worse: ignored */
	ck_assert_uint_eq(a.weight, 3);
	ck_assert_uint_eq(a.priority, 1);
}
END_TEST

static Suite *
shares_suite(void)
{
	Suite	*s = suite_create("registry_shares");
	TCase	*tc = tcase_create("shares");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_conf_endpoints);
	tcase_add_test(tc, test_conf_errors);
	tcase_add_test(tc, test_register);
	tcase_add_test(tc, test_dns_shares);
	tcase_add_test(tc, test_merge);
	suite_add_tcase(s, tc);
	return (s);
}

int
main(void)
{
	SRunner	*sr = srunner_create(shares_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}
