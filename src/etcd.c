/*
 * etcd.c -- list and watch etcd's registry prefix (see etcd.h).
 *
 * One session at a time on one evhttp connection: the list's pages, then
 * the watch.  The gateway's HTTP/1.1 streaming is half-duplex (it reads
 * the whole request body before it answers), so the watch's create
 * request is the whole body, sent up front; nothing more can be said on
 * that stream, which is why liveness rests on progress notifications
 * and a watchdog rather than on asking.
 *
 * A session is never freed from one of its own callbacks: the callbacks
 * only mark it dead and activate an event that frees it from the loop.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <jansson.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "b64.h"
#include "conf.h"
#include "etcd.h"
#include "etcd_stats.h"
#include "etcd_set.h"
#include "log.h"
#include "monotime.h"
#include "registry.h"
#include "tls.h"

#define ETCD_PAGE		"1000"	/* keys per range page */
#define ETCD_BACKOFF_MIN_MS	100
#define ETCD_BACKOFF_MAX_MS	5000
#define ETCD_SNAPSHOT_DELAY_MS	500	/* changes batched per write */
#define ETCD_MAX_LINE		(64 * 1024 * 1024)

enum etcd_state { ETCD_IDLE, ETCD_AUTH, ETCD_LISTING, ETCD_WATCHING };

struct etcd {
	struct event_base *base;
	struct etcd_set	*set;
	char		**endpoints;
	unsigned	 nendpoints, cur;
	char		*snapshot;
	double		 watch_timeout, request_timeout;
	char		*key, *range_end;	/* the prefix, base64 */
	struct tls_cli	*tls;		/* https: endpoints; NULL: http */
	char		*username;	/* NULL: no etcd auth */
	char		*password;
	char		*token;		/* NULL: authenticate first */
	struct evhttp_connection *conn;
	enum etcd_state	 state;
	int		 dead;		/* the session is being torn down */
	int		 relist;	/* the next session lists first */
	int		 listed;	/* a list ever completed */
	int64_t		 rev;		/* last revision received */
	int64_t		 list_rev;	/* the list's pinned revision */
	char		*list_next;	/* next page's key, base64 */
	struct evbuffer	*lines;		/* watch bytes not yet parsed */
	unsigned	 backoff_ms;
	struct event	*kill_ev;	/* frees the dead session */
	struct event	*retry_ev;	/* starts the next one */
	struct event	*deadline_ev;	/* list page or watch too quiet */
	struct event	*snap_ev;
};


static void	etcd_connect(struct etcd *);
static void	etcd_list_page(struct etcd *);
static void	etcd_watch(struct etcd *);
static void	etcd_auth(struct etcd *);
static void	etcd_begin(struct etcd *);
static struct evhttp_connection *etcd_tls_conn(struct etcd *, const char *,
		    ev_uint16_t);

static uint64_t
etcd_now_ms(void)
{
	return (uint64_t)(monotime_now() * 1000);
}

static void
etcd_heard(void)
{
	atomic_store(&etcd_stats.heard_ms, etcd_now_ms());
}

static void
etcd_arm(struct event *ev, double secs)
{
	struct timeval tv;

	tv.tv_sec = (time_t)secs;
	tv.tv_usec = (suseconds_t)((secs - (double)tv.tv_sec) * 1e6);
	evtimer_add(ev, &tv);
}

/* The session failed: free it from the loop, then reconnect, after a
 * backoff (with jitter, so a fleet does not come back in step) when
 * retry says so, to the next endpoint. */
static void
etcd_fail(struct etcd *e, int retry, const char *why)
{
	double delay = 0;

	if (e->dead)
		return;
	e->dead = 1;
	atomic_store(&etcd_stats.watch_up, 0);
	/* An expired or revoked token shows as any failure (a 401, a watch
	 * error line): the next session authenticates anew, which costs
	 * one call per reconnect and no guessing at error texts. */
	free(e->token);
	e->token = NULL;
	evtimer_del(e->deadline_ev);
	if (retry) {
		e->backoff_ms = e->backoff_ms == 0 ? ETCD_BACKOFF_MIN_MS :
		    e->backoff_ms * 2;
		if (e->backoff_ms > ETCD_BACKOFF_MAX_MS)
			e->backoff_ms = ETCD_BACKOFF_MAX_MS;
		delay = e->backoff_ms * (1.0 + (random() % 250) / 1000.0) /
		    1000.0;
		e->cur = (e->cur + 1) % e->nendpoints;
	}
	log_warnx("etcd: %s: %s; again in %.0f ms (%s)", e->endpoints[e->cur],
	    why, delay * 1000, e->relist ? "list" : "watch from revision");
	event_active(e->kill_ev, EV_TIMEOUT, 0);
	etcd_arm(e->retry_ev, delay);
}

static void
etcd_kill_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct etcd *e = arg;

	/* Late: the next session has started (it cleared dead). */
	if (!e->dead)
		return;
	if (e->conn != NULL)
		evhttp_connection_free(e->conn);
	e->conn = NULL;
	e->state = ETCD_IDLE;
	evbuffer_drain(e->lines, evbuffer_get_length(e->lines));
}

static void
etcd_retry_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct etcd *e = arg;

	etcd_kill_cb(fd, ev, arg);
	atomic_fetch_add(&etcd_stats.reconnects, 1);
	etcd_connect(e);
}

static void
etcd_deadline_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct etcd *e = arg;

	etcd_fail(e, 1, e->state == ETCD_WATCHING ? "watch silent past "
	    "watch_timeout (no event, no progress notification)" :
	    "no answer within request_timeout");
}

static void
etcd_snap_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct etcd *e = arg;
	char err[512];

	if (e->snapshot != NULL && etcd_set_save(e->set, e->snapshot, e->rev,
	    err, sizeof(err)) == -1)
		log_warnx("etcd: snapshot: %s", err);
}

static void
etcd_changed(struct etcd *e)
{
	if (e->snapshot != NULL && !evtimer_pending(e->snap_ev, NULL))
		etcd_arm(e->snap_ev, ETCD_SNAPSHOT_DELAY_MS / 1000.0);
}

/* A POST of doc on the session's connection; chunk_cb for a stream. */
static int
etcd_post(struct etcd *e, const char *path, json_t *doc,
    void (*done)(struct evhttp_request *, void *),
    void (*chunk)(struct evhttp_request *, void *))
{
	struct evhttp_request *req;
	char *body = json_dumps(doc, JSON_COMPACT);

	json_decref(doc);
	if (body == NULL || (req = evhttp_request_new(done, e)) == NULL) {
		free(body);
		return -1;
	}
	if (chunk != NULL)
		evhttp_request_set_chunked_cb(req, chunk);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Host",
	    e->endpoints[e->cur]);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	if (e->token != NULL)
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Authorization", e->token);
	evbuffer_add(evhttp_request_get_output_buffer(req), body,
	    strlen(body));
	free(body);
	return evhttp_make_request(e->conn, req, EVHTTP_REQ_POST, path);
}

static int64_t
etcd_int(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	/* int64 fields are JSON strings in the gateway's encoding. */
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* A kv's key and value, decoded (free both); -1 when not base64. */
static int
etcd_kv(json_t *kv, char **key, char **value)
{
	const char *k = json_string_value(json_object_get(kv, "key"));
	const char *v = json_string_value(json_object_get(kv, "value"));
	size_t n;

	*key = *value = NULL;
	if (k == NULL || (*key = b64_decode(k, &n)) == NULL ||
	    strlen(*key) != n || (*value = b64_decode(v != NULL ? v : "",
	    &n)) == NULL) {
		free(*key);
		*key = NULL;
		return -1;
	}
	return 0;
}

/* Why the connection failed: the TLS verdict when there is one. */
static void
etcd_conn_why(struct etcd *e, char *why, size_t whylen)
{
	struct bufferevent *bev;
	unsigned long err;
	SSL *ssl;
	long vr;

	if (e->tls == NULL || e->conn == NULL || (bev =
	    evhttp_connection_get_bufferevent(e->conn)) == NULL ||
	    (ssl = bufferevent_openssl_get_ssl(bev)) == NULL) {
		snprintf(why, whylen, "connection failed");
		return;
	}
	vr = SSL_get_verify_result(ssl);
	err = bufferevent_get_openssl_error(bev);
	if (vr != X509_V_OK)
		snprintf(why, whylen, "TLS: etcd's certificate not verified: "
		    "%s", X509_verify_cert_error_string(vr));
	else if (err != 0)
		snprintf(why, whylen, "TLS handshake failed: %s",
		    ERR_reason_error_string(err) != NULL ?
		    ERR_reason_error_string(err) : "?");
	else
		snprintf(why, whylen, "connection failed (TLS)");
	ERR_clear_error();
}

/* The body of a finished request, parsed; NULL and why when not 200. */
static json_t *
etcd_answer(struct etcd *e, struct evhttp_request *req, char *why,
    size_t whylen)
{
	struct evbuffer *in;
	json_t *doc;
	size_t len;
	int code;

	if (req == NULL || (code = evhttp_request_get_response_code(req)) ==
	    0) {
		etcd_conn_why(e, why, whylen);
		return NULL;
	}
	in = evhttp_request_get_input_buffer(req);
	len = evbuffer_get_length(in);
	doc = json_loadb((const char *)evbuffer_pullup(in, -1), len, 0, NULL);
	if (code != 200 || doc == NULL) {
		snprintf(why, whylen, "HTTP %d: %.200s", code, doc != NULL ?
		    json_string_value(json_object_get(doc, "error")) : "");
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* Listing ------------------------------------------------------------- */

/* The list is whole: apply the difference, watch from the next one. */
static void
etcd_list_done(struct etcd *e)
{
	unsigned n = etcd_set_list_end(e->set);

	if (e->listed)
		atomic_fetch_add(&etcd_stats.relists, 1);
	log_info("etcd: %s: listed %u replica key(s) at revision %lld, %u "
	    "changed", e->endpoints[e->cur], etcd_set_size(e->set),
	    (long long)e->list_rev, n);
	e->listed = 1;
	e->relist = 0;
	e->rev = e->list_rev;
	atomic_store(&etcd_stats.revision, e->rev);
	atomic_store(&etcd_stats.synced, 1);
	etcd_changed(e);
	etcd_watch(e);
}

static int
etcd_list_kvs(struct etcd *e, json_t *kvs)
{
	char *key, *value;
	json_t *kv;
	size_t i;

	json_array_foreach(kvs, i, kv) {
		if (etcd_kv(kv, &key, &value) == -1)
			return -1;
		etcd_set_list_add(e->set, key, value);
		free(value);
		/* The next page starts just past the last key. */
		if (i + 1 == json_array_size(kvs)) {
			free(e->list_next);
			e->list_next = b64_encode(key, strlen(key) + 1);
		}
		free(key);
	}
	return 0;
}

static void
etcd_list_cb(struct evhttp_request *req, void *arg)
{
	struct etcd *e = arg;
	char why[320];
	json_t *doc;

	if (e->dead)
		return;
	evtimer_del(e->deadline_ev);
	if ((doc = etcd_answer(e, req, why, sizeof(why))) == NULL) {
		/* A compacted pinned revision: the next try lists anew. */
		etcd_set_list_begin(e->set);
		e->list_rev = 0;
		etcd_fail(e, 1, why);
		return;
	}
	if (e->list_rev == 0)
		e->list_rev = etcd_int(json_object_get(doc, "header"),
		    "revision");
	if (etcd_list_kvs(e, json_object_get(doc, "kvs")) == -1) {
		json_decref(doc);
		etcd_fail(e, 1, "range: a key or value is not base64");
		return;
	}
	if (json_is_true(json_object_get(doc, "more")))
		etcd_list_page(e);
	else
		etcd_list_done(e);
	json_decref(doc);
}

static void
etcd_list_page(struct etcd *e)
{
	json_t *doc = json_pack("{s:s, s:s, s:s}", "key", e->list_next !=
	    NULL ? e->list_next : e->key, "range_end", e->range_end, "limit",
	    ETCD_PAGE);
	char rev[32];

	/* Later pages read the first page's revision: one consistent set. */
	if (doc != NULL && e->list_rev > 0) {
		snprintf(rev, sizeof(rev), "%lld", (long long)e->list_rev);
		json_object_set_new(doc, "revision", json_string(rev));
	}
	if (doc == NULL || etcd_post(e, "/v3/kv/range", doc, etcd_list_cb,
	    NULL) == -1) {
		etcd_fail(e, 1, "range: cannot send");
		return;
	}
	etcd_arm(e->deadline_ev, e->request_timeout);
}

static void
etcd_list(struct etcd *e)
{
	e->state = ETCD_LISTING;
	e->list_rev = 0;
	free(e->list_next);
	e->list_next = NULL;
	etcd_set_list_begin(e->set);
	etcd_list_page(e);
}

/* Watching ------------------------------------------------------------ */

static void
etcd_event(struct etcd *e, json_t *ev)
{
	json_t *kv = json_object_get(ev, "kv");
	char *key, *value;
	int64_t mod = etcd_int(kv, "mod_revision");

	if (etcd_kv(kv, &key, &value) == -1) {
		log_warnx("etcd: event: a key or value is not base64");
		return;
	}
	if (json_is_string(json_object_get(ev, "type")) &&
	    strcmp(json_string_value(json_object_get(ev, "type")), "DELETE") ==
	    0)
		etcd_set_delete(e->set, key);
	else
		etcd_set_put(e->set, key, value);
	free(key);
	free(value);
	if (mod > e->rev)
		e->rev = mod;
	atomic_fetch_add(&etcd_stats.events, 1);
}

/* One watch response; -1 when the session is over. */
static int
etcd_watch_msg(struct etcd *e, json_t *msg)
{
	json_t *res = json_object_get(msg, "result"), *evs, *ev;
	char why[128];
	size_t i;

	if (!json_is_object(res)) {
		etcd_fail(e, 1, "watch: an error, or not a watch response");
		return -1;
	}
	if (json_is_true(json_object_get(res, "canceled"))) {
		if (etcd_int(res, "compact_revision") > 0) {
			snprintf(why, sizeof(why), "watch: revision %lld "
			    "compacted (now %lld): listing again",
			    (long long)e->rev + 1,
			    (long long)etcd_int(res, "compact_revision"));
			e->relist = 1;
			etcd_fail(e, 0, why);
		} else
			etcd_fail(e, 1, "watch cancelled");
		return -1;
	}
	etcd_heard();
	e->backoff_ms = 0;
	evs = json_object_get(res, "events");
	json_array_foreach(evs, i, ev)
		etcd_event(e, ev);
	/* A progress notification (no events, not the creation): every
	 * event up to its revision has been sent on this stream. */
	if (json_array_size(evs) == 0 &&
	    !json_is_true(json_object_get(res, "created"))) {
		int64_t r = etcd_int(json_object_get(res, "header"), "revision");

		if (r > e->rev)
			e->rev = r;
	}
	atomic_store(&etcd_stats.revision, e->rev);
	if (json_array_size(evs) > 0)
		etcd_changed(e);
	etcd_arm(e->deadline_ev, e->watch_timeout);
	return 0;
}

static void
etcd_watch_chunk_cb(struct evhttp_request *req, void *arg)
{
	struct etcd *e = arg;
	char *line;
	size_t n;
	json_t *msg;

	if (e->dead)
		return;
	if (evhttp_request_get_response_code(req) != 200) {
		etcd_fail(e, 1, "watch: not 200");
		return;
	}
	evbuffer_add_buffer(e->lines, evhttp_request_get_input_buffer(req));
	while ((line = evbuffer_readln(e->lines, &n, EVBUFFER_EOL_LF)) !=
	    NULL) {
		msg = n > 0 ? json_loadb(line, n, 0, NULL) : NULL;
		free(line);
		if (n == 0)
			continue;
		if (msg == NULL) {
			etcd_fail(e, 1, "watch: a line is not JSON");
			return;
		}
		if (etcd_watch_msg(e, msg) == -1) {
			json_decref(msg);
			return;
		}
		json_decref(msg);
	}
	if (evbuffer_get_length(e->lines) > ETCD_MAX_LINE)
		etcd_fail(e, 1, "watch: a message past 64 MiB");
}

static void
etcd_watch_done_cb(struct evhttp_request *req, void *arg)
{
	struct etcd *e = arg;
	char why[320];
	json_t *doc;

	if (e->dead)
		return;
	if ((doc = etcd_answer(e, req, why, sizeof(why))) != NULL) {
		json_decref(doc);
		snprintf(why, sizeof(why), "watch stream ended");
	}
	etcd_fail(e, 1, why);
}

static void
etcd_watch(struct etcd *e)
{
	char start[32];
	json_t *doc;

	e->state = ETCD_WATCHING;
	snprintf(start, sizeof(start), "%lld", (long long)e->rev + 1);
	doc = json_pack("{s:{s:s, s:s, s:s, s:b}}", "create_request", "key",
	    e->key, "range_end", e->range_end, "start_revision", start,
	    "progress_notify", 1);
	if (doc == NULL || etcd_post(e, "/v3/watch", doc, etcd_watch_done_cb,
	    etcd_watch_chunk_cb) == -1) {
		etcd_fail(e, 1, "watch: cannot send");
		return;
	}
	atomic_store(&etcd_stats.watch_up, 1);
	etcd_arm(e->deadline_ev, e->watch_timeout);
}

/* Sessions ------------------------------------------------------------ */

/* The session's work, once authenticated (or without auth). */
static void
etcd_begin(struct etcd *e)
{
	if (e->relist || !e->listed)
		etcd_list(e);
	else
		etcd_watch(e);
}

static void
etcd_auth_cb(struct evhttp_request *req, void *arg)
{
	struct etcd *e = arg;
	const char *tok;
	char why[400];
	json_t *doc;

	if (e->dead)
		return;
	evtimer_del(e->deadline_ev);
	if ((doc = etcd_answer(e, req, why, sizeof(why) - 80)) == NULL ||
	    (tok = json_string_value(json_object_get(doc, "token"))) ==
	    NULL || (e->token = strdup(tok)) == NULL) {
		json_decref(doc);
		snprintf(why + strlen(why), 80, " (authenticate as \"%.40s\")",
		    e->username);
		etcd_fail(e, 1, why);
		return;
	}
	json_decref(doc);
	etcd_begin(e);
}

/* POST /v3/auth/authenticate: a token for every call of the session. */
static void
etcd_auth(struct etcd *e)
{
	json_t *doc = json_pack("{s:s, s:s}", "name", e->username,
	    "password", e->password);

	e->state = ETCD_AUTH;
	if (doc == NULL || etcd_post(e, "/v3/auth/authenticate", doc,
	    etcd_auth_cb, NULL) == -1) {
		etcd_fail(e, 1, "authenticate: cannot send");
		return;
	}
	etcd_arm(e->deadline_ev, e->request_timeout);
}

/* An evhttp connection over TLS (verified against registry.etcd.tls). */
static struct evhttp_connection *
etcd_tls_conn(struct etcd *e, const char *host, ev_uint16_t port)
{
	struct bufferevent *bev;
	SSL *ssl;

	if ((ssl = tls_cli_ssl(e->tls, NULL)) == NULL)
		return NULL;
	if ((bev = bufferevent_openssl_socket_new(e->base, -1, ssl,
	    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE |
	    BEV_OPT_DEFER_CALLBACKS)) == NULL) {
		SSL_free(ssl);
		return NULL;
	}
	/* The gateway may close without close_notify after an answer. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return evhttp_connection_base_bufferevent_new(e->base, NULL, bev, host,
	    port);
}

static void
etcd_connect(struct etcd *e)
{
	const char *ep = e->endpoints[e->cur], *colon = strrchr(ep, ':');
	char host[64];

	snprintf(host, sizeof(host), "%.*s", (int)(colon - ep), ep);
	e->dead = 0;
	e->conn = e->tls != NULL ? etcd_tls_conn(e, host,
	    (ev_uint16_t)atoi(colon + 1)) : evhttp_connection_base_new(e->base,
	    NULL, host, (ev_uint16_t)atoi(colon + 1));
	if (e->conn == NULL) {
		etcd_fail(e, 1, "cannot make a connection");
		return;
	}
	/* Our own timers judge liveness; evhttp's is a backstop. */
	evhttp_connection_set_timeout(e->conn, (int)(e->watch_timeout +
	    e->request_timeout) + 5);
	evhttp_connection_set_retries(e->conn, 0);
	if (e->username != NULL && e->token == NULL)
		etcd_auth(e);
	else
		etcd_begin(e);
}

/* The prefix's range: PREFIX/deployments/ up to PREFIX/deployments0. */
static int
etcd_range(struct etcd *e, const char *prefix)
{
	char *k, *end;
	int rv = -1;

	if (asprintf(&k, "%s/deployments/", prefix) == -1)
		return -1;
	if ((end = strdup(k)) != NULL) {
		end[strlen(end) - 1]++;
		e->key = b64_encode(k, strlen(k));
		e->range_end = b64_encode(end, strlen(end));
		rv = e->key != NULL && e->range_end != NULL ? 0 : -1;
	}
	free(k);
	free(end);
	return rv;
}

static int
etcd_copy_conf(struct etcd *e, const struct conf_etcd *c)
{
	unsigned i;

	if ((e->endpoints = calloc(c->nendpoints, sizeof(char *))) == NULL)
		return -1;
	for (i = 0; i < c->nendpoints; i++) {
		if ((e->endpoints[i] = strdup(c->endpoints[i])) == NULL)
			return -1;
		e->nendpoints++;
	}
	if (c->snapshot != NULL && (e->snapshot = strdup(c->snapshot)) == NULL)
		return -1;
	e->watch_timeout = c->watch_timeout;
	e->request_timeout = c->request_timeout;
	if (c->username != NULL && ((e->username = strdup(c->username)) ==
	    NULL || (e->password = strdup(c->password)) == NULL))
		return -1;
	return etcd_range(e, c->prefix);
}

static void
etcd_load_snapshot(struct etcd *e)
{
	char err[512];
	int rv;

	if (e->snapshot == NULL)
		return;
	if ((rv = etcd_set_load(e->set, e->snapshot, err, sizeof(err))) ==
	    -1)
		log_warnx("etcd: snapshot not used: %s", err);
	else if (rv == 0) {
		log_info("etcd: snapshot %s: %u replica key(s) until etcd "
		    "answers", e->snapshot, etcd_set_size(e->set));
		atomic_store(&etcd_stats.synced, 1);
	}
}

struct etcd *
etcd_new(struct event_base *base, struct registry *reg,
    const struct conf_etcd *c, char *err, size_t errlen)
{
	struct etcd *e;

	if ((e = calloc(1, sizeof(*e))) == NULL)
		goto oom;
	if (c->https && (e->tls = tls_cli_new(c->tls->ca, c->tls->cert,
	    c->tls->key, c->tls->server_name, err, errlen)) == NULL) {
		free(e);
		return NULL;
	}
	e->base = base;
	e->cur = (unsigned)random() % c->nendpoints;
	if (etcd_copy_conf(e, c) == -1 ||
	    (e->set = etcd_set_new(reg, c->prefix)) == NULL ||
	    (e->lines = evbuffer_new()) == NULL ||
	    (e->kill_ev = event_new(base, -1, 0, etcd_kill_cb, e)) == NULL ||
	    (e->retry_ev = evtimer_new(base, etcd_retry_cb, e)) == NULL ||
	    (e->deadline_ev = evtimer_new(base, etcd_deadline_cb, e)) ==
	    NULL || (e->snap_ev = evtimer_new(base, etcd_snap_cb, e)) == NULL)
		goto oom;
	atomic_store(&etcd_stats.on, 1);
	etcd_heard();
	etcd_load_snapshot(e);
	log_info("etcd: following %s/deployments/ on %u %s endpoint(s)%s%s",
	    c->prefix, e->nendpoints, c->https ? "https" : "http",
	    c->username != NULL ? " as " : "", c->username != NULL ?
	    c->username : "");
	etcd_connect(e);
	return e;
oom:
	etcd_free(e);
	snprintf(err, errlen, "out of memory");
	return NULL;
}

void
etcd_free(struct etcd *e)
{
	unsigned i;

	if (e == NULL)
		return;
	if (e->snap_ev != NULL && evtimer_pending(e->snap_ev, NULL))
		etcd_snap_cb(-1, 0, e);
	if (e->conn != NULL)
		evhttp_connection_free(e->conn);
	if (e->kill_ev != NULL)
		event_free(e->kill_ev);
	if (e->retry_ev != NULL)
		event_free(e->retry_ev);
	if (e->deadline_ev != NULL)
		event_free(e->deadline_ev);
	if (e->snap_ev != NULL)
		event_free(e->snap_ev);
	if (e->lines != NULL)
		evbuffer_free(e->lines);
	etcd_set_free(e->set);
	for (i = 0; i < e->nendpoints; i++)
		free(e->endpoints[i]);
	free(e->endpoints);
	free(e->snapshot);
	tls_cli_free(e->tls);
	free(e->username);
	if (e->password != NULL)
		explicit_bzero(e->password, strlen(e->password));
	free(e->password);
	free(e->token);
	free(e->key);
	free(e->range_end);
	free(e->list_next);
	free(e);
}
