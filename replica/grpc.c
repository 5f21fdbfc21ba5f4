/*
 * grpc.c -- gRPC on the replica library (see replica_grpc.h): the 5-byte
 * message framing, status trailers, and a dispatcher by method path.
 *
 * The dispatcher's per-call state hangs off the req (user pointer, freed
 * by the req's dtor), so it lives exactly as long as the req whatever
 * ends it: finish, cancel, replica_fail or a closed connection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replica_grpc.h"
#include "replica_impl.h"

/* Decoder ---------------------------------------------------------------- */

struct replica_grpc_dec {
	size_t		 max;
	replica_grpc_msg_cb cb;
	void		*arg;
	uint8_t		 prefix[REPLICA_GRPC_PREFIX];
	size_t		 nprefix;	/* prefix bytes in */
	size_t		 len;		/* the message's length, once known */
	size_t		 have;		/* message bytes in buf */
	uint8_t		*buf;		/* a message split across pieces */
	size_t		 cap;
};

struct replica_grpc_dec *
replica_grpc_dec_new(size_t max, replica_grpc_msg_cb cb, void *arg)
{
	struct replica_grpc_dec *d;

	if ((d = calloc(1, sizeof *d)) == NULL)
		return NULL;
	d->max = max != 0 ? max : REPLICA_GRPC_MAX_MESSAGE;
	d->cb = cb;
	d->arg = arg;
	return d;
}

void
replica_grpc_dec_free(struct replica_grpc_dec *d)
{
	if (d == NULL)
		return;
	free(d->buf);
	free(d);
}

size_t
replica_grpc_dec_partial(const struct replica_grpc_dec *d)
{
	return d->nprefix + d->have;
}

/* The prefix is complete: check it; 0, or the code that ends the call. */
static int
dec_prefix(struct replica_grpc_dec *d)
{
	const uint8_t *p = d->prefix;

	d->len = (size_t)p[1] << 24 | (size_t)p[2] << 16 |
	    (size_t)p[3] << 8 | p[4];
	if (p[0] == 1)
		return GRPC_UNIMPLEMENTED;	/* no compression offered */
	if (p[0] != 0)
		return GRPC_INTERNAL;
	if (d->len > d->max)
		return GRPC_RESOURCE_EXHAUSTED;
	return 0;
}

static int
dec_deliver(struct replica_grpc_dec *d, const void *msg)
{
	size_t n = d->len;

	d->nprefix = 0;
	d->have = 0;
	d->len = 0;
	return d->cb(d->arg, msg, n);
}

static int
dec_grow(struct replica_grpc_dec *d)
{
	uint8_t *p;

	if ((p = realloc(d->buf, d->len)) == NULL)
		return -1;
	d->buf = p;
	d->cap = d->len;
	return 0;
}

int
replica_grpc_dec_feed(struct replica_grpc_dec *d, const void *p, size_t n)
{
	const uint8_t *in = p;
	size_t take;
	int rc;

	while (n > 0 || (d->nprefix == REPLICA_GRPC_PREFIX && d->len == 0)) {
		if (d->nprefix < REPLICA_GRPC_PREFIX) {
			take = REPLICA_GRPC_PREFIX - d->nprefix;
			take = take < n ? take : n;
			memcpy(d->prefix + d->nprefix, in, take);
			d->nprefix += take;
			in += take;
			n -= take;
			if (d->nprefix == REPLICA_GRPC_PREFIX &&
			    (rc = dec_prefix(d)) != 0)
				return rc;
			continue;
		}
		if (d->have == 0 && n >= d->len) {	/* whole: no copy */
			take = d->len;
			if ((rc = dec_deliver(d, in)) != 0)
				return rc;
			in += take;
			n -= take;
			continue;
		}
		if (d->cap < d->len && dec_grow(d) != 0)
			return GRPC_INTERNAL;
		take = d->len - d->have < n ? d->len - d->have : n;
		memcpy(d->buf + d->have, in, take);
		d->have += take;
		in += take;
		n -= take;
		if (d->have == d->len && (rc = dec_deliver(d, d->buf)) != 0)
			return rc;
	}
	return 0;
}

/* Calls of the dispatcher ------------------------------------------------- */

struct replica_grpc_call {
	int		 finished;	/* replica_grpc_finish() was called */
	const struct replica_grpc_method *m;
	const struct replica_grpc_server *srv;
	struct replica_req *q;
	struct replica_grpc_dec *dec;
	uint8_t		*unary;		/* the unary request message */
	size_t		 unary_len;
	unsigned	 nmsg;
	void		*user;
};

static void
grpc_call_free(struct replica_req *q)
{
	struct replica_grpc_call *call = q->user;

	q->user = NULL;
	q->dtor = NULL;
	replica_grpc_dec_free(call->dec);
	free(call->unary);
	free(call);
}

static struct replica_grpc_call *
grpc_call_of(struct replica_req *q)
{
	return q->dtor == grpc_call_free ? q->user : NULL;
}

void
replica_grpc_set_user(struct replica_req *q, void *user)
{
	struct replica_grpc_call *call = grpc_call_of(q);

	if (call != NULL)
		call->user = user;
}

void *
replica_grpc_user(struct replica_req *q)
{
	struct replica_grpc_call *call = grpc_call_of(q);

	return call != NULL ? call->user : NULL;
}

/* Answering --------------------------------------------------------------- */

/* A head or trailers: the library's fields, at most all the metadata
 * allowed (each field at least 32 by its measure), and the NULL. */
#define GRPC_HDRS	(2 * (4 + REPLICA_GRPC_MAX_METADATA / 32) + 1)

size_t
replica_grpc_percent_encode(const char *s, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t need = 0, o = 0, w;
	unsigned char c;

	for (; *s != '\0'; s++) {
		c = (unsigned char)*s;
		w = c < 0x20 || c > 0x7e || c == '%' ? 3 : 1;
		need += w;
		if (out == NULL || o + w >= len)
			continue;
		if (w == 1) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (out != NULL && len > 0)
		out[o < len ? o : len - 1] = '\0';
	return need;
}

/* The response head, with the metadata added so far. */
static int
grpc_head_out(struct replica_req *q)
{
	const char *hdrs[GRPC_HDRS];
	int i = 0;

	if (q->out_head)
		return 0;
	hdrs[i++] = "content-type";
	hdrs[i++] = "application/grpc";
	if (grpc_md_fields(q, GRPC_MD_HEAD, hdrs, &i, GRPC_HDRS - 1) != 0)
		return -1;
	hdrs[i] = NULL;
	return replica_respond(q, 200, hdrs, 0);
}

int
replica_grpc_send(struct replica_req *q, const void *msg, size_t n)
{
	uint8_t small[REPLICA_GRPC_PREFIX + 1024];

	if (n > UINT32_MAX || grpc_head_out(q) != 0)
		return -1;
	small[0] = 0;
	small[1] = (uint8_t)(n >> 24);
	small[2] = (uint8_t)(n >> 16);
	small[3] = (uint8_t)(n >> 8);
	small[4] = (uint8_t)n;
	/* A small message goes in one DATA frame with its prefix. */
	if (n <= sizeof small - REPLICA_GRPC_PREFIX) {
		if (n != 0)
			memcpy(small + REPLICA_GRPC_PREFIX, msg, n);
		return replica_write(q, small, REPLICA_GRPC_PREFIX + n);
	}
	if (replica_write(q, small, REPLICA_GRPC_PREFIX) != 0)
		return -1;
	return replica_write(q, msg, n);
}

int
replica_grpc_finish(struct replica_req *q, int code, const char *message)
{
	struct replica_grpc_call *call = grpc_call_of(q);
	const char *hdrs[GRPC_HDRS];
	char status[16], *enc = NULL;
	size_t need;
	int i = 0, rc;

	snprintf(status, sizeof status, "%d", code);
	if (message != NULL && *message != '\0') {
		need = replica_grpc_percent_encode(message, NULL, 0) + 1;
		if ((enc = malloc(need)) == NULL)
			return -1;
		replica_grpc_percent_encode(message, enc, need);
	}
	/* Trailers-Only: with nothing sent, the head carries the status,
	 * and both kinds of metadata. */
	if (!q->out_head) {
		hdrs[i++] = "content-type";
		hdrs[i++] = "application/grpc";
		grpc_md_fields(q, GRPC_MD_HEAD, hdrs, &i, GRPC_HDRS - 5);
	}
	grpc_md_fields(q, GRPC_MD_TRAILERS, hdrs, &i, GRPC_HDRS - 5);
	hdrs[i++] = "grpc-status";
	hdrs[i++] = status;
	if (enc != NULL) {
		hdrs[i++] = "grpc-message";
		hdrs[i++] = enc;
	}
	hdrs[i] = NULL;
	if (call != NULL)
		call->finished = 1;
	rc = q->out_head ? replica_end_trailers(q, hdrs) :
	    replica_respond(q, 200, hdrs, 1);
	free(enc);
	return rc;
}

/* Dispatcher -------------------------------------------------------------- */

static const char *
grpc_code_text(int code)
{
	switch (code) {
	case GRPC_RESOURCE_EXHAUSTED:
		return "request message larger than the limit";
	case GRPC_UNIMPLEMENTED:
		return "compressed messages are not supported";
	default:
		return "bad request message stream";
	}
}

/* One decoded message: kept for a unary method, handed on otherwise. */
static int
grpc_on_msg(void *arg, const void *msg, size_t n)
{
	struct replica_grpc_call *call = arg;

	if (call->finished)
		return -1;
	call->nmsg++;
	if (call->m->on_unary == NULL) {
		if (call->m->on_message != NULL)
			call->m->on_message(call->q, msg, n, call->srv->arg);
		return call->finished ? -1 : 0;
	}
	if (call->nmsg > 1) {
		replica_grpc_finish(call->q, GRPC_INTERNAL,
		    "more than one request message for a unary method");
		return -1;
	}
	if (n != 0 && (call->unary = malloc(n)) == NULL)
		return GRPC_INTERNAL;
	if (n != 0)
		memcpy(call->unary, msg, n);
	call->unary_len = n;
	return 0;
}

static const struct replica_grpc_method *
grpc_lookup(const struct replica_grpc_server *srv, const char *path)
{
	size_t i;

	for (i = 0; i < srv->nmethods; i++)
		if (strcmp(srv->methods[i].path, path) == 0)
			return &srv->methods[i];
	return NULL;
}

static void
grpc_on_request(struct replica_req *q, void *arg)
{
	const struct replica_grpc_server *srv = arg;
	const struct replica_grpc_method *m;
	struct replica_grpc_call *call;
	const char *ct = replica_req_header(q, "content-type");
	char why[300];

	if (strcmp(replica_req_method(q), "POST") != 0 || ct == NULL ||
	    strncmp(ct, "application/grpc", 16) != 0 ||
	    (ct[16] != '\0' && ct[16] != '+' && ct[16] != ';')) {
		replica_respond(q, 415, (const char *const []){
		    "content-type", "text/plain", NULL }, 0);
		replica_write_end(q, "not a gRPC request\n", 19);
		return;
	}
	if ((m = grpc_lookup(srv, replica_req_path(q))) == NULL) {
		snprintf(why, sizeof why, "unknown method %.250s",
		    replica_req_path(q));
		replica_grpc_finish(q, GRPC_UNIMPLEMENTED, why);
		return;
	}
	if ((call = calloc(1, sizeof *call)) == NULL ||
	    (call->dec = replica_grpc_dec_new(srv->max_message, grpc_on_msg,
	    call)) == NULL) {
		free(call);
		replica_grpc_finish(q, GRPC_RESOURCE_EXHAUSTED,
		    "out of memory");
		return;
	}
	call->m = m;
	call->srv = srv;
	call->q = q;
	q->user = call;
	q->dtor = grpc_call_free;
}

static void
grpc_on_body(struct replica_req *q, const void *p, size_t n, void *arg)
{
	struct replica_grpc_call *call = grpc_call_of(q);
	int rc;

	if (call == NULL || call->finished)
		return;
	rc = replica_grpc_dec_feed(call->dec, p, n);
	if (rc > 0 && !call->finished)
		replica_grpc_finish(q, rc, grpc_code_text(rc));
}

static void
grpc_on_end(struct replica_req *q, void *arg)
{
	struct replica_grpc_call *call = grpc_call_of(q);

	if (call == NULL || call->finished)
		return;
	if (replica_grpc_dec_partial(call->dec) != 0) {
		replica_grpc_finish(q, GRPC_INTERNAL,
		    "request body ends inside a message");
	} else if (call->m->on_unary != NULL) {
		if (call->nmsg == 0)
			replica_grpc_finish(q, GRPC_INTERNAL,
			    "no request message for a unary method");
		else
			call->m->on_unary(q, call->unary, call->unary_len,
			    call->srv->arg);
	} else if (call->m->on_end != NULL) {
		call->m->on_end(q, call->srv->arg);
	} else {
		replica_grpc_finish(q, GRPC_OK, NULL);
	}
}

static void
grpc_on_cancel(struct replica_req *q, void *arg)
{
	struct replica_grpc_call *call = grpc_call_of(q);

	if (call != NULL && call->m->on_cancel != NULL)
		call->m->on_cancel(q, call->srv->arg);
}

static void
grpc_on_writable(struct replica_req *q, void *arg)
{
	struct replica_grpc_call *call = grpc_call_of(q);

	if (call != NULL && !call->finished && call->m->on_writable != NULL)
		call->m->on_writable(q, call->srv->arg);
}

const struct replica_handler replica_grpc_handler = {
	grpc_on_request, grpc_on_body, grpc_on_end, grpc_on_cancel,
	grpc_on_writable,
};
