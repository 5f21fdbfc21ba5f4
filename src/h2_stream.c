/*
 * h2_stream.c -- one HTTP/2 stream: a request routed and proxied like
 * front.c's; its answer goes back through h2_answer.c.
 *
 * The request head is collected into one buffer ("name\0value\0"...),
 * then turned into the http1_request the core encodes its REQUEST from
 * (stream.h), with :authority as Host.  Pseudo-headers, connection-
 * specific fields and TE were checked by nghttp2 already (RFC 9113 8.2).
 *
 * Flow control, request: body bytes go to the core stream at once; they
 * are consumed (the client's window reopened) only when the stream could
 * pass them to the replica within its credit, so what waits here is at
 * most one stream window.  The response side is h2_answer.c's.
 *
 * gRPC (content-type application/grpc...): grpc-timeout shortens the
 * deadline, which then bounds the whole call (our own timer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "accesslog.h"
#include "admin.h"
#include "conf.h"
#include "grpc.h"
#include "h2_impl.h"
#include "h2s_impl.h"
#include "handle.h"
#include "http1.h"
#include "metrics.h"
#include "realip.h"
#include "reqlog.h"
#include "route.h"
#include "sock.h"
#include "stream.h"
#include "tls.h"
#include "wctx.h"
#include "wire.h"
#include "worker.h"

static void	h2s_release(struct h2s *, int abort);

/*
 * HTTP/2 clients may split Cookie into one field per crumb (RFC 9113
 * 8.2.3, for HPACK's sake); an HTTP/1.1 hop wants one field, joined with
 * "; ".  The cookie fields were left out of s->fields; one goes in here.
 */
static int
h2s_cookies(struct h2s *s, unsigned *nf)
{
	const char *p = s->hbuf, *name, *value;
	size_t nl, vl, len = 0, off = 0;
	unsigned i;

	if (s->ncookie == 0)
		return 0;
	for (i = 0; i < s->nhdr; i++, p = value + vl + 1) {
		name = p;
		nl = strlen(name);
		value = name + nl + 1;
		vl = strlen(value);
		if (nl == 6 && memcmp(name, "cookie", 6) == 0)
			len += vl + 2;
	}
	if ((s->cookie = malloc(len + 1)) == NULL)
		return -1;
	for (p = s->hbuf, i = 0; i < s->nhdr; i++, p = value + vl + 1) {
		name = p;
		nl = strlen(name);
		value = name + nl + 1;
		vl = strlen(value);
		if (nl != 6 || memcmp(name, "cookie", 6) != 0)
			continue;
		if (off > 0) {
			memcpy(s->cookie + off, "; ", 2);
			off += 2;
		}
		memcpy(s->cookie + off, value, vl);
		off += vl;
	}
	s->cookie[off] = '\0';
	s->fields[*nf].name = "cookie";
	s->fields[*nf].name_len = 6;
	s->fields[*nf].value = s->cookie;
	s->fields[(*nf)++].value_len = off;
	return 0;
}

/* The request head ------------------------------------------------------ */

static void	h2s_call_cb(evutil_socket_t, short, void *);

struct h2s *
h2s_new(struct h2conn *c, int32_t id)
{
	struct h2s *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->c = c;
	s->id = id;
	s->grpc_status = -1;
	s->resp_grpc_status = -1;
	s->log.upstream_s = -1;
	s->log.major = 2;
	deadline_init(&s->call, c->w->base, h2s_call_cb, s);
	LIST_INSERT_HEAD(&c->streams, s, link);
	return s;
}

int
h2s_head_seen(const struct h2s *s)
{
	return s->head_seen;
}

static int
h2s_put(struct h2s *s, const uint8_t *p, size_t n)
{
	if (s->hlen + n + 1 > s->hcap) {
		size_t cap = (s->hlen + n + 1) * 2;
		char *nb = realloc(s->hbuf, cap);

		if (nb == NULL)
			return -1;
		s->hbuf = nb;
		s->hcap = cap;
	}
	memcpy(s->hbuf + s->hlen, p, n);
	s->hbuf[s->hlen + n] = '\0';
	s->hlen += n + 1;
	return 0;
}

/*
 * Over max_header_list_size (counted as SETTINGS_MAX_HEADER_LIST_SIZE
 * is: name + value + 32 per field) or limits.max_headers, the rest is
 * ignored and the request answered 431 once its head is complete.
 */
int
h2s_header(struct h2s *s, const uint8_t *name, size_t nlen,
    const uint8_t *value, size_t vlen)
{
	const struct conf *conf = s->c->w->conf;

	if (s->head_seen || s->too_big)
		return 0;	/* request trailers are not forwarded */
	s->hsize += nlen + vlen + 32;
	if (s->hsize > conf->http2.max_header_list_size ||
	    s->nhdr >= conf->limits.max_headers + 4) {
		s->too_big = 1;
		return 0;
	}
	if (h2s_put(s, name, nlen) == -1 || h2s_put(s, value, vlen) == -1)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	s->nhdr++;
	return 0;
}

/* The buffer as an http1_request; pointers into hbuf, which stops
 * growing now.  -1 on a missing :path (CONNECT) or no memory. */
static int
h2s_build(struct h2s *s)
{
	struct http1_request *r = &s->req;
	const char *p = s->hbuf, *name, *value, *auth = NULL, *host = NULL;
	size_t nl, vl, alen = 0, hlen = 0;
	unsigned i, nf = 0;

	if ((s->fields = calloc(s->nhdr + 1, sizeof(*s->fields))) == NULL)
		return -1;
	r->content_length = -1;
	r->major = 2;
	for (i = 0; i < s->nhdr; i++) {
		name = p;
		nl = strlen(name);
		value = name + nl + 1;
		vl = strlen(value);
		p = value + vl + 1;
		if (nl == 7 && memcmp(name, ":method", 7) == 0) {
			r->method = value;
			r->method_len = vl;
		} else if (nl == 5 && memcmp(name, ":path", 5) == 0) {
			r->target = value;
			r->target_len = vl;
		} else if (nl == 10 && memcmp(name, ":authority", 10) == 0) {
			auth = value;
			alen = vl;
		} else if (name[0] != ':') {
			if (nl == 4 && memcmp(name, "host", 4) == 0) {
				host = value;
				hlen = vl;
			} else if (nl == 14 &&
			    memcmp(name, "content-length", 14) == 0)
				r->content_length = strtoll(value, NULL, 10);
			else if (nl == 12 && memcmp(name, "content-type", 12) ==
			    0 && grpc_is_grpc(value, vl))
				s->grpc = 1;
			else if (nl == 6 && memcmp(name, "cookie", 6) == 0) {
				s->ncookie++;
				continue;	/* joined below */
			}
			s->fields[nf].name = name;
			s->fields[nf].name_len = nl;
			s->fields[nf].value = value;
			s->fields[nf++].value_len = vl;
		}
	}
	if (r->method == NULL || r->target == NULL || r->target[0] != '/' ||
	    h2s_cookies(s, &nf) == -1)
		return -1;
	/* :authority is the Host (RFC 9113 8.3.1); forwarded as Host. */
	if (auth != NULL && host == NULL) {
		s->fields[nf].name = "host";
		s->fields[nf].name_len = 4;
		s->fields[nf].value = auth;
		s->fields[nf++].value_len = alen;
	}
	r->host = auth != NULL ? auth : host;
	r->host_len = auth != NULL ? alen : hlen;
	r->fields = s->fields;
	r->nfields = nf;
	r->path_len = strcspn(r->target, "?");
	r->is_head = strcmp(r->method, "HEAD") == 0;
	r->keep_alive = 1;
	return 0;
}

static const struct http1_field *
h2s_field(const struct h2s *s, const char *name)
{
	size_t len = strlen(name);
	unsigned i;

	for (i = 0; i < s->req.nfields; i++)
		if (s->fields[i].name_len == len &&
		    memcmp(s->fields[i].name, name, len) == 0)
			return &s->fields[i];
	return NULL;
}

/* X-Request-Id from the client if it is sane, else a new one. */
static void
h2s_request_id(struct h2s *s)
{
	const struct http1_field *fl = h2s_field(s, "x-request-id");
	size_t k;

	if (fl != NULL && fl->value_len > 0 && fl->value_len <= H2S_MAX_RID) {
		for (k = 0; k < fl->value_len; k++)
			if (fl->value[k] <= ' ' || fl->value[k] > '~')
				break;
		if (k == fl->value_len) {
			memcpy(s->request_id, fl->value, fl->value_len);
			s->request_id[fl->value_len] = '\0';
			return;
		}
	}
	worker_request_id(s->c->w, s->request_id, sizeof(s->request_id));
}

/*
 * The deadline: the deployment's, shortened by x-request-timeout-seconds
 * or (gRPC) grpc-timeout, never lengthened.
 */
static double
h2s_timeout(struct h2s *s, double conf_timeout)
{
	const struct http1_field *fl;
	double t;
	char *end;

	if (s->grpc && (fl = h2s_field(s, "grpc-timeout")) != NULL &&
	    grpc_timeout_parse(fl->value, fl->value_len, &t) == 0)
		return t < conf_timeout ? t : conf_timeout;
	if ((fl = h2s_field(s, "x-request-timeout-seconds")) == NULL)
		return conf_timeout;
	t = strtod(fl->value, &end);
	if (end == fl->value || *end != '\0' || !(t > 0))
		return conf_timeout;
	return t < conf_timeout ? t : conf_timeout;
}

static void
h2s_log_head(struct h2s *s)
{
	const struct conf *conf = s->c->w->conf;
	const struct http1_field *fl;

	s->log.t_start = h2_now(s->c);
	s->log.method = s->req.method;
	s->log.target = s->req.target;
	s->log.target_len = s->req.target_len;
	s->log.grpc = s->grpc;
	if ((fl = h2s_field(s, "user-agent")) != NULL)
		s->log.user_agent = fl->value;
	if ((fl = h2s_field(s, "referer")) != NULL)
		s->log.referer = fl->value;
	if (conf->ntrusted_proxies != 0 && realip_trusted(conf->trusted_proxies,
	    conf->ntrusted_proxies, s->c->peer))
		(void)realip_client(conf->trusted_proxies,
		    conf->ntrusted_proxies, &s->req, s->client,
		    sizeof(s->client));
}

/* The target the replica sees: without the route's prefix if asked. */
static const char *
h2s_target(struct h2s *s, const struct conf_route *rt, size_t *len)
{
	const struct http1_request *r = &s->req;

	*len = r->target_len;
	if (!rt->strip_prefix || rt->prefix_len <= 1)
		return r->target;
	free(s->target);
	if ((s->target = malloc(r->target_len + 2)) == NULL)
		return r->target;
	*len = route_strip(rt, r->target, r->target_len, s->target);
	return s->target;
}

/* deployment_from routes: the handle the request names, or NULL with a
 * 404 answered. */
static struct handle *
h2s_named(struct h2s *s, const struct conf_route *rt, const char **target,
    size_t *tlen)
{
	struct route_pick pk;
	struct handle *h = NULL;
	char why[ROUTE_NAME_MAX + 64];

	if (route_pick(rt, &s->req, &pk) == 0) {
		free(s->name);
		if ((s->name = strndup(pk.name, pk.name_len)) == NULL) {
			h2s_local(s, 503, "out of memory");
			return NULL;
		}
		s->log.deployment = s->name;
		h = handle_get(s->c->w, s->name);
		snprintf(why, sizeof(why), "no deployment named \"%s\"",
		    s->name);
	} else
		snprintf(why, sizeof(why), "the request names no deployment");
	if (h == NULL) {
		h2s_local(s, 404, why);
		return NULL;
	}
	if (pk.rest == NULL) {
		*target = h2s_target(s, rt, tlen);
	} else {
		free(s->target);
		if ((s->target = malloc(pk.rest_len + 2)) == NULL) {
			h2s_local(s, 503, "out of memory");
			return NULL;
		}
		s->target[0] = '/';
		memcpy(s->target + pk.slash, pk.rest, pk.rest_len);
		*target = s->target;
		*tlen = pk.rest_len + pk.slash;
	}
	return h;
}

static const struct stream_ops h2s_stream_ops;

/* Over TLS: the connection's facts for the log and the replica's
 * headers (X-Forwarded-Proto, a verified client certificate's subject). */
static void
h2s_tls(struct h2s *s, struct stream_info *info)
{
	struct h2conn *c = s->c;
	struct ssl_st *ssl = sock_ssl(c->sock);
	char buf[512];

	if (ssl == NULL)
		return;
	if (!c->tls_seen) {
		c->tls_seen = 1;
		if (tls_peer_subject(ssl, buf, sizeof(buf)))
			c->subject = strdup(buf);
	}
	s->log.tls_version = tls_version(ssl);
	s->log.tls_cipher = tls_cipher(ssl);
	s->log.tls_sni = tls_sni(ssl);
	s->log.client_subject = c->subject;
	info->https = 1;
	info->client_subject = c->subject;
}

/* Route and submit, as front_req_head does. */
static void
h2s_route(struct h2s *s)
{
	struct h2conn *c = s->c;
	const struct conf_route *rt;
	struct stream_info info;
	struct handle *h;

	memset(&info, 0, sizeof(info));
	h2s_tls(s, &info);
	if (admin_is_admin_path(s->req.target, s->req.path_len, c->admin)) {
		s->admin = 1;		/* answered at the end of the body */
		return;
	}
	rt = c->admin ? NULL : route_match(c->w->routes, s->req.host,
	    s->req.host_len, s->req.target, s->req.path_len);
	if (rt == NULL) {
		h2s_local(s, 404, "no route for this path");
		return;
	}
	s->log.route = rt->prefix;
	if (rt->from != CONF_FROM_CONF) {
		if ((h = h2s_named(s, rt, &info.target, &info.target_len)) ==
		    NULL)
			return;
	} else {
		s->log.deployment = rt->deployment;
		if ((h = handle_get(c->w, rt->deployment)) == NULL) {
			s->log.reject = REJECT_NO_REPLICA;
			h2s_local(s, 503, "unknown deployment");
			return;
		}
		info.target = h2s_target(s, rt, &info.target_len);
	}
	info.req = &s->req;
	info.deployment = handle_name(h);
	info.request_id = s->request_id;
	info.client_addr = c->peer;
	info.timeout = h2s_timeout(s, handle_request_timeout(h));
	if ((s->stream = stream_new(c->w, &info, &h2s_stream_ops, s)) == NULL) {
		h2s_local(s, 503, "out of memory");
		return;
	}
	if (s->grpc)
		deadline_set(&s->call, info.timeout);
	s->handle = h;
	handle_hold(h);
	handle_submit(h, s->stream);	/* may fail it at once */
}

void
h2s_head_done(struct h2s *s, int end_stream)
{
	const struct conf *conf = s->c->w->conf;

	s->head_seen = 1;
	s->req_done = end_stream;
	if (h2s_build(s) == -1) {
		/* CONNECT (no :path): not a proxy for tunnels. */
		nghttp2_submit_rst_stream(s->c->ss, NGHTTP2_FLAG_NONE, s->id,
		    NGHTTP2_REFUSED_STREAM);
		return;
	}
	s->req.has_body = !end_stream;
	h2s_request_id(s);
	h2s_log_head(s);
	if (s->too_big || s->req.nfields > WIRE_MAX_FIELDS - 3 ||
	    s->req.nfields > conf->limits.max_headers) {
		h2s_local(s, 431, "request header fields too large");
		return;
	}
	if (s->req.content_length > 0 &&
	    (uint64_t)s->req.content_length > conf->limits.max_body) {
		h2s_local(s, 413, "request body too large");
		return;
	}
	h2s_route(s);
	if (s->admin && end_stream)
		h2s_body_end(s);
}

/* The request body ------------------------------------------------------ */

static void
h2s_admin_body(struct h2s *s, const uint8_t *p, size_t n)
{
	char *nb;

	if (s->admin_big || s->admin_len + n > ADMIN_MAX_BODY ||
	    (nb = realloc(s->admin_body, s->admin_len + n)) == NULL) {
		s->admin_big = 1;
		return;
	}
	s->admin_body = nb;
	memcpy(nb + s->admin_len, p, n);
	s->admin_len += n;
}

void
h2s_body(struct h2s *s, const uint8_t *p, size_t n)
{
	s->log.bytes_in += n;
	if (s->stream != NULL && s->log.bytes_in > s->c->w->conf->limits.max_body) {
		h2s_release(s, 1);
		h2s_local(s, 413, "request body too large");
	}
	if (s->stream == NULL) {
		if (s->admin)
			h2s_admin_body(s, p, n);
		nghttp2_session_consume(s->c->ss, s->id, n);
		return;
	}
	stream_body(s->stream, (const char *)p, n);
	s->unacked += n;
	h2s_credit(s);
}

void
h2s_credit(struct h2s *s)
{
	if (s->unacked == 0 || (s->stream != NULL &&
	    !stream_can_take_body(s->stream)))
		return;
	nghttp2_session_consume(s->c->ss, s->id, (size_t)s->unacked);
	s->unacked = 0;
}

void
h2s_credit_all(struct h2conn *c)
{
	struct h2s *s;

	LIST_FOREACH(s, &c->streams, link)
		h2s_credit(s);
}

void
h2s_body_end(struct h2s *s)
{
	s->req_done = 1;
	if (s->stream != NULL)
		stream_body_end(s->stream);
	else if (s->admin && !s->head_sent)
		h2s_admin(s);
}

/* The core stream's callbacks ------------------------------------------ */

static void
h2s_on_response(void *arg, int status, const struct wire_field *f,
    unsigned n, int end)
{
	struct h2s *s = arg;

	s->status = status;
	if (status < 200) {
		s->log.reject = REJECT_REPLICA_FAILED;
		if (!end)	/* with end, on_end follows and frees it */
			h2s_release(s, 1);
		h2s_local(s, 502, "replica sent an interim status");
		return;
	}
	if (s->grpc) {
		h2s_head_status(s, f, n);
		if (end || status != 200) {
			/* No message follows, or not a gRPC answer. */
			if (!end)
				h2s_release(s, 1);
			h2s_trailers_only(s, f, n);
			return;
		}
	}
	if (h2s_respond(s, status, f, n, end) == -1) {
		if (!end)
			h2s_release(s, 1);
		h2s_local(s, 503, "out of memory");
	}
}

static void
h2s_on_data(void *arg, struct evbuffer *buf)
{
	struct h2s *s = arg;
	size_t n = evbuffer_get_length(buf);

	if (!s->has_body || s->eof || (s->out == NULL &&
	    (s->out = evbuffer_new()) == NULL)) {
		evbuffer_drain(buf, n);
		return;
	}
	s->log.bytes_out += n;
	evbuffer_add_buffer(s->out, buf);
	nghttp2_session_resume_data(s->c->ss, s->id);
	h2_schedule(s->c);
}

/* Copy the replica's trailers: they go out after the last DATA. */
static void
h2s_on_trailers(void *arg, const struct wire_field *f, unsigned n)
{
	struct h2s *s = arg;
	size_t len = 0;
	unsigned i;
	char *p;

	for (i = 0; i < n; i++)
		len += f[i].name.len + f[i].value.len + 2;
	free(s->tbuf);
	s->ntr = 0;
	if ((s->tbuf = malloc(len + 1)) == NULL)
		return;
	for (p = s->tbuf, i = 0; i < n; i++) {
		memcpy(p, f[i].name.p, f[i].name.len);
		p[f[i].name.len] = '\0';
		p += f[i].name.len + 1;
		memcpy(p, f[i].value.p, f[i].value.len);
		p[f[i].value.len] = '\0';
		p += f[i].value.len + 1;
	}
	s->tlen = len;
	s->ntr = n;
}

static void
h2s_on_end(void *arg)
{
	struct h2s *s = arg;

	h2s_release(s, 0);
	h2s_finish(s);
}

static void
h2s_on_fail(void *arg, int status, const char *why)
{
	struct h2s *s = arg;

	s->log.reject = stream_reject(s->stream);
	h2s_release(s, 0);
	h2s_local(s, status, why);
}

static void
h2s_on_writable(void *arg)
{
	struct h2s *s = arg;

	if (s->t_attach == 0) {
		s->t_attach = h2_now(s->c);
		s->log.replica = stream_replica(s->stream);
	}
	h2_schedule(s->c);	/* h2s_credit, after the pending body went */
}

static const struct stream_ops h2s_stream_ops = {
	.on_response = h2s_on_response,
	.on_data = h2s_on_data,
	.on_end = h2s_on_end,
	.on_trailers = h2s_on_trailers,
	.on_fail = h2s_on_fail,
	.on_writable = h2s_on_writable,
};

/* The gRPC deadline passed: the whole call, not a gap. */
static void
h2s_call_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct h2s *s = arg;

	if (!deadline_expired(&s->call) || s->end_sent || s->eof)
		return;
	s->log.reject = REJECT_DEADLINE;
	h2s_release(s, 1);		/* CANCEL to the replica */
	h2s_local(s, 504, "deadline exceeded");
}

/* Lifetimes ---------------------------------------------------------------- */

/* Let go of the core stream: freed when over, aborted (CANCEL to the
 * replica, or out of its queue) when not; then the handle. */
static void
h2s_release(struct h2s *s, int abort)
{
	if (s->stream == NULL)
		return;
	if (abort)
		stream_abort(s->stream);
	else
		stream_free(s->stream);
	s->stream = NULL;
	if (s->handle != NULL)
		handle_drop(s->handle);
	s->handle = NULL;
	if (s->t_attach > 0)
		s->log.upstream_s = h2_now(s->c) - s->t_attach;
}

/*
 * The response is complete while the client still sends: RFC 9113 8.1
 * lets us ask it to stop with RST_STREAM(NO_ERROR).
 */
void
h2s_sent_end(struct h2s *s)
{
	s->end_sent = 1;
	if (!s->req_done)
		nghttp2_submit_rst_stream(s->c->ss, NGHTTP2_FLAG_NONE, s->id,
		    NGHTTP2_NO_ERROR);
}

static void
h2s_free(struct h2s *s)
{
	struct h2conn *c = s->c;

	LIST_REMOVE(s, link);
	h2s_release(s, 1);
	if (s->log.method != NULL || s->log.status != 0) {
		s->log.peer = s->client[0] != '\0' ? s->client : c->peer;
		s->log.request_id = s->request_id;
		s->log.total_s = h2_now(c) - s->log.t_start;
		metrics_request(c->w->metrics, &s->log);
		accesslog_write(c->w->alog, &s->log);
	}
	deadline_del(&s->call);
	if (s->out != NULL)
		evbuffer_free(s->out);
	free(s->hbuf);
	free(s->fields);
	free(s->target);
	free(s->name);
	free(s->admin_body);
	free(s->tbuf);
	free(s->cookie);
	free(s);
	c->stream_gone(c);
}

void
h2s_closed(struct h2s *s, uint32_t error)
{
	if (!s->end_sent) {
		s->log.aborted = 1;
		if (s->grpc)
			s->log.grpc_status = GRPC_CANCELLED;
	}
	h2s_free(s);
}

void
h2s_abandon(struct h2s *s)
{
	h2s_closed(s, NGHTTP2_CANCEL);
}
