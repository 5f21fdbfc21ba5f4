/*
 * etcd_set.c -- etcd's replica set, mirrored and applied (etcd_set.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "etcd_set.h"
#include "log.h"
#include "registry.h"

#define ETCD_DEFAULT_MAX_ONGOING	100

struct etcd_set {
	struct registry	*reg;
	char		*pre;		/* "PREFIX/deployments/" */
	size_t		 prelen;
	json_t		*mirror;	/* key -> value (a JSON string) */
	json_t		*listing;	/* a list being read, or NULL */
};

struct etcd_set *
etcd_set_new(struct registry *reg, const char *prefix)
{
	struct etcd_set *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->reg = reg;
	if (asprintf(&s->pre, "%s/deployments/", prefix) == -1 ||
	    (s->mirror = json_object()) == NULL) {
		free(s);
		return NULL;
	}
	s->prelen = strlen(s->pre);
	return s;
}

void
etcd_set_free(struct etcd_set *s)
{
	if (s == NULL)
		return;
	json_decref(s->mirror);
	json_decref(s->listing);
	free(s->pre);
	free(s);
}

unsigned
etcd_set_size(struct etcd_set *s)
{
	return (unsigned)json_object_size(s->mirror);
}

/* NAME and ID of PREFIX/deployments/NAME/replicas/ID; 0, or -1: not a
 * replica key (ignored, so the prefix may hold other things later). */
static int
etcd_set_parse_key(struct etcd_set *s, const char *key, char *name,
    size_t namelen, char *id, size_t idlen)
{
	static const char mid[] = "/replicas/";
	const char *p, *slash;
	size_t n;

	if (strncmp(key, s->pre, s->prelen) != 0)
		return -1;
	p = key + s->prelen;
	if ((slash = strchr(p, '/')) == NULL || (n = (size_t)(slash - p)) ==
	    0 || n >= namelen || strncmp(slash, mid, sizeof(mid) - 1) != 0)
		return -1;
	memcpy(name, p, n);
	name[n] = '\0';
	p = slash + sizeof(mid) - 1;
	if ((n = strlen(p)) == 0 || n >= idlen || strchr(p, '/') != NULL)
		return -1;
	memcpy(id, p, n + 1);
	return 0;
}

/* A replica value's parsed fields (the strings are copies). */
struct etcd_set_value {
	char		 addr[512];
	char		 proto[8];
	struct reg_replica rep;
};

/* Optional integer key of doc in lo..hi into *out; -1 and err if bad. */
static int
etcd_set_int(json_t *doc, const char *key, json_int_t lo, json_int_t hi,
    unsigned *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(doc, key);

	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo ||
	    json_integer_value(v) > hi) {
		snprintf(err, errlen, "%s: must be an integer in %lld..%lld",
		    key, (long long)lo, (long long)hi);
		return -1;
	}
	*out = (unsigned)json_integer_value(v);
	return 0;
}

/*
 * The value's address, cap, protocol, weight and priority; -1 and err
 * when it is not a replica.  Unknown keys are let through (newer fields
 * must not make older instances drop a replica; older instances ignore
 * "weight" and "priority").
 */
static int
etcd_set_parse_value(const char *value, struct etcd_set_value *out,
    char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *doc, *a, *p;
	unsigned weight = REG_WEIGHT_DEFAULT, prio = REG_PRIORITY_DEFAULT;
	int rv = -1;

	if ((doc = json_loads(value, JSON_REJECT_DUPLICATES, &jerr)) ==
	    NULL) {
		snprintf(err, errlen, "value is not JSON: %s", jerr.text);
		return -1;
	}
	a = json_object_get(doc, "address");
	p = json_object_get(doc, "protocol");
	memset(&out->rep, 0, sizeof(out->rep));
	out->rep.max_ongoing = ETCD_DEFAULT_MAX_ONGOING;
	if (!json_is_string(a) || strlen(json_string_value(a)) >=
	    sizeof(out->addr))
		snprintf(err, errlen, "address: must be a string");
	else if (etcd_set_int(doc, "max_ongoing_requests", 1, 100000,
	    &out->rep.max_ongoing, err, errlen) == -1 ||
	    etcd_set_int(doc, "weight", 1, 65535, &weight, err, errlen) == -1 ||
	    etcd_set_int(doc, "priority", 0, 65535, &prio, err, errlen) == -1)
		;	/* err says */
	else if (p != NULL && (!json_is_string(p) ||
	    (strcmp(json_string_value(p), "wire") != 0 &&
	    strcmp(json_string_value(p), "http") != 0 &&
	    strcmp(json_string_value(p), "h2c") != 0)))
		snprintf(err, errlen, "protocol: must be \"wire\", \"http\" or "
		    "\"h2c\"");
	else {
		snprintf(out->addr, sizeof(out->addr), "%s",
		    json_string_value(a));
		snprintf(out->proto, sizeof(out->proto), "%s", p != NULL ?
		    json_string_value(p) : "wire");
		out->rep.address = out->addr;
		out->rep.protocol = out->proto;
		out->rep.share.weight = (uint16_t)weight;
		out->rep.share.priority = (uint16_t)prio;
		rv = 0;
	}
	json_decref(doc);
	return rv;
}

/* Make the registry hold key's replica as value says (NULL: none). */
static void
etcd_set_apply(struct etcd_set *s, const char *key, const char *value)
{
	char name[256], id[64], err[512];
	struct etcd_set_value v;
	enum reg_result rv;
	unsigned version;

	if (etcd_set_parse_key(s, key, name, sizeof(name), id,
	    sizeof(id)) == -1) {
		log_debug("etcd: %s: not a replica key: ignored", key);
		return;
	}
	if (value != NULL && etcd_set_parse_value(value, &v, err,
	    sizeof(err)) == -1) {
		log_warnx("etcd: %s: %s: replica not used", key, err);
		value = NULL;
	}
	if (value != NULL)
		rv = registry_register_replica(s->reg, name, id, &v.rep,
		    &version, err, sizeof(err));
	else
		rv = registry_unregister(s->reg, name, id, &version, err,
		    sizeof(err));
	if (rv == REG_OK)
		log_debug("etcd: %s %s/%s: version %u", value != NULL ?
		    "put" : "delete", name, id, version);
	else if (rv != REG_UNCHANGED && !(value == NULL && rv == REG_ENOENT))
		log_warnx("etcd: %s: %s", key, err);
}

void
etcd_set_put(struct etcd_set *s, const char *key, const char *value)
{
	json_t *old = json_object_get(s->mirror, key);

	if (old != NULL && strcmp(json_string_value(old), value) == 0)
		return;
	json_object_set_new(s->mirror, key, json_string(value));
	etcd_set_apply(s, key, value);
}

void
etcd_set_delete(struct etcd_set *s, const char *key)
{
	if (json_object_get(s->mirror, key) == NULL)
		return;
	json_object_del(s->mirror, key);
	etcd_set_apply(s, key, NULL);
}

void
etcd_set_list_begin(struct etcd_set *s)
{
	json_decref(s->listing);
	s->listing = json_object();
}

void
etcd_set_list_add(struct etcd_set *s, const char *key, const char *value)
{
	if (s->listing != NULL)
		json_object_set_new(s->listing, key, json_string(value));
}

unsigned
etcd_set_list_end(struct etcd_set *s)
{
	const char *key;
	json_t *v, *old;
	unsigned n = 0;

	if (s->listing == NULL)
		return 0;
	json_object_foreach(s->mirror, key, v) {
		if (json_object_get(s->listing, key) == NULL) {
			etcd_set_apply(s, key, NULL);
			n++;
		}
	}
	json_object_foreach(s->listing, key, v) {
		old = json_object_get(s->mirror, key);
		if (old == NULL || !json_equal(old, v)) {
			etcd_set_apply(s, key, json_string_value(v));
			n++;
		}
	}
	json_decref(s->mirror);
	s->mirror = s->listing;
	s->listing = NULL;
	return n;
}

int
etcd_set_load(struct etcd_set *s, const char *path, char *err,
    size_t errlen)
{
	json_error_t jerr;
	json_t *doc, *reps, *v;
	const char *key;

	if (access(path, F_OK) == -1 && errno == ENOENT)
		return 1;
	if ((doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr)) ==
	    NULL) {
		snprintf(err, errlen, "%s: %s", path, jerr.text);
		return -1;
	}
	if (!json_is_object(reps = json_object_get(doc, "replicas"))) {
		snprintf(err, errlen, "%s: no \"replicas\" object", path);
		json_decref(doc);
		return -1;
	}
	etcd_set_list_begin(s);
	json_object_foreach(reps, key, v) {
		if (json_is_string(v))
			etcd_set_list_add(s, key, json_string_value(v));
	}
	etcd_set_list_end(s);
	json_decref(doc);
	return 0;
}

int
etcd_set_save(struct etcd_set *s, const char *path, int64_t revision,
    char *err, size_t errlen)
{
	char tmp[4096];
	json_t *doc;
	int fd, rv;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((doc = json_pack("{s:I, s:O}", "revision", (json_int_t)revision,
	    "replicas", s->mirror)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) ==
	    -1) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		json_decref(doc);
		return -1;
	}
	rv = json_dumpfd(doc, fd, JSON_COMPACT);
	json_decref(doc);
	if (rv == -1 || fsync(fd) == -1) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	if (rename(tmp, path) == -1) {
		snprintf(err, errlen, "rename %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}
