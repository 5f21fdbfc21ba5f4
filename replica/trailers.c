/*
 * trailers.c -- ending a response with trailers (wire v2, TRAILERS).
 *
 * The TRAILERS frame is encoded at once into the req and goes out in
 * place of the END, behind whatever body still waits for credit
 * (req_send_frames).  A connection that agreed on version 1 cannot carry
 * it: the trailers are dropped there and the response ends plainly.
 */
#include <string.h>

#include "replica_impl.h"

int
replica_req_trailers_ok(struct replica_req *q)
{
	return q->c->version >= WIRE_VERSION_TRAILERS;
}

int
replica_end_trailers(struct replica_req *q, const char *const *hdrs)
{
	struct wire_field    fields[WIRE_MAX_FIELDS];
	struct wire_trailers t;
	struct evbuffer_iovec v;
	size_t		     size;
	unsigned	     n;

	if (q->cancelled || q->failed || q->out_done || !q->out_head ||
	    q->trailers != NULL || req_fields(hdrs, fields, &n) != 0)
		return -1;
	t.fields = fields;
	t.nfields = n;
	if ((size = wire_trailers_size(&t)) == 0)
		return -1;
	if (!replica_req_trailers_ok(q))
		return replica_end(q);
	if ((q->trailers = evbuffer_new()) == NULL)
		return -1;
	if (evbuffer_reserve_space(q->trailers, (ev_ssize_t)size, &v, 1) != 1 ||
	    v.iov_len < size) {
		evbuffer_free(q->trailers);
		q->trailers = NULL;	/* the response may still end plainly */
		return -1;
	}
	wire_encode_trailers(v.iov_base, q->stream, &t);
	v.iov_len = size;
	evbuffer_commit_space(q->trailers, &v, 1);
	return req_send_data(q, NULL, 0, 1);
}
