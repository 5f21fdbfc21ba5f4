/*
 * upstream_read.c -- frames from the replica: decoded and dispatched to
 * the connection (HELLO, PING, PONG, GOAWAY, ERROR) or to its streams
 * (RESPONSE, DATA, END, WINDOW).  Calls down into upstream_conn.c only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "conf.h"
#include "idtab.h"
#include "log.h"
#include "monotime.h"
#include "net.h"
#include "registry.h"
#include "registry_publish.h"
#include "sock.h"
#include "stream.h"
#include "upstream_impl.h"
#include "wire.h"
#include "wctx.h"

static void
upstream_on_hello(struct upstream *up, const struct wire_frame *f)
{
	struct wire_hello h;
	int rc;

	if ((rc = wire_decode_hello(f, &h)) != WIRE_OK || up->hello_seen) {
		upstream_protocol_error(up, "bad HELLO", rc ? rc : WIRE_E_VALUE);
		return;
	}
	up->hello_seen = 1;
	up->version = wire_version_agree(h.version);
	up->cap = up->ep->max_ongoing;
	if (h.max_concurrency > 0 && h.max_concurrency < up->cap)
		up->cap = h.max_concurrency;
}

static void
upstream_on_pong(struct upstream *up, const struct wire_frame *f)
{
	const struct conf *conf = up->w->conf;
	uint8_t opaque[8];

	if (wire_decode_ping(f, opaque) != WIRE_OK ||
	    memcmp(opaque, up->ping_opaque, 8) != 0)
		return;		/* an older PING's answer: harmless */
	up->ping_out = 0;
	registry_count_pong(up->st);
	if (up->state == UPSTREAM_WARMING) {
		if (!up->hello_seen) {
			upstream_protocol_error(up, "PONG before HELLO",
			    WIRE_E_VALUE);
			return;
		}
		up->backoff_ms = 0;
		upstream_arm(up, conf->timeouts.ping_interval);
		upstream_set_state(up, UPSTREAM_READY);
	}
}

static void
upstream_on_ping(struct upstream *up, const struct wire_frame *f)
{
	uint8_t opaque[8], frame[WIRE_HEADER_SIZE + 8];

	if (wire_decode_ping(f, opaque) != WIRE_OK)
		return;
	wire_encode_ping(frame, WIRE_PONG, opaque);
	upstream_write(up, frame, sizeof(frame));
}

static void
upstream_on_response(struct upstream *up, const struct wire_frame *f,
    struct stream *s)
{
	struct wire_field fields[WIRE_MAX_FIELDS];
	struct wire_response r;
	int rc, end = f->flags & WIRE_FLAG_END;

	if ((rc = wire_decode_response(f, &r, fields, WIRE_MAX_FIELDS)) != 0) {
		upstream_protocol_error(up, "bad RESPONSE", rc);
		return;
	}
	if (end)
		upstream_detach(up, f->stream);
	stream_on_response(s, r.status, r.fields, r.nfields, end);
	if (end)
		stream_on_end(s);
}

/*
 * TRAILERS (v2): the response's last frame.  The stream hears the fields,
 * then its end; the fields point into the input, valid for the call.
 */
static void
upstream_on_trailers(struct upstream *up, const struct wire_frame *f,
    struct stream *s)
{
	struct wire_field fields[WIRE_MAX_FIELDS];
	struct wire_trailers t;
	int rc;

	if (!stream_responded(s)) {
		upstream_protocol_error(up, "TRAILERS before RESPONSE",
		    WIRE_E_STREAM);
		return;
	}
	if ((rc = wire_decode_trailers(f, &t, fields, WIRE_MAX_FIELDS)) != 0) {
		upstream_protocol_error(up, "bad TRAILERS", rc);
		return;
	}
	upstream_detach(up, f->stream);
	stream_on_trailers(s, t.fields, t.nfields);
	stream_on_end(s);
}

static void
upstream_on_stream_error(struct upstream *up, const struct wire_frame *f,
    struct stream *s)
{
	struct wire_error e;
	char why[160];

	if (wire_decode_error(f, &e) != WIRE_OK) {
		upstream_protocol_error(up, "bad ERROR", WIRE_E_SHORT);
		return;
	}
	snprintf(why, sizeof(why), "replica failed the request: %.*s",
	    (int)(e.text.len > 120 ? 120 : e.text.len), e.text.p);
	upstream_detach(up, f->stream);
	/* REFUSED: the replica did no work; another may take it. */
	if (e.code == WIRE_CODE_REFUSED && stream_retry(s) == 0)
		return;
	stream_on_fail(s, 502, why);
}

static void
upstream_on_conn_error(struct upstream *up, const struct wire_frame *f)
{
	struct wire_error e;
	char why[200];

	if (wire_decode_error(f, &e) != WIRE_OK)
		e.text.len = 0;
	snprintf(why, sizeof(why), "replica closed the connection: %s: %.*s",
	    wire_code_str(e.code), (int)(e.text.len > 150 ? 150 : e.text.len),
	    e.text.p);
	upstream_fail(up, why);
}

static void
upstream_on_goaway(struct upstream *up)
{
	up->goaway = 1;
	upstream_tell(up);
}

/* A frame that is not DATA: pulled up whole, decoded, dispatched. */
static void
upstream_on_frame(struct upstream *up, const struct wire_frame *f)
{
	struct stream *s = NULL;
	uint32_t incr;

	up->rx = 1;
	switch (f->type) {
	case WIRE_HELLO:
		upstream_on_hello(up, f);
		return;
	case WIRE_PING:
		upstream_on_ping(up, f);
		return;
	case WIRE_PONG:
		upstream_on_pong(up, f);
		return;
	case WIRE_GOAWAY:
		upstream_on_goaway(up);
		return;
	case WIRE_WINDOW:
		if (f->stream != 0 && (s = upstream_lookup(up, f->stream)) != NULL &&
		    wire_decode_window(f, &incr) == WIRE_OK)
			stream_on_window(s, incr);
		return;		/* stream 0: reserved in v1 */
	case WIRE_ERROR:
		if (f->stream == 0) {
			upstream_on_conn_error(up, f);
			return;
		}
		break;
	case WIRE_TRAILERS:
		/* A v1 replica must not send it, known stream or not. */
		if (up->hello_seen && up->version < WIRE_VERSION_TRAILERS) {
			upstream_protocol_error(up, "TRAILERS on a v1 "
			    "connection", WIRE_E_TYPE);
			return;
		}
		break;
	case WIRE_RESPONSE:
	case WIRE_END:
		break;
	default:
		upstream_protocol_error(up, wire_type_str(f->type),
		    WIRE_E_TYPE);
		return;
	}
	if (!up->hello_seen) {
		upstream_protocol_error(up, "stream frame before HELLO",
		    WIRE_E_STREAM);
		return;
	}
	if ((s = upstream_lookup(up, f->stream)) == NULL)
		return;		/* cancelled or finished: ignore */
	if (f->type == WIRE_RESPONSE) {
		upstream_on_response(up, f, s);
	} else if (f->type == WIRE_END) {
		upstream_detach(up, f->stream);
		stream_on_end(s);
	} else if (f->type == WIRE_TRAILERS) {
		upstream_on_trailers(up, f, s);
	} else {
		upstream_on_stream_error(up, f, s);
	}
}

/* DATA: the payload moves to the stream without being pulled up. */
static void
upstream_on_data(struct upstream *up, const struct wire_frame *f,
    struct evbuffer *in)
{
	struct stream *s;

	up->rx = 1;
	evbuffer_drain(in, WIRE_HEADER_SIZE);
	if ((s = upstream_lookup(up, f->stream)) == NULL) {
		evbuffer_drain(in, f->length);
		return;
	}
	if (!stream_responded(s)) {
		upstream_protocol_error(up, "DATA before RESPONSE", WIRE_E_STREAM);
		return;
	}
	evbuffer_remove_buffer(in, up->scratch, f->length);
	if (stream_on_data(s, up->scratch) == -1) {
		evbuffer_drain(up->scratch, evbuffer_get_length(up->scratch));
		upstream_protocol_error(up, "DATA beyond the stream's credit",
		    WIRE_E_LIMIT);
		return;
	}
	evbuffer_drain(up->scratch, evbuffer_get_length(up->scratch));
	if (f->flags & WIRE_FLAG_END && upstream_lookup(up, f->stream) == s) {
		upstream_detach(up, f->stream);
		stream_on_end(s);
	}
}

static void
upstream_peek_header(const uint8_t *p, struct wire_frame *f)
{
	f->length = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
	f->type = p[4];
	f->flags = p[5];
	f->stream = (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 |
	    (uint32_t)p[10] << 8 | p[11];
	f->payload = NULL;
}

void
upstream_read_cb(void *arg)
{
	struct upstream *up = arg;
	struct sock *sk = up->sock;
	struct evbuffer *in = sock_input(sk);
	struct wire_frame f;
	const uint8_t *p;
	size_t len, need;
	int rc;

	while (up->sock == sk && (len = evbuffer_get_length(in)) >=
	    WIRE_HEADER_SIZE) {
		p = evbuffer_pullup(in, WIRE_HEADER_SIZE);
		rc = wire_decode_frame(p, WIRE_HEADER_SIZE, &f, &need);
		if (rc != WIRE_OK && rc != WIRE_NEED_MORE) {
			upstream_protocol_error(up, "bad frame", rc);
			return;
		}
		if (rc == WIRE_NEED_MORE) {
			if (len < need)
				return;
			/* The header was validated; DATA needs no more. */
			upstream_peek_header(p, &f);
			if (f.type != WIRE_DATA) {
				p = evbuffer_pullup(in, (ev_ssize_t)need);
				rc = wire_decode_frame(p, need, &f, &need);
				if (rc != WIRE_OK) {
					upstream_protocol_error(up, "bad frame",
					    rc);
					return;
				}
			}
		}
		if (f.type == WIRE_DATA) {
			if (f.stream == 0 || !up->hello_seen) {
				upstream_protocol_error(up, "bad DATA",
				    WIRE_E_STREAM);
				return;
			}
			upstream_on_data(up, &f, in);
			continue;
		}
		upstream_on_frame(up, &f);
		if (up->sock == sk)
			evbuffer_drain(in, need);
	}
}

