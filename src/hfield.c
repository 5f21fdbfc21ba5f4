/*
 * hfield.c -- header-field policy (see hfield.h).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hfield.h"

int
hfield_hop_by_hop(const char *name, size_t len)
{
	/* By length first: most fields are rejected without a compare. */
	switch (len) {
	case 2:
		return strncasecmp(name, "te", 2) == 0;
	case 7:
		return strncasecmp(name, "trailer", 7) == 0 ||
		    strncasecmp(name, "upgrade", 7) == 0;
	case 10:
		return strncasecmp(name, "connection", 10) == 0 ||
		    strncasecmp(name, "keep-alive", 10) == 0;
	case 16:
		return strncasecmp(name, "proxy-connection", 16) == 0;
	case 17:
		return strncasecmp(name, "transfer-encoding", 17) == 0;
	case 18:
		return strncasecmp(name, "proxy-authenticate", 18) == 0;
	case 19:
		return strncasecmp(name, "proxy-authorization", 19) == 0;
	default:
		return 0;
	}
}

int
hfield_conn_listed(const char *conn, size_t clen, const char *name,
    size_t len)
{
	const char *p = conn, *e = conn + clen, *t;

	while (p < e) {
		while (p < e && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		t = p;
		while (p < e && *p != ',' && *p != ' ' && *p != '\t')
			p++;
		if ((size_t)(p - t) == len && strncasecmp(t, name, len) == 0)
			return 1;
	}
	return 0;
}

/* What one pass over the client's fields learns before any is emitted. */
struct hfield_scan {
	struct hfield	 conn;		/* Connection (the last one) */
	size_t		 xff_len;	/* X-Forwarded-For values, summed */
	int		 have_conn, have_xff, have_host;
};

static void
hfield_scan(const struct hfield_req *req, struct hfield_scan *sc)
{
	struct hfield f;
	unsigned i;

	memset(sc, 0, sizeof(*sc));
	for (i = 0; i < req->n; i++) {
		req->get(req->src, i, &f);
		if (hfield_name_is(f.name, f.name_len, "connection")) {
			sc->conn = f;
			sc->have_conn = 1;
		} else if (hfield_name_is(f.name, f.name_len, "host"))
			sc->have_host = 1;
		else if (hfield_name_is(f.name, f.name_len, "x-forwarded-for")) {
			sc->xff_len += f.value_len + 2;
			sc->have_xff = 1;
		}
	}
}

/*
 * "previous, peer" or "peer", in out->buf or on the heap.  Repeated
 * X-Forwarded-For fields are one list, in order (RFC 9110 5.3): joined.
 */
static int
hfield_xff(const struct hfield_req *req, const struct hfield_scan *sc,
    struct hfield_out *out, size_t *len)
{
	struct hfield f;
	size_t n = strlen(req->peer), size = sc->xff_len + n + 1;
	unsigned i;

	if (size <= sizeof(out->buf))
		out->xff = out->buf;
	else if ((out->xff = malloc(size)) == NULL)
		return -1;
	*len = 0;
	for (i = 0; sc->have_xff && i < req->n; i++) {
		req->get(req->src, i, &f);
		if (!hfield_name_is(f.name, f.name_len, "x-forwarded-for"))
			continue;
		memcpy(out->xff + *len, f.value, f.value_len);
		memcpy(out->xff + *len + f.value_len, ", ", 2);
		*len += f.value_len + 2;
	}
	memcpy(out->xff + *len, req->peer, n);
	*len += n;
	return 0;
}

static void
hfield_emit(struct hfield_out *out, const char *name, size_t nlen,
    const char *value, size_t vlen)
{
	struct hfield f = { name, nlen, value, vlen };

	out->emit(out->arg, &f);
}

/* The client's own field is not forwarded as it is. */
static int
hfield_dropped(const struct hfield_scan *sc, const struct hfield *f)
{
	return hfield_hop_by_hop(f->name, f->name_len) ||
	    hfield_name_is(f->name, f->name_len, "x-forwarded-for") ||
	    hfield_name_is(f->name, f->name_len, "x-forwarded-proto") ||
	    hfield_name_is(f->name, f->name_len, "x-request-id") ||
	    hfield_name_is(f->name, f->name_len, "x-client-cert-subject") ||
	    (sc->have_conn && hfield_conn_listed(sc->conn.value,
	    sc->conn.value_len, f->name, f->name_len));
}

int
hfield_forward(const struct hfield_req *req, struct hfield_out *out)
{
	struct hfield_scan sc;
	struct hfield f;
	size_t xfflen;
	unsigned i, nf = 0, room;
	int host_sent = 0;

	out->xff = NULL;
	hfield_scan(req, &sc);
	if (hfield_xff(req, &sc, out, &xfflen) == -1)
		return -1;
	/* Room for X-Forwarded-For, -Proto, the subject and a Host we add. */
	room = out->max - 2 - (req->subject != NULL) -
	    (!sc.have_host && req->host != NULL);
	for (i = 0; i < req->n && nf < room; i++) {
		req->get(req->src, i, &f);
		if (hfield_dropped(&sc, &f))
			continue;
		/* req->host: an absolute-form authority replaces Host. */
		if (hfield_name_is(f.name, f.name_len, "host")) {
			if (!host_sent && req->host != NULL) {
				hfield_emit(out, f.name, f.name_len,
				    req->host, req->host_len);
				nf++;
			}
			host_sent = 1;
			continue;
		}
		out->emit(out->arg, &f);
		nf++;
	}
	if (!sc.have_host && req->host != NULL)	/* HTTP/1.0 absolute-form */
		hfield_emit(out, "host", 4, req->host, req->host_len);
	hfield_emit(out, "x-forwarded-for", 15, out->xff, xfflen);
	hfield_emit(out, "x-forwarded-proto", 17, req->proto,
	    strlen(req->proto));
	if (req->subject != NULL)
		hfield_emit(out, "x-client-cert-subject", 21, req->subject,
		    strlen(req->subject));
	return 0;
}

void
hfield_out_free(struct hfield_out *out)
{
	if (out->xff != out->buf)
		free(out->xff);
	out->xff = NULL;
}
