/*
 * conf_listen.c -- the "listen" entries and their TLS keys, and the
 * address checks the other sections share (conf_impl.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "conf_impl.h"
#include "net.h"

/* Syntax only: conf_load (and "ingressd -t") must not wait on DNS. */
int
conf_check_addr(struct conf_ctx *ctx, const char *s)
{
	char	msg[512];

	if (net_addr_check(s, msg, sizeof msg) == -1)
		return (conf_error(ctx, "%s", msg));
	return (0);
}

/*
 * Each listener its own address, as written (-t and the start compare the
 * resolved addresses too): a second bind of one address would fail, or
 * with SO_REUSEPORT quietly split its connections, and an admin address
 * that is also public would serve the admin API to everyone.
 */
int
conf_check_listeners(struct conf_ctx *ctx, const struct conf *conf)
{
	unsigned	i, j;
	size_t		old;
	int		rv = 0;

	old = conf_push(ctx, "listen");
	for (i = 0; i < conf->nlisten && rv == 0; i++) {
		for (j = 0; j < i; j++) {
			if (strcmp(conf->listen[i], conf->listen[j]) != 0)
				continue;
			conf_push_index(ctx, i);
			rv = conf_error(ctx, "\"%s\" is listed twice (also "
			    "listen[%u])", conf->listen[i], j);
			break;
		}
	}
	conf_pop(ctx, old);
	for (i = 0; i < conf->nlisten && rv == 0 && conf->admin != NULL; i++) {
		if (strcmp(conf->admin, conf->listen[i]) != 0)
			continue;
		old = conf_push(ctx, "admin");
		rv = conf_error(ctx, "\"%s\" is also listen[%u]: the admin "
		    "listener needs an address of its own", conf->admin, i);
		conf_pop(ctx, old);
	}
	return (rv);
}

/* A string or a non-empty array of strings, each a valid address. */
int
conf_addr_list(struct conf_ctx *ctx, json_t *v, int single_ok, char ***list,
    unsigned *n)
{
	json_t	*e;
	size_t	 i, old;

	if (single_ok && json_is_string(v)) {
		if (conf_check_addr(ctx, json_string_value(v)) == -1)
			return (-1);
		*list = calloc(1, sizeof **list);
		if (*list == NULL)
			abort();
		(*list)[0] = conf_strdup(json_string_value(v));
		*n = 1;
		return (0);
	}
	if (!json_is_array(v) || json_array_size(v) == 0)
		return (conf_error(ctx, "must be %sa non-empty array of address "
		    "strings", single_ok ? "an address string or " : ""));
	if ((*list = calloc(json_array_size(v), sizeof **list)) == NULL)
		abort();
	*n = (unsigned)json_array_size(v);
	json_array_foreach(v, i, e) {
		old = conf_push_index(ctx, i);
		if (!json_is_string(e))
			return (conf_error(ctx, "must be an address string"));
		if (conf_check_addr(ctx, json_string_value(e)) == -1)
			return (-1);
		(*list)[i] = conf_strdup(json_string_value(e));
		conf_pop(ctx, old);
	}
	return (0);
}

/* TLS -------------------------------------------------------------------- */

/* A listen entry in its object form. */
struct conf_listener {
	char		*address;
	struct conf_tls	*tls;
};

static int	conf_tls(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
static int	conf_tls_certs(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_tls_alpn(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_tls_enum(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
static int	conf_listener_addr(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);

static const char *conf_verify_names[] = { "off", "optional", "require",
    NULL };
static const char *conf_tls_versions[] = { "TLSv1.2", "TLSv1.3", NULL };

static const struct conf_key conf_listener_keys[] = {
	{ "address", conf_listener_addr, 0, 0, 0, CONF_REQUIRED },
	{ "tls", conf_tls, offsetof(struct conf_listener, tls), 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};

#define S(f)	offsetof(struct conf_tls, f)
static const struct conf_key conf_tls_keys[] = {
	{ "certificates", conf_tls_certs, 0, 0, 0, CONF_REQUIRED },
	{ "alpn", conf_tls_alpn, 0, 0, 0, 0 },
	{ "ciphers", conf_string, S(ciphers), 0, 0, 0 },
	{ "ciphersuites", conf_string, S(ciphersuites), 0, 0, 0 },
	{ "min_version", conf_tls_enum, S(min_version), 0, 0, 0 },
	{ "client_ca", conf_path, S(client_ca), 0, 0, 0 },
	{ "verify_client", conf_tls_enum, S(verify_client), 0, 0, 0 },
	{ "handshake_timeout", conf_seconds, S(handshake_timeout), 0, 0, 0 },
	{ "session_tickets", conf_bool, S(session_tickets), 0, 0, 0 },
	{ NULL, NULL, 0, 0, 0, 0 }
};
#undef S

static const struct conf_key conf_tls_cert_keys[] = {
	{ "cert", conf_path, offsetof(struct conf_tls_cert, cert), 0, 0,
	    CONF_REQUIRED },
	{ "key", conf_path, offsetof(struct conf_tls_cert, key), 0, 0,
	    CONF_REQUIRED },
	{ NULL, NULL, 0, 0, 0, 0 }
};

/* A file: absolute, or relative to the conf file's directory. */
int
conf_path(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	char		**p = (char **)((char *)base + k->off);
	const char	*s, *slash;
	int		 dlen;

	if (!json_is_string(v) || json_string_length(v) == 0)
		return (conf_error(ctx, "must be a file path"));
	s = json_string_value(v);
	slash = strrchr(ctx->conf->path, '/');
	free(*p);
	if (s[0] == '/' || slash == NULL) {
		*p = conf_strdup(s);
		return (0);
	}
	dlen = (int)(slash - ctx->conf->path);
	if (asprintf(p, "%.*s/%s", dlen, ctx->conf->path, s) == -1)
		abort();
	return (0);
}

static int
conf_tls_certs(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_tls	*t = base;
	json_t		*e;
	size_t		 i, old;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return (conf_error(ctx, "must be a non-empty array of "
		    "{\"cert\": ..., \"key\": ...} (the first is the "
		    "default)"));
	if ((t->certs = calloc(json_array_size(v), sizeof(*t->certs))) == NULL)
		abort();
	json_array_foreach(v, i, e) {
		old = conf_push_index(ctx, i);
		t->ncerts++;
		if (conf_walk(ctx, conf_tls_cert_keys, e, &t->certs[i]) == -1)
			return (-1);
		conf_pop(ctx, old);
	}
	return (0);
}

static int
conf_tls_alpn(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_tls	*t = base;
	const char	*s;
	json_t		*e;
	size_t		 i;

	if (!json_is_array(v))
		return (conf_error(ctx, "must be an array of \"h2\" and "
		    "\"http/1.1\""));
	for (i = 0; i < t->nalpn; i++)
		free(t->alpn[i]);
	free(t->alpn);
	t->nalpn = 0;
	if ((t->alpn = calloc(json_array_size(v) + 1, sizeof(*t->alpn))) ==
	    NULL)
		abort();
	json_array_foreach(v, i, e) {
		s = json_is_string(e) ? json_string_value(e) : "";
		if (strcmp(s, "h2") != 0 && strcmp(s, "http/1.1") != 0) {
			conf_push_index(ctx, i);
			return (conf_error(ctx, "must be \"h2\" or "
			    "\"http/1.1\""));
		}
		t->alpn[t->nalpn++] = conf_strdup(s);
	}
	return (0);
}

/* verify_client (an enum) or min_version (a string), from their names. */
static int
conf_tls_enum(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	int		 verify = k->off == offsetof(struct conf_tls,
			    verify_client);
	const char	**names = verify ? conf_verify_names : conf_tls_versions;
	const char	*s = json_is_string(v) ? json_string_value(v) : "";
	size_t		 i;

	for (i = 0; names[i] != NULL; i++) {
		if (strcmp(s, names[i]) != 0)
			continue;
		if (verify)
			*(enum conf_verify *)((char *)base + k->off) =
			    (enum conf_verify)i;
		else
			*(char **)((char *)base + k->off) = conf_strdup(s);
		return (0);
	}
	return (conf_error(ctx, verify ? "must be \"off\", \"optional\" or "
	    "\"require\"" : "must be \"TLSv1.2\" or \"TLSv1.3\""));
}

static int
conf_tls(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_tls	**tp = (struct conf_tls **)((char *)base + k->off);
	struct conf_tls	*t;
	size_t		 old;

	if ((t = *tp = calloc(1, sizeof(*t))) == NULL ||
	    (t->alpn = calloc(3, sizeof(*t->alpn))) == NULL)
		abort();
	t->handshake_timeout = 10;
	t->session_tickets = 1;
	t->alpn[0] = conf_strdup("h2");
	t->alpn[1] = conf_strdup("http/1.1");
	t->nalpn = 2;
	if (conf_walk(ctx, conf_tls_keys, v, t) == -1)
		return (-1);
	if ((t->verify_client != CONF_VERIFY_OFF) == (t->client_ca == NULL)) {
		old = conf_push(ctx, t->client_ca == NULL ? "verify_client" :
		    "client_ca");
		conf_error(ctx, t->client_ca == NULL ? "needs \"client_ca\"" :
		    "needs \"verify_client\": \"optional\" or \"require\"");
		conf_pop(ctx, old);
		return (-1);
	}
	return (0);
}

static int
conf_listener_addr(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf_listener *l = base;

	if (!json_is_string(v))
		return (conf_error(ctx, "must be an address string"));
	if (conf_check_addr(ctx, json_string_value(v)) == -1)
		return (-1);
	l->address = conf_strdup(json_string_value(v));
	return (0);
}

void
conf_tls_free(struct conf_tls *t)
{
	unsigned	i;

	if (t == NULL)
		return;
	for (i = 0; i < t->ncerts; i++) {
		free(t->certs[i].cert);
		free(t->certs[i].key);
	}
	free(t->certs);
	conf_free_strv(t->alpn, t->nalpn);
	free(t->ciphers);
	free(t->ciphersuites);
	free(t->min_version);
	free(t->client_ca);
	free(t);
}

/*
 * One listen entry: an address string, or {"address", "tls"}; the admin
 * key takes the same.  On error too, what was parsed is handed over so
 * conf_free releases it.
 */
int
conf_listen_one(struct conf_ctx *ctx, json_t *e, char **addr,
    struct conf_tls **tls)
{
	struct conf_listener	 l;

	if (json_is_string(e)) {
		if (conf_check_addr(ctx, json_string_value(e)) == -1)
			return (-1);
		*addr = conf_strdup(json_string_value(e));
		return (0);
	}
	if (!json_is_object(e))
		return (conf_error(ctx, "must be an address string or a "
		    "listener object {\"address\", \"tls\"}"));
	memset(&l, 0, sizeof(l));
	if (conf_walk(ctx, conf_listener_keys, e, &l) == -1) {
		*addr = l.address != NULL ? l.address : conf_strdup("");
		*tls = l.tls;
		return (-1);
	}
	*addr = l.address;
	*tls = l.tls;
	return (0);
}

/* An address string, a listener object, or a non-empty array of them. */
int
conf_listen(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	struct conf	*conf = base;
	json_t		*e;
	size_t		 i, n, old;

	n = json_is_array(v) ? json_array_size(v) : 1;
	if (n == 0 || (!json_is_array(v) && !json_is_string(v) &&
	    !json_is_object(v)))
		return (conf_error(ctx, "must be an address string, a "
		    "listener object {\"address\", \"tls\"} or a non-empty "
		    "array of them"));
	if ((conf->listen = calloc(n, sizeof(*conf->listen))) == NULL ||
	    (conf->listen_tls = calloc(n, sizeof(*conf->listen_tls))) == NULL)
		abort();
	if (!json_is_array(v)) {
		conf->nlisten = 1;
		return (conf_listen_one(ctx, v, &conf->listen[0],
		    &conf->listen_tls[0]));
	}
	json_array_foreach(v, i, e) {
		old = conf_push_index(ctx, i);
		conf->nlisten++;
		if (conf_listen_one(ctx, e, &conf->listen[i],
		    &conf->listen_tls[i]) == -1)
			return (-1);
		conf_pop(ctx, old);
	}
	return (0);
}
