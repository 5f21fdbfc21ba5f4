/*
 * fuzz_front.c -- libFuzzer target for the request path: client bytes in,
 * whatever the front door does out.
 *
 * One worker with the real front, http1, route, handle, stream and upstream
 * code; its event_base is run here, no thread.  Its one deployment "d" is a
 * replica stand-in in this file, on a unix socket on the same event_base: it
 * speaks the wire protocol (HELLO, PONG, WINDOW for request bodies), records
 * every REQUEST, DATA, END and CANCEL, and answers each complete request with
 * 200 and "ok".  Each input is one client connection (a socketpair): the
 * bytes are written in pieces (the first input byte picks the size), the
 * loop runs until nothing moves, the client closes, the loop runs again.
 *
 * The verdict is compared with http1 alone fed the same bytes (the
 * reference; fuzz_http1 shows its verdict does not depend on the pieces):
 *  - the replica gets one REQUEST per forwardable head the reference
 *    accepted, in order, with its method and target (strip_prefix applied)
 *    and only end-to-end fields; never a request the reference did not see
 *    (nothing smuggled), never a body byte it did not deliver, and END only
 *    for a message the reference completed; anything left open is
 *    cancelled once the client is gone;
 *  - the client gets well-formed responses: one per complete message, then
 *    the reference's error status if it failed; 200 for every forwarded one;
 *  - the connection is closed by the proxy exactly when the reference
 *    failed or the last message did not keep the connection alive.
 * ASan and UBSan watch the rest.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "conf.h"
#include "front.h"
#include "http1.h"
#include "log.h"
#include "registry.h"
#include "route.h"
#include "wire.h"
#include "upstream.h"
#include "wctx.h"
#include "worker.h"

int	LLVMFuzzerInitialize(int *, char ***);
static void	dump(void);
static void	warm_up(void);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(x)	do { if (!(x)) { fprintf(stderr, "%s:%d: %s\n", \
			    __FILE__, __LINE__, #x); dump(); abort(); } } \
			    while (0)

#define STRIP		"/strip/"	/* a strip_prefix route */
#define MAX_LOOPS	200000

/* --- growable byte strings ---------------------------------------------- */

struct bytes {
	char	*p;
	size_t	 n, cap;
};

static void
bytes_add(struct bytes *b, const void *p, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		if ((b->p = realloc(b->p, b->cap)) == NULL)
			abort();
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void
bytes_free(struct bytes *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

static int
bytes_eq(const struct bytes *a, const struct bytes *b)
{
	return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
}

/* A request as one side saw it: the reference parser, or the replica. */
struct msg {
	struct bytes	 method, target;
	struct bytes	 fields;	/* "name\0value\0" pairs */
	struct bytes	 host;		/* reference: the Host to forward */
	int		 has_host;
	unsigned	 nfields;
	struct bytes	 body;
	int		 keep_alive, is_head, forwardable;
	int		 deadline;	/* asks for its own (504 possible) */
	int		 complete;	/* reference: on_end; replica: END */
	int		 cancelled;	/* replica: CANCEL */
	uint32_t	 id;		/* replica: stream id */
};

struct msgs {
	struct msg	*v;
	unsigned	 n, cap;
};

static struct msg *
msgs_add(struct msgs *m)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		if ((m->v = reallocarray(m->v, m->cap, sizeof *m->v)) == NULL)
			abort();
	}
	memset(&m->v[m->n], 0, sizeof m->v[0]);
	return &m->v[m->n++];
}

static void
msgs_clear(struct msgs *m)
{
	unsigned	 i;

	for (i = 0; i < m->n; i++) {
		bytes_free(&m->v[i].method);
		bytes_free(&m->v[i].target);
		bytes_free(&m->v[i].fields);
		bytes_free(&m->v[i].host);
		bytes_free(&m->v[i].body);
	}
	m->n = 0;
}

/* --- the world: conf, worker, replica stand-in ------------------------- */

static struct conf		*conf;
static struct registry		*reg;
static struct route_table	*routes;
static struct worker_snap	*snap;
static struct worker		*w;
static const struct worker_hooks hooks = {
	.drain_all = front_drain_all,
	.free_all = front_free_all,
};
static struct event_base	*base;
static char			 dir[64];
static char			 sock_path[128];
static struct msgs		 replica;	/* what the replica got */
static unsigned			 moved;		/* progress, for quiescence */
static const struct msgs	*dump_ref;	/* for dump() */
static const struct bytes	*dump_out;

static void
send_frame(struct bufferevent *bev, const uint8_t *p, size_t n)
{
	bufferevent_write(bev, p, n);
}

static void
replica_hello(struct bufferevent *bev)
{
	struct wire_hello	 h;
	uint8_t			 out[512];
	size_t			 n;

	memset(&h, 0, sizeof h);
	h.version = WIRE_VERSION;
	h.max_concurrency = 64;
	h.deployment.p = "d";
	h.deployment.len = 1;
	h.replica_id.p = "stand-in";
	h.replica_id.len = 8;
	CHECK(wire_hello_size(&h) <= sizeof out);
	n = wire_encode_hello(out, &h);
	CHECK(n != 0);
	send_frame(bev, out, n);
}

static struct msg *
replica_find(uint32_t id)
{
	unsigned	 i;

	for (i = replica.n; i > 0; i--)
		if (replica.v[i - 1].id == id)
			return &replica.v[i - 1];
	return NULL;
}

static void
replica_respond(struct bufferevent *bev, uint32_t id)
{
	struct wire_field	 f = { { "content-length", 14 }, { "2", 1 } };
	struct wire_response	 r = { 200, &f, 1 };
	uint8_t			 out[256], hdr[WIRE_HEADER_SIZE];
	size_t			 n;

	CHECK(wire_response_size(&r) <= sizeof out);
	n = wire_encode_response(out, id, 0, &r);
	CHECK(n != 0);
	send_frame(bev, out, n);
	wire_encode_header(hdr, 2, WIRE_DATA, WIRE_FLAG_END, id);
	send_frame(bev, hdr, sizeof hdr);
	send_frame(bev, (const uint8_t *)"ok", 2);
}

static void
replica_request(struct bufferevent *bev, const struct wire_frame *f)
{
	static struct wire_field fields[WIRE_MAX_FIELDS];
	struct wire_request	 rq;
	struct msg		*m;
	unsigned		 i;

	CHECK(wire_decode_request(f, &rq, fields, WIRE_MAX_FIELDS) ==
	    WIRE_OK);
	CHECK(replica_find(f->stream) == NULL);
	m = msgs_add(&replica);
	m->id = f->stream;
	bytes_add(&m->method, rq.method.p, rq.method.len);
	bytes_add(&m->target, rq.target.p, rq.target.len);
	for (i = 0; i < rq.nfields; i++) {
		bytes_add(&m->fields, rq.fields[i].name.p,
		    rq.fields[i].name.len);
		bytes_add(&m->fields, "", 1);
		bytes_add(&m->fields, rq.fields[i].value.p,
		    rq.fields[i].value.len);
		bytes_add(&m->fields, "", 1);
	}
	m->nfields = rq.nfields;
	if (f->flags & WIRE_FLAG_END) {
		m->complete = 1;
		replica_respond(bev, f->stream);
	}
}

static void
replica_frame(struct bufferevent *bev, const struct wire_frame *f)
{
	struct msg	*m;
	uint8_t		 out[WIRE_HEADER_SIZE + 8];

	moved++;
	switch (f->type) {
	case WIRE_HELLO:
		break;
	case WIRE_PING:
		wire_encode_ping(out, WIRE_PONG, f->payload);
		send_frame(bev, out, WIRE_HEADER_SIZE + 8);
		break;
	case WIRE_REQUEST:
		replica_request(bev, f);
		break;
	case WIRE_DATA:
		CHECK((m = replica_find(f->stream)) != NULL);
		CHECK(!m->complete && !m->cancelled);
		bytes_add(&m->body, f->payload, f->length);
		wire_encode_window(out, f->stream, f->length);
		send_frame(bev, out, WIRE_HEADER_SIZE + 4);
		if (f->flags & WIRE_FLAG_END) {
			m->complete = 1;
			replica_respond(bev, f->stream);
		}
		break;
	case WIRE_END:
		CHECK((m = replica_find(f->stream)) != NULL);
		CHECK(!m->complete && !m->cancelled);
		m->complete = 1;
		replica_respond(bev, f->stream);
		break;
	case WIRE_CANCEL:
		/* A CANCEL may cross our answer: only unknown ids are bad. */
		if ((m = replica_find(f->stream)) != NULL)
			m->cancelled = 1;
		break;
	default:
		break;
	}
}

static void
replica_read_cb(struct bufferevent *bev, void *arg)
{
	struct evbuffer		*in = bufferevent_get_input(bev);
	struct wire_frame	 f;
	size_t			 len, need;
	int			 rc;

	while ((len = evbuffer_get_length(in)) >= WIRE_HEADER_SIZE) {
		rc = wire_decode_frame(evbuffer_pullup(in, -1), len, &f, &need);
		if (rc == WIRE_NEED_MORE)
			return;
		/* ingressd must never send a frame its own decoder refuses. */
		CHECK(rc == WIRE_OK);
		replica_frame(bev, &f);
		evbuffer_drain(in, WIRE_HEADER_SIZE + f.length);
	}
}

static void
replica_event_cb(struct bufferevent *bev, short what, void *arg)
{
	bufferevent_free(bev);
}

static void
replica_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int len, void *arg)
{
	struct bufferevent	*bev;

	bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	CHECK(bev != NULL);
	bufferevent_setcb(bev, replica_read_cb, NULL, replica_event_cb, NULL);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	replica_hello(bev);
}

static void
write_conf(const char *path)
{
	FILE	*fp;

	CHECK((fp = fopen(path, "w")) != NULL);
	fprintf(fp, "{\"listen\": [\"127.0.0.1:0\"], \"log_level\": \"warn\","
	    " \"runtime_dir\": \"%s\","
	    " \"limits\": {\"max_request_line\": 256, \"max_header_bytes\":"
	    " 1024, \"max_headers\": 32, \"max_body\": 4096},"
	    " \"routes\": [{\"prefix\": \"/\", \"deployment\": \"d\"},"
	    " {\"prefix\": \"" STRIP "\", \"deployment\": \"d\","
	    " \"strip_prefix\": true}],"
	    " \"deployments\": {\"d\": {\"endpoints\": [\"unix:%s\"]}}}\n",
	    dir, sock_path);
	CHECK(fclose(fp) == 0);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_un	 sun;
	struct reg_change	*changes;
	unsigned		 nchanges;
	char			 path[192], err[512];

	/* FUZZ_FRONT_DEBUG=1: the daemon's debug log, to triage a crash. */
	log_init(getenv("FUZZ_FRONT_DEBUG") != NULL ? LOG_LEVEL_DEBUG :
	    LOG_LEVEL_WARN);
	/* The client side may write after the proxy closed. */
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof dir, "/tmp/fuzz_front.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(sock_path, sizeof sock_path, "%s/replica.sock", dir);
	snprintf(path, sizeof path, "%s/conf.json", dir);
	write_conf(path);
	if ((conf = conf_load(path, err, sizeof err)) == NULL) {
		fprintf(stderr, "fuzz_front: %s\n", err);
		abort();
	}
	unlink(path);
	CHECK(upstream_register() == 0);
	CHECK((reg = registry_new(1, dir)) != NULL);
	CHECK(registry_reload(reg, conf, &changes, &nchanges, err,
	    sizeof err) == 0);
	registry_changes_free(changes, nchanges);
	CHECK((routes = route_table_new(conf)) != NULL);
	CHECK((snap = worker_snap_new(conf, routes)) != NULL);
	CHECK((w = worker_new(0, snap, reg, &hooks)) != NULL);
	base = worker_ctx(w)->base;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", sock_path);
	CHECK(evconnlistener_new_bind(base, replica_accept_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE, 16, (struct sockaddr *)&sun,
	    sizeof sun) != NULL);
	warm_up();
	return 0;
}

/* --- the reference: http1 alone ----------------------------------------- */

struct ref {
	struct msgs	 m;
	struct msg	*cur;
	int		 error;		/* status, 0 if none */
	int		 stopped;	/* message without keep-alive ended */
};

static int
forwardable(const struct http1_request *r)
{
	return r->target[0] == '/' && !(r->path_len >= 3 &&
	    memcmp(r->target, "/-/", 3) == 0);
}

static int
ref_head(void *arg, struct http1_request *r)
{
	struct ref	*ref = arg;
	struct msg	*m = msgs_add(&ref->m);
	unsigned	 i;

	bytes_add(&m->method, r->method, r->method_len);
	/* The strip_prefix route: "/strip/x" reaches the replica as "/x". */
	if (strncmp(r->target, STRIP, strlen(STRIP)) == 0)
		bytes_add(&m->target, r->target + strlen(STRIP) - 1,
		    r->target_len - strlen(STRIP) + 1);
	else
		bytes_add(&m->target, r->target, r->target_len);
	for (i = 0; i < r->nfields; i++) {
		bytes_add(&m->fields, r->fields[i].name,
		    r->fields[i].name_len + 1);
		bytes_add(&m->fields, r->fields[i].value,
		    r->fields[i].value_len + 1);
	}
	m->nfields = r->nfields;
	/* Absolute-form: the authority replaces Host (RFC 9112 3.2.2). */
	if ((m->has_host = r->host != NULL))
		bytes_add(&m->host, r->host, r->host_len);
	for (i = 0; i < r->nfields; i++)
		if (strcasecmp(r->fields[i].name,
		    "x-request-timeout-seconds") == 0)
			m->deadline = 1;
	m->keep_alive = r->keep_alive;
	m->is_head = r->is_head;
	m->forwardable = forwardable(r);
	ref->cur = m;
	return 0;
}

static int
ref_body(void *arg, const char *p, size_t n)
{
	struct ref	*ref = arg;

	bytes_add(&ref->cur->body, p, n);
	return 0;
}

static int
ref_end(void *arg)
{
	struct ref	*ref = arg;

	ref->cur->complete = 1;
	return 0;
}

static const struct http1_callbacks ref_cbs = { ref_head, ref_body, ref_end };

/* The front's limits are the conf's. */
static void
ref_run(struct ref *ref, const char *p, size_t n)
{
	struct http1_limits	 lim;
	struct http1		*h;
	enum http1_state	 st;
	size_t			 off = 0, c;

	lim.max_request_line = conf->limits.max_request_line;
	lim.max_header_bytes = conf->limits.max_header_bytes;
	lim.max_headers = conf->limits.max_headers;
	lim.max_body = conf->limits.max_body;
	CHECK((h = http1_new(&lim, &ref_cbs, ref)) != NULL);
	while (off < n) {
		st = http1_feed(h, p + off, n - off, &c);
		off += c;
		if (st == HTTP1_ERROR) {
			ref->error = http1_error_status(h);
			break;
		}
		if (st == HTTP1_MORE)
			break;
		/* DONE: the front closes after a message without
		 * keep-alive and never reads what follows. */
		if (!ref->cur->keep_alive) {
			ref->stopped = 1;
			break;
		}
		http1_next(h);
	}
	http1_free(h);
}

/* --- the client's side --------------------------------------------------- */

static int
fd_nonblock(int fd)
{
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Read what the proxy sent; returns 1 at EOF. */
static int
client_read(int fd, struct bytes *out)
{
	char	 buf[16384];
	ssize_t	 r;

	for (;;) {
		r = read(fd, buf, sizeof buf);
		if (r > 0) {
			bytes_add(out, buf, (size_t)r);
			moved++;
			continue;
		}
		return r == 0 || (r == -1 && errno != EAGAIN);
	}
}

/* Run the loop until nothing moves for a few rounds. */
static void
settle(int cfd, struct bytes *out, int *eof, const char *p, size_t n,
    size_t *sent, size_t piece)
{
	unsigned	 i, idle = 0, last = moved;
	ssize_t		 r;
	size_t		 k;

	for (i = 0; i < MAX_LOOPS && idle < 8; i++) {
		if (*sent < n) {
			k = n - *sent < piece ? n - *sent : piece;
			r = write(cfd, p + *sent, k);
			if (r > 0) {
				*sent += (size_t)r;
				moved++;
			}
		}
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (!*eof && client_read(cfd, out))
			*eof = 1;
		idle = moved == last ? idle + 1 : 0;
		last = moved;
	}
	CHECK(i < MAX_LOOPS);
}

/* One response from the client's bytes; returns its status, or 0 when
 * there is none (the rest must be empty). */
static int
parse_response(const struct bytes *out, size_t *off, int is_head)
{
	const char	*s, *end, *e, *h;
	long		 cl = -1;
	int		 status;

	if (out->n == 0)
		return 0;
	s = out->p + *off;
	end = out->p + out->n;
	for (;;) {
		if (s == end)
			return 0;
		CHECK(end - s > 12 && memcmp(s, "HTTP/1.", 7) == 0);
		status = atoi(s + 9);
		CHECK(status >= 100 && status <= 599);
		CHECK((e = memmem(s, end - s, "\r\n\r\n", 4)) != NULL);
		for (h = memchr(s, '\n', e - s); h != NULL && h < e;
		    h = memchr(h + 1, '\n', e - h - 1))
			if (strncasecmp(h + 1, "content-length:", 15) == 0)
				cl = atol(h + 16);
		s = e + 4;
		if (status >= 200)
			break;
		cl = -1;
	}
	/* Every response we make or relay here carries a Content-Length. */
	CHECK(cl >= 0);
	if (!is_head && status != 204 && status != 304) {
		CHECK(end - s >= cl);
		s += cl;
	}
	*off = (size_t)(s - out->p);
	return status;
}

/* Only end-to-end fields reach the replica, each as the client sent it;
 * one Host, the request's (the authority of an absolute-form target). */
static void
check_fields(const struct msg *got, const struct msg *want)
{
	static const char *const hop[] = { "connection", "keep-alive",
	    "proxy-connection", "te", "trailer", "transfer-encoding",
	    "upgrade", NULL };
	const char	*n = got->fields.p, *v, *wn, *wv;
	unsigned	 i, j, k, nhost = 0;
	int		 found;

	for (i = 0; i < got->nfields; i++) {
		v = n + strlen(n) + 1;
		for (k = 0; hop[k] != NULL; k++)
			CHECK(strcasecmp(n, hop[k]) != 0);
		if (strcasecmp(n, "host") == 0) {
			CHECK(nhost++ == 0 && want->has_host);
			CHECK(strlen(v) == want->host.n &&
			    memcmp(v, want->host.p, want->host.n) == 0);
			n = v + strlen(v) + 1;
			continue;
		}
		found = strcasecmp(n, "x-forwarded-for") == 0 ||
		    strcasecmp(n, "x-forwarded-proto") == 0;
		wn = want->fields.p;
		for (j = 0; !found && j < want->nfields; j++) {
			wv = wn + strlen(wn) + 1;
			found = strcmp(n, wn) == 0 && strcmp(v, wv) == 0;
			wn = wv + strlen(wv) + 1;
		}
		CHECK(found);
		n = v + strlen(v) + 1;
	}
	CHECK(nhost == (unsigned)want->has_host);
}

static void
check(const struct ref *ref, const struct bytes *out, int eof_before_close)
{
	const struct msg *m, *got;
	unsigned	 i, g = 0, ncomplete = 0;
	size_t		 off = 0;
	int		 st, late;

	/* The replica: exactly the forwardable heads, in order. */
	for (i = 0; i < ref->m.n; i++) {
		m = &ref->m.v[i];
		if (m->complete)
			ncomplete++;
		if (!m->forwardable)
			continue;
		CHECK(g < replica.n);
		got = &replica.v[g++];
		CHECK(bytes_eq(&got->method, &m->method));
		CHECK(bytes_eq(&got->target, &m->target));
		check_fields(got, m);
		CHECK(got->body.n <= m->body.n && (got->body.n == 0 ||
		    memcmp(got->body.p, m->body.p, got->body.n) == 0));
		/* A client-chosen deadline may expire first (504, CANCEL). */
		if (m->deadline && got->cancelled)
			continue;
		CHECK(got->complete == m->complete);
		if (m->complete)
			CHECK(bytes_eq(&got->body, &m->body));
		else
			CHECK(got->cancelled);
	}
	CHECK(g == replica.n);

	/* The client: one answer per complete message, then the error. */
	for (i = 0; i < ncomplete; i++) {
		m = &ref->m.v[i];
		st = parse_response(out, &off, m->is_head);
		CHECK(st != 0);
		if (m->forwardable)
			CHECK(st == 200 || (m->deadline && st == 504));
	}
	/* The message after them, unfinished: if it asked for its own
	 * deadline, that may pass while its body is still coming; then it is
	 * answered 504 and the connection closed, the rest never read. */
	m = ncomplete < ref->m.n ? &ref->m.v[ncomplete] : NULL;
	late = m != NULL && m->forwardable && m->deadline;
	st = parse_response(out, &off, late ? m->is_head : 0);
	if (late && st == 504) {
		CHECK(parse_response(out, &off, 0) == 0);
		CHECK(eof_before_close);
		return;
	}
	CHECK(st == ref->error);
	CHECK(parse_response(out, &off, 0) == 0);

	/* Closed by the proxy exactly when the reference says so. */
	CHECK(eof_before_close == (ref->error != 0 || ref->stopped));
}

/*
 * A connection that opens with the request line of the HTTP/2 preface
 * belongs to the HTTP/2 edge (h2_sniff), not to HTTP/1.1: the client gets
 * HTTP/2 frames, the server's SETTINGS first, and never an HTTP/1.x
 * answer.  A broken rest of the preface gets GOAWAY, the connection is
 * closed and the replica sees nothing.  What follows a whole preface is
 * HTTP/2 framing, fuzz_h2's concern.  Fewer than 16 bytes that could
 * still be the preface are not answered at all (more may come).
 */
static void
check_h2(const char *p, size_t n, const struct bytes *out,
    int eof_before_close)
{
	static const char	 preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	const unsigned char	*f = (const unsigned char *)out->p;
	size_t			 k = n < 24 ? n : 24;

	if (n < 16) {
		/* Too few bytes to tell: the front waits for more, and the
		 * client's EOF ends the connection with nothing said. */
		CHECK(out->n == 0 && replica.n == 0 && !eof_before_close);
		return;
	}
	CHECK(out->n >= 9);
	CHECK(f[3] == 0x4 && (f[4] & 0x1) == 0);	/* SETTINGS, no ACK */
	CHECK(memcmp(f + 5, "\0\0\0\0", 4) == 0);	/* stream 0 */
	CHECK(memmem(out->p, out->n, "HTTP/1.", 7) == NULL);
	if (memcmp(p, preface, k) != 0) {
		CHECK(replica.n == 0);
		CHECK(eof_before_close);
	}
}

static void
dump_msgs(const char *who, const struct msgs *m)
{
	unsigned	 i;

	for (i = 0; m != NULL && i < m->n; i++)
		fprintf(stderr, "%s[%u]: %.*s %.*s fields=%u body=%zu "
		    "complete=%d cancelled=%d keep_alive=%d fwd=%d\n", who, i,
		    (int)m->v[i].method.n, m->v[i].method.p,
		    (int)(m->v[i].target.n > 60 ? 60 : m->v[i].target.n),
		    m->v[i].target.p, m->v[i].nfields, m->v[i].body.n,
		    m->v[i].complete, m->v[i].cancelled, m->v[i].keep_alive,
		    m->v[i].forwardable);
}

/* What both sides saw, when a check fails. */
static void
dump(void)
{
	dump_msgs("reference", dump_ref);
	dump_msgs("replica", &replica);
	if (dump_out != NULL)
		fprintf(stderr, "client got %zu bytes:\n%.*s\n", dump_out->n,
		    (int)(dump_out->n > 2000 ? 2000 : dump_out->n),
		    dump_out->p != NULL ? dump_out->p : "");
}

/*
 * The first request resolves the deployment and connects to the stand-in;
 * wait for its answer (in real time, bounded) so that every input finds the
 * replica connection ready.
 */
static void
warm_up(void)
{
	static const char	 req[] = "GET /warm HTTP/1.1\r\nHost: a\r\n\r\n";
	struct sockaddr_un	 sa;
	struct timeval		 tick = { 0, 10000 };
	struct bytes		 out;
	unsigned		 i;
	int			 fds[2];

	memset(&out, 0, sizeof out);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
	CHECK(fd_nonblock(fds[0]) == 0 && fd_nonblock(fds[1]) == 0);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	front_accept(worker_ctx(w), fds[0], (struct sockaddr *)&sa,
	    sizeof(sa_family_t), 0);
	CHECK(write(fds[1], req, sizeof req - 1) == sizeof req - 1);
	for (i = 0; i < 500 && strstr(out.p ? out.p : "", "\r\n\r\nok") ==
	    NULL; i++) {
		event_base_loopexit(base, &tick);
		event_base_loop(base, EVLOOP_ONCE);
		client_read(fds[1], &out);
	}
	CHECK(out.p != NULL && strncmp(out.p, "HTTP/1.1 200", 12) == 0);
	close(fds[1]);
	for (i = 0; i < 20; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	bytes_free(&out);
	msgs_clear(&replica);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t	 pieces[] = { 1 << 20, 1, 7, 64, 1000, 4096 };
	struct sockaddr_un	 sa;
	struct ref		 ref;
	struct bytes		 out;
	const char		*p;
	size_t			 n, sent = 0, piece;
	int			 fds[2], eof = 0, eof_before_close;

	if (size < 1)
		return 0;
	p = (const char *)data + 1;
	n = size - 1;
	piece = pieces[data[0] % (sizeof pieces / sizeof pieces[0])];
	if (piece == 1 && n > 2048)
		piece = 64;

	memset(&ref, 0, sizeof ref);
	memset(&out, 0, sizeof out);
	msgs_clear(&replica);
	dump_ref = &ref.m;
	dump_out = &out;
	ref_run(&ref, p, n);

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
	CHECK(fd_nonblock(fds[0]) == 0 && fd_nonblock(fds[1]) == 0);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	front_accept(worker_ctx(w), fds[0], (struct sockaddr *)&sa,
	    sizeof(sa_family_t), 0);
	settle(fds[1], &out, &eof, p, n, &sent, piece);
	eof_before_close = eof;
	/* The client goes away: whatever is still open gets cancelled. */
	close(fds[1]);
	settle(-1, &out, &eof, p, sent, &sent, piece);

	if (n > 0 && memcmp(p, "PRI * HTTP/2.0\r\n", n < 16 ? n : 16) == 0)
		check_h2(p, n, &out, eof_before_close);
	else
		check(&ref, &out, eof_before_close);
	dump_ref = NULL;
	dump_out = NULL;
	msgs_clear(&ref.m);
	free(ref.m.v);
	bytes_free(&out);
	return 0;
}
