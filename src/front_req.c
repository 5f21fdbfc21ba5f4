/*
 * front_req.c -- one request on a client connection (front_impl.h): the
 * parser callbacks, routing, naming and the target rewrite, and the stream
 * callbacks that build the response; with the timer and output helpers the
 * connection (front.c) shares.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "accesslog.h"
#include "admin.h"
#include "deadline.h"
#include "conf.h"
#include "front.h"
#include "front_impl.h"
#include "handle.h"
#include "hfield.h"
#include "http1.h"
#include "log.h"
#include "metrics.h"
#include "reqlog.h"
#include "resp.h"
#include "route.h"
#include "sock.h"
#include "stream.h"
#include "tls.h"
#include "wctx.h"
#include "wire.h"
#include "worker.h"

/* Timers ----------------------------------------------------------------- */

void
front_arm(struct front *f, enum front_timer kind)
{
	const struct conf_timeouts *t = &f->w->conf->timeouts;

	f->timer_kind = kind;
	deadline_set(&f->timer, kind == T_HEADER ? t->header :
	    kind == T_BODY ? t->body : kind == T_WATCH ? FRONT_WATCH_DELAY :
	    t->keepalive);
}

void
front_disarm(struct front *f)
{
	f->timer_kind = T_NONE;
	deadline_clear(&f->timer);
}

void
front_schedule(struct front *f)
{
	event_active(f->resume, 0, 0);
}

/* Writing ------------------------------------------------------------- */

/* The output, for appending: it is flushed later in this loop pass. */
struct evbuffer *
front_out(struct front *f)
{
	return sock_output(f->sock);
}

size_t
front_out_len(struct front *f)
{
	return sock_output_len(f->sock);
}

double
front_now(struct front *f)
{
	struct timeval tv;

	event_base_gettimeofday_cached(f->w->base, &tv);
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Bytes the client is sent, counted as they are queued. */
void
front_count_out(struct front *f, size_t before)
{
	f->log.bytes_out += front_out_len(f) - before;
}

/* The request is over (or abandoned): one record for log and metrics. */
void
front_reqlog(struct front *f, int aborted)
{
	if (f->log.method == NULL && f->log.status == 0)
		return;
	f->log.peer = f->client[0] != '\0' ? f->client : f->peer;
	f->log.request_id = f->request_id;
	f->log.aborted = aborted;
	f->log.total_s = front_now(f) - f->log.t_start;
	if (f->t_attach > 0)
		f->log.upstream_s = front_now(f) - f->t_attach;
	metrics_request(f->w->metrics, &f->log);
	accesslog_write(f->w->alog, &f->log);
	memset(&f->log, 0, sizeof(f->log));
	f->client[0] = '\0';
	f->log.upstream_s = -1;
	f->t_attach = 0;
}

/* A response made here, not by a replica. */
static void
front_respond_local(struct front *f, int status, const char *why)
{
	size_t before = front_out_len(f);

	resp_error(front_out(f), f->minor, status, why, f->request_id,
	    f->keep_alive, f->is_head);
	front_count_out(f, before);
	f->log.status = status;
	f->resp_started = 1;
	f->resp_done = 1;
}

/* An admin request's body, kept up to ADMIN_MAX_BODY for admin_handle. */
static void
front_admin_body(struct front *f, const char *p, size_t n)
{
	char *nb;

	if (f->admin_big || f->admin_len + n > ADMIN_MAX_BODY ||
	    (nb = realloc(f->admin_body, f->admin_len + n)) == NULL) {
		f->admin_big = 1;
		return;
	}
	f->admin_body = nb;
	memcpy(nb + f->admin_len, p, n);
	f->admin_len += n;
}

static void
front_respond_admin(struct front *f)
{
	const char *ctype = "application/json";
	char *body = NULL;
	size_t len = 0;
	int status;

	if (f->admin_big)
		status = 413;
	else
		status = admin_handle(f->w->worker, f->req, f->admin,
		    f->admin_body, f->admin_len, &body, &len, &ctype);
	free(f->admin_body);
	f->admin_body = NULL;
	f->admin_len = 0;
	f->admin_big = 0;
	if (body == NULL) {
		front_respond_local(f, status, NULL);
	} else {
		size_t before = front_out_len(f);

		resp_simple(front_out(f), f->minor, status, ctype, body, len,
		    f->request_id, f->keep_alive, f->is_head);
		front_count_out(f, before);
		f->log.status = status;
		f->resp_started = 1;
		f->resp_done = 1;
	}
	free(body);
}

/* Stream callbacks: the replica's answer --------------------------------- */

static void
front_resp_head(void *arg, int status, const struct wire_field *fields,
    unsigned n, int end)
{
	struct front *f = arg;
	int64_t clen = resp_content_length(fields, n);
	size_t before;

	if (clen == -2 || status < 200) {
		/* Unusable framing, or an interim status we cannot relay:
		 * the replica's fault. */
		f->local_status = 502;
		clen = -1;
	}
	if (f->is_head || status == 204 || status == 304)
		f->framing = RESP_NONE;
	else if (clen >= 0)
		f->framing = RESP_LENGTH;
	else if (f->minor == 1)
		f->framing = RESP_CHUNKED;
	else
		f->framing = RESP_CLOSE;
	if (f->framing == RESP_CLOSE)
		f->keep_alive = 0;
	f->resp_left = clen >= 0 ? clen : 0;
	if (f->local_status == 502) {
		front_respond_local(f, 502, status < 200 ?
		    "replica sent an interim status" :
		    "replica sent a bad Content-Length");
		return;
	}
	before = front_out_len(f);
	resp_head(front_out(f), f->minor, status, fields, n, f->request_id,
	    f->framing, clen, f->keep_alive);
	front_count_out(f, before);
	f->log.status = status;
	f->resp_started = 1;
}

static void	front_resp_data_write(struct front *, struct evbuffer *, size_t);

static void
front_resp_data(void *arg, struct evbuffer *buf)
{
	struct front *f = arg;
	size_t n = evbuffer_get_length(buf);
	size_t before = front_out_len(f);

	if (!f->resp_started || f->resp_done || f->framing == RESP_NONE) {
		evbuffer_drain(buf, n);
		return;
	}
	front_resp_data_write(f, buf, n);
	f->resp_given += n;
	front_count_out(f, before);
}

/*
 * Response bytes that have left our output buffer are credited back to
 * the replica, so a slow client holds at most a window plus the output
 * buffer's low-water mark per request, never the whole response.
 */
void
front_credit(struct front *f)
{
	uint64_t out = front_out_len(f);
	uint64_t gone;

	if (f->stream == NULL || f->resp_given <= f->resp_credited + out)
		return;
	gone = f->resp_given - f->resp_credited - out;
	f->resp_credited += gone;
	stream_consumed(f->stream, (size_t)gone);
}

static void
front_resp_data_write(struct front *f, struct evbuffer *buf, size_t n)
{
	switch (f->framing) {
	case RESP_LENGTH:
		if ((int64_t)n > f->resp_left) {
			/* More than it announced: cut it off there. */
			evbuffer_remove_buffer(buf, front_out(f),
			    (size_t)f->resp_left);
			evbuffer_drain(buf, evbuffer_get_length(buf));
			f->resp_left = 0;
			f->keep_alive = 0;
			return;
		}
		f->resp_left -= (int64_t)n;
		evbuffer_add_buffer(front_out(f), buf);
		break;
	case RESP_CHUNKED:
		resp_chunk(front_out(f), buf);
		break;
	default:
		evbuffer_add_buffer(front_out(f), buf);
		break;
	}
}

/* The stream goes: freed when it is over, aborted (cancelled, unqueued)
 * when not; then its handle is let go. */
void
front_stream_release(struct front *f, int abort)
{
	if (abort)
		stream_abort(f->stream);
	else
		stream_free(f->stream);
	f->stream = NULL;
	if (f->handle != NULL)
		handle_drop(f->handle);
	f->handle = NULL;
}

/* The stream is over: let go of it, then carry on from the loop's top. */
static void
front_stream_done(struct front *f)
{
	front_stream_release(f, 0);
	f->resp_done = 1;
	front_schedule(f);
}

static void
front_resp_end(void *arg)
{
	struct front *f = arg;

	if (f->resp_started && !f->resp_done) {
		if (f->framing == RESP_CHUNKED) {
			resp_chunk_end(front_out(f));
			f->log.bytes_out += 5;
		}
		else if (f->framing == RESP_LENGTH && f->resp_left > 0)
			f->keep_alive = 0;	/* short body: the client sees
						 * the connection close */
	}
	if (!f->keep_alive && !f->req_done)
		f->req_done = 1;	/* no need to read the rest */
	front_stream_done(f);
}

/* Did the client say it takes a trailer section (TE: trailers)? */
static int
front_client_takes_trailers(const struct front *f)
{
	unsigned i;

	for (i = 0; f->req != NULL && i < f->req->nfields; i++)
		if (f->req->fields[i].name_len == 2 &&
		    strncasecmp(f->req->fields[i].name, "te", 2) == 0 &&
		    resp_te_trailers(f->req->fields[i].value,
		    f->req->fields[i].value_len))
			return 1;
	return 0;
}

/*
 * The replica's trailers go out in the last chunk when the client asked
 * for them; otherwise (or without chunked framing) they are dropped.
 * on_end follows at once: the body is complete here.
 */
static void
front_resp_trailers(void *arg, const struct wire_field *fields, unsigned n)
{
	struct front *f = arg;

	if (!f->resp_started || f->resp_done || f->framing != RESP_CHUNKED ||
	    !front_client_takes_trailers(f))
		return;
	f->log.bytes_out += resp_chunk_trailers(front_out(f), fields, n);
	f->resp_done = 1;	/* the last chunk is out: on_end adds none */
}

static void
front_resp_fail(void *arg, int status, const char *why)
{
	struct front *f = arg;

	log_debug("request %s: %d: %s", f->request_id, status, why);
	f->log.reject = stream_reject(f->stream);
	if (!f->resp_started) {
		front_respond_local(f, status, why);
	} else if (!f->resp_done) {
		/* Mid-response: only a cut connection tells the truth. */
		f->keep_alive = 0;
		f->req_done = 1;
	}
	front_stream_done(f);
}

static void
front_stream_writable(void *arg)
{
	struct front *f = arg;

	if (f->t_attach == 0) {
		f->t_attach = front_now(f);
		f->log.replica = stream_replica(f->stream);
	}
	/* Body bytes may be waiting in the input for the stream. */
	if (!f->req_done)
		sock_read_enable(f->sock, 1);
	front_schedule(f);
}

static const struct stream_ops front_stream_ops = {
	.on_response = front_resp_head,
	.on_data = front_resp_data,
	.on_end = front_resp_end,
	.on_trailers = front_resp_trailers,
	.on_fail = front_resp_fail,
	.on_writable = front_stream_writable,
};

/* Parser callbacks: the client's request ------------------------------- */

/* X-Request-Id from the client if it is sane, else a new one. */
static void
front_request_id(struct front *f, const struct http1_field *fl)
{
	size_t k;

	if (fl != NULL && fl->value_len > 0 && fl->value_len <= FRONT_MAX_RID) {
		for (k = 0; k < fl->value_len; k++) {
			if (fl->value[k] <= ' ' || fl->value[k] > '~')
				break;
		}
		if (k == fl->value_len) {
			memcpy(f->request_id, fl->value, fl->value_len);
			f->request_id[fl->value_len] = '\0';
			return;
		}
	}
	worker_request_id(f->w, f->request_id, sizeof(f->request_id));
}

/* The few request fields the front itself reads, found in one pass. */
struct front_fields {
	const struct http1_field *request_id, *timeout;
	const char	*user_agent, *referer;
};

static void
front_scan_fields(const struct http1_request *r, struct front_fields *ff)
{
	const struct http1_field *fl;
	unsigned i;

	memset(ff, 0, sizeof(*ff));
	for (i = 0; i < r->nfields; i++) {
		fl = &r->fields[i];
		if (hfield_name_is(fl->name, fl->name_len, "x-request-id"))
			ff->request_id = fl;
		else if (hfield_name_is(fl->name, fl->name_len, "user-agent"))
			ff->user_agent = fl->value;
		else if (hfield_name_is(fl->name, fl->name_len, "referer"))
			ff->referer = fl->value;
		else if (hfield_name_is(fl->name, fl->name_len,
		    "x-request-timeout-seconds"))
			ff->timeout = fl;
	}
}

/* The target the replica sees: without the route's prefix if asked. */
static const char *
front_target(struct front *f, const struct conf_route *rt,
    const struct http1_request *r, size_t *len)
{
	*len = r->target_len;
	if (!rt->strip_prefix || rt->prefix_len <= 1)
		return r->target;
	if (r->target_len + 2 > f->target_cap) {
		char *t = realloc(f->target, r->target_len + 2);

		if (t == NULL)
			return r->target;
		f->target = t;
		f->target_cap = r->target_len + 2;
	}
	*len = route_strip(rt, r->target, r->target_len, f->target);
	return f->target;
}

/*
 * A route with deployment_from: the handle for the name the request gives
 * (copied to f->name) and the target to forward.  NULL, with a 404 set
 * up, when the request names no deployment or one nobody knows.
 */
static struct handle *
front_named(struct front *f, const struct conf_route *rt,
    const struct http1_request *r, const char **target, size_t *tlen)
{
	struct route_pick pk;
	struct handle *h = NULL;
	size_t need;
	char *t;
	int named;

	if (f->name == NULL && (f->name = malloc(ROUTE_NAME_MAX + 1)) == NULL) {
		f->local_status = 503;
		f->local_why = "out of memory";
		return NULL;
	}
	if ((named = route_pick(rt, r, &pk) == 0)) {
		memcpy(f->name, pk.name, pk.name_len);
		f->name[pk.name_len] = '\0';
		f->log.deployment = f->name;
		h = handle_get(f->w, f->name);
	}
	/* The 404's text, or "/" + the rest of the path, goes in f->target. */
	need = h == NULL ? ROUTE_NAME_MAX + 64 : pk.rest_len + 2;
	if (need > f->target_cap) {
		if ((t = realloc(f->target, need)) == NULL) {
			f->local_status = 503;
			f->local_why = "out of memory";
			return NULL;
		}
		f->target = t;
		f->target_cap = need;
	}
	if (h == NULL) {
		if (named)
			snprintf(f->target, f->target_cap, "no deployment "
			    "named \"%s\"", f->name);
		else
			snprintf(f->target, f->target_cap, "the request names "
			    "no deployment (%s %s)", rt->from == CONF_FROM_PATH ?
			    "a path segment after" : "header", rt->from ==
			    CONF_FROM_PATH ? rt->prefix : rt->from_header);
		f->local_status = 404;
		f->local_why = f->target;
	} else if (pk.rest == NULL) {
		*target = front_target(f, rt, r, tlen);
	} else if (pk.slash) {
		f->target[0] = '/';
		memcpy(f->target + 1, pk.rest, pk.rest_len);
		*target = f->target;
		*tlen = pk.rest_len + 1;
	} else {
		*target = pk.rest;
		*tlen = pk.rest_len;
	}
	return h;
}

/*
 * A client may ask for a shorter deadline (x-request-timeout-seconds),
 * never a longer one than the deployment allows.
 */
static double
front_timeout(const struct http1_field *fl, double conf_timeout)
{
	char *end;
	double t;

	if (fl == NULL)
		return conf_timeout;
	t = strtod(fl->value, &end);
	if (end == fl->value || *end != '\0' || !(t > 0))
		return conf_timeout;
	return t < conf_timeout ? t : conf_timeout;
}

/*
 * From a trusted proxy, X-Forwarded-For names the client (nginx's realip
 * with real_ip_recursive); the peer otherwise.  For the logs only: the
 * X-Forwarded-For we forward still ends with the peer, the hop we saw.
 */
static void
front_client(struct front *f, const struct http1_request *r)
{
	const struct conf *conf = f->w->conf;

	f->client[0] = '\0';
	if (conf->ntrusted_proxies != 0 && realip_trusted(conf->trusted_proxies,
	    conf->ntrusted_proxies, f->peer))
		(void)realip_client(conf->trusted_proxies,
		    conf->ntrusted_proxies, r, f->client, sizeof(f->client));
}

/* A TLS connection's facts for the log and the replica's headers. */
static void
front_tls_log(struct front *f)
{
	struct ssl_st *ssl = sock_ssl(f->sock);
	char buf[512];

	if (ssl == NULL)
		return;
	if (!f->tls_seen) {
		f->tls_seen = 1;
		if (tls_peer_subject(ssl, buf, sizeof(buf)))
			f->subject = strdup(buf);
	}
	f->log.tls_version = tls_version(ssl);
	f->log.tls_cipher = tls_cipher(ssl);
	f->log.tls_sni = tls_sni(ssl);
	f->log.client_subject = f->subject;
}

static int
front_req_head(void *arg, struct http1_request *r)
{
	struct front *f = arg;
	const struct conf_route *rt;
	struct stream_info info;
	struct front_fields ff;
	struct handle *h;

	front_scan_fields(r, &ff);
	front_client(f, r);
	f->req = r;
	front_tls_log(f);
	f->log.t_start = front_now(f);
	f->log.method = r->method;
	f->log.target = r->target;
	f->log.target_len = r->target_len;
	f->log.minor = r->minor;
	f->log.user_agent = ff.user_agent;
	f->log.referer = ff.referer;
	f->minor = r->minor;
	f->is_head = r->is_head;
	f->keep_alive = r->keep_alive;
	front_request_id(f, ff.request_id);
	front_arm(f, T_BODY);
	if (r->nfields > WIRE_MAX_FIELDS - 3)
		return 431;
	if (admin_is_admin_path(r->target, r->path_len, f->admin)) {
		f->local_status = -1;		/* answered at the end */
		return 0;
	}
	rt = f->admin ? NULL : route_match(f->w->routes, r->host,
	    r->host_len, r->target, r->path_len);
	if (rt == NULL) {
		f->local_status = 404;
		f->local_why = "no route for this path";
		return 0;
	}
	f->log.route = rt->prefix;
	memset(&info, 0, sizeof(info));
	if (rt->from != CONF_FROM_CONF) {
		if ((h = front_named(f, rt, r, &info.target,
		    &info.target_len)) == NULL)
			return 0;
	} else {
		f->log.deployment = rt->deployment;
		if ((h = handle_get(f->w, rt->deployment)) == NULL) {
			f->local_status = 503;
			f->local_why = "unknown deployment";
			f->log.reject = REJECT_NO_REPLICA;
			return 0;
		}
		info.target = front_target(f, rt, r, &info.target_len);
	}
	if (r->expect_continue && r->minor == 1 && r->has_body)
		evbuffer_add(front_out(f), "HTTP/1.1 100 Continue\r\n\r\n", 25);
	info.req = r;
	info.deployment = handle_name(h);
	info.request_id = f->request_id;
	info.client_addr = f->peer;
	info.https = f->log.tls_version != NULL;
	info.client_subject = f->subject;
	info.timeout = front_timeout(ff.timeout, handle_request_timeout(h));
	if ((f->stream = stream_new(f->w, &info, &front_stream_ops, f)) == NULL) {
		f->local_status = 503;
		f->local_why = "out of memory";
		return 0;
	}
	f->handle = h;
	handle_hold(h);		/* retries come back to it: keep it */
	handle_submit(h, f->stream);	/* may fail it at once (queue full) */
	return 0;
}

static int
front_req_body(void *arg, const char *p, size_t n)
{
	struct front *f = arg;

	f->log.bytes_in += n;
	if (f->stream != NULL)
		stream_body(f->stream, p, n);
	else if (f->local_status == -1)
		front_admin_body(f, p, n);
	return 0;
}

static int
front_req_end(void *arg)
{
	struct front *f = arg;

	f->req_done = 1;
	front_disarm(f);
	if (f->stream != NULL && !f->keep_alive) {
		sock_read_enable(f->sock, 0);
		front_arm(f, T_WATCH);
	}
	if (f->stream != NULL)
		stream_body_end(f->stream);
	else if (f->local_status == -1)
		front_respond_admin(f);
	else if (f->local_status != 0 && !f->resp_done)
		front_respond_local(f, f->local_status, f->local_why);
	return 0;
}

const struct http1_callbacks front_http1_callbacks = {
	front_req_head, front_req_body, front_req_end,
};

/* The connection ------------------------------------------------------- */
