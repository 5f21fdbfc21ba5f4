/*
 * upstream.c -- a worker's connection to one replica (see upstream.h).
 *
 * Stream ids increase on a connection and are never reused (the protocol
 * says so: a late frame for a cancelled stream can never be mistaken for a
 * new one).  The stream table is an idtab (O(1) lookup, see idtab.h).
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
#include "upconn.h"
#include "upstream.h"
#include "upstream_impl.h"
#include "wire.h"
#include "wctx.h"

static const struct sock_cbs upstream_sock_cbs = {
	upstream_read_cb, NULL, upstream_connected_cb, upstream_error_cb,
};

static void	upstream_revive(struct upstream *);

static struct upstream *
upstream_get(struct wctx *w, struct reg_endpoint *ep)
{
	struct upstream *up;

	LIST_FOREACH(up, &w->upstreams, link) {
		if (up->ep == ep) {
			if (up->released)
				upstream_revive(up);
			return up;
		}
	}
	if ((up = calloc(1, sizeof(*up))) == NULL)
		return NULL;
	up->w = w;
	up->ep = ep;
	up->st = registry_ep_slot(ep, w->id);
	up->cbs = &upstream_sock_cbs;
	up->cap = ep->max_ongoing;
	up->timer = evtimer_new(w->base, upstream_timer_cb, up);
	up->scratch = evbuffer_new();
	if (up->timer == NULL || up->scratch == NULL) {
		if (up->timer != NULL)
			event_free(up->timer);
		if (up->scratch != NULL)
			evbuffer_free(up->scratch);
		free(up);
		return NULL;
	}
	LIST_INSERT_HEAD(&w->upstreams, up, link);
	upstream_connect(up);
	return up;
}


static void
upstream_pool_free(struct wctx *w)
{
	struct upstream *up, *next;

	for (up = LIST_FIRST(&w->upstreams); up != NULL; up = next) {
		next = LIST_NEXT(up, link);
		upstream_goodbye(up, "ingressd stopping");
		upstream_close(up);
		event_free(up->timer);
		evbuffer_free(up->scratch);
		idtab_clear(&up->streams);
		free(up);
	}
	LIST_INIT(&w->upstreams);
}

static void
upstream_link(struct upstream *up, struct upconn_watch *w)
{
	if (w->waiting)
		LIST_INSERT_HEAD(&up->waiters, w, link);
	else
		LIST_INSERT_HEAD(&up->watchers, w, link);
}

static void
upstream_unlink(struct upstream *up, struct upconn_watch *w)
{
	LIST_REMOVE(w, link);
}

static void
upstream_watch(struct upstream *up, struct upconn_watch *w)
{
	upstream_link(up, w);
	up->nwatch++;
}

static void
upstream_unwatch(struct upstream *up, struct upconn_watch *w)
{
	upstream_unlink(up, w);
	up->nwatch--;
}

static void
upstream_wait(struct upstream *up, struct upconn_watch *w, int waiting)
{
	if (w->waiting == waiting)
		return;
	upstream_unlink(up, w);
	w->waiting = waiting;
	upstream_link(up, w);
}

static int
upstream_is_ready(const struct upstream *up)
{
	return up->state == UPSTREAM_READY && !up->goaway;
}

static unsigned
upstream_in_flight(const struct upstream *up)
{
	return up->in_flight;
}

static unsigned
upstream_capacity(const struct upstream *up)
{
	return up->cap;
}

static const char *
upstream_id(const struct upstream *up)
{
	return up->ep->id;
}

static const struct stream_carrier upstream_carrier;

static int
upstream_attach(struct upstream *up, struct stream *s)
{
	struct evbuffer *out;
	size_t before;
	uint32_t id;

	if (!upstream_is_ready(up) || up->in_flight >= up->cap)
		return -1;
	if (idtab_reserve(&up->streams, up->in_flight + 1) == -1)
		return -1;
	id = up->next_id++;
	out = sock_output(up->sock);
	before = evbuffer_get_length(out);
	stream_set_sent_at(s, up->out_added);
	if (stream_encode(s, id, out) == -1) {
		/* Nothing was queued.  A head that cannot be encoded will not
		 * fit any replica: the request is answered, not retried. */
		stream_on_fail(s, 431, "request head too large to forward");
		return 0;
	}
	up->out_added += evbuffer_get_length(out) - before;
	(void)idtab_put(&up->streams, id, s);	/* reserved: cannot fail */
	up->in_flight++;
	upstream_count_in_flight(up);
	registry_count_request(up->st);
	stream_attached(s, &upstream_carrier, up, id);
	stream_flush_pending(s);
	/* Ids run out: drain, then start afresh.  Not upstream_on_goaway():
	 * we may be inside a handle's dispatch loop, which must not be
	 * re-entered. */
	if (up->next_id >= UPSTREAM_LAST_ID)
		up->goaway = 1;
	return 0;
}

static void
upstream_send_data(struct upstream *up, uint32_t id, const void *p, size_t n)
{
	uint8_t hdr[WIRE_HEADER_SIZE];
	size_t piece;

	while (n > 0) {
		piece = n < WIRE_MAX_DATA ? n : WIRE_MAX_DATA;
		wire_encode_header(hdr, (uint32_t)piece, WIRE_DATA, 0, id);
		upstream_write(up, hdr, sizeof(hdr));
		upstream_write(up, p, piece);
		p = (const char *)p + piece;
		n -= piece;
	}
}

static void
upstream_send_end(struct upstream *up, uint32_t id)
{
	uint8_t hdr[WIRE_HEADER_SIZE];

	wire_encode_header(hdr, 0, WIRE_END, 0, id);
	upstream_write(up, hdr, sizeof(hdr));
}

static void
upstream_send_window(struct upstream *up, uint32_t id, uint32_t n)
{
	uint8_t frame[WIRE_HEADER_SIZE + 4];

	wire_encode_window(frame, id, n);
	upstream_write(up, frame, sizeof(frame));
}

static void
upstream_cancel(struct upstream *up, struct stream *s, uint32_t code)
{
	uint8_t frame[WIRE_HEADER_SIZE + 4];
	uint32_t id = stream_id(s);

	if (upstream_lookup(up, id) != s)
		return;
	upstream_detach(up, id);
	if (up->sock != NULL) {
		wire_encode_cancel(frame, id, code);
		upstream_write(up, frame, sizeof(frame));
	}
}

static void
upstream_carrier_data(void *c, uint32_t id, const void *p, size_t n)
{
	upstream_send_data(c, id, p, n);
}

static void
upstream_carrier_end(void *c, uint32_t id)
{
	upstream_send_end(c, id);
}

static void
upstream_carrier_window(void *c, uint32_t id, uint32_t n)
{
	upstream_send_window(c, id, n);
}

static void
upstream_carrier_cancel(void *c, struct stream *s, uint32_t code)
{
	upstream_cancel(c, s, code);
}

static const char *
upstream_carrier_peer(const void *c)
{
	return upstream_id(c);
}

/* What a stream attached here sends through (stream.h). */
static const struct stream_carrier upstream_carrier = {
	.data = upstream_carrier_data,
	.end = upstream_carrier_end,
	.window = upstream_carrier_window,
	.cancel = upstream_carrier_cancel,
	.peer = upstream_carrier_peer,
};

/* Released connections (issue 3: names come and go) -------------------- */

static void
upstream_release(struct upstream *up)
{
	uint8_t buf[WIRE_HEADER_SIZE + 16 + 16];
	struct wire_goaway g;
	size_t n;

	if (up->nwatch > 0 || up->released)
		return;
	up->released = 1;
	if (up->in_flight == 0 || up->sock == NULL) {
		upstream_park(up);
		return;
	}
	/* Streams still run: no new ones; parked when the last is done
	 * (upstream_detach wakes the timer). */
	memset(&g, 0, sizeof(g));
	g.last_stream = up->next_id - 1;
	g.code = WIRE_CODE_NONE;
	g.text.p = "no longer used";
	g.text.len = 14;
	if ((n = wire_encode_goaway(buf, &g)) > 0)
		upstream_write(up, buf, n);
	up->goaway = 1;
}

/* Wanted again.  While it still drains, the drain ends in a fresh
 * connection as after any GOAWAY. */
static void
upstream_revive(struct upstream *up)
{
	up->released = 0;
	if (up->state == UPSTREAM_IDLE)
		upstream_connect(up);
}

/* The edge, as the core sees it (upconn.h) ------------------------------ */

static struct upconn *
upstream_op_get(struct wctx *w, struct reg_endpoint *ep)
{
	return (struct upconn *)upstream_get(w, ep);
}

static void
upstream_op_watch(struct upconn *c, struct upconn_watch *w)
{
	upstream_watch((struct upstream *)c, w);
}

static void
upstream_op_unwatch(struct upconn *c, struct upconn_watch *w)
{
	upstream_unwatch((struct upstream *)c, w);
}

static void
upstream_op_wait(struct upconn *c, struct upconn_watch *w, int waiting)
{
	upstream_wait((struct upstream *)c, w, waiting);
}

static void
upstream_op_release(struct upconn *c)
{
	upstream_release((struct upstream *)c);
}

static int
upstream_op_is_ready(const struct upconn *c)
{
	return upstream_is_ready((const struct upstream *)c);
}

static unsigned
upstream_op_in_flight(const struct upconn *c)
{
	return upstream_in_flight((const struct upstream *)c);
}

static unsigned
upstream_op_capacity(const struct upconn *c)
{
	return upstream_capacity((const struct upstream *)c);
}

static int
upstream_op_attach(struct upconn *c, struct stream *s)
{
	return upstream_attach((struct upstream *)c, s);
}

static const struct upconn_ops upstream_ops = {
	.protocol = "wire",
	.get = upstream_op_get,
	.watch = upstream_op_watch,
	.unwatch = upstream_op_unwatch,
	.wait = upstream_op_wait,
	.release = upstream_op_release,
	.is_ready = upstream_op_is_ready,
	.in_flight = upstream_op_in_flight,
	.capacity = upstream_op_capacity,
	.attach = upstream_op_attach,
	.pool_free = upstream_pool_free,
};

int
upstream_register(void)
{
	return upconn_register(&upstream_ops) == -1 ? -1 : 0;
}
