/*
 * hfield.h -- header-field policy, the same for every edge: the one
 * case-insensitive name compare, the hop-by-hop set, the fields a
 * Connection header names, and which request fields a proxy forwards
 * (X-Forwarded-For and -Proto added).  Pure: no I/O, no protocol; a front
 * edge describes its request as name/value pairs, an upstream edge encodes
 * what comes out.
 */
#ifndef INGRESSD_HFIELD_H
#define INGRESSD_HFIELD_H

#include <stddef.h>
#include <string.h>
#include <strings.h>

/* One header field as any edge can hold it; not NUL-terminated. */
struct hfield {
	const char	*name;
	size_t		 name_len;
	const char	*value;
	size_t		 value_len;
};

/* The name (len bytes) is lit, ignoring case.  Inline so that strlen of a
 * literal folds away on the hot path. */
static inline int
hfield_name_is(const char *name, size_t len, const char *lit)
{
	size_t n = strlen(lit);

	return len == n && strncasecmp(name, lit, n) == 0;
}

/* A hop-by-hop field that a proxy must not forward (RFC 9110 7.6.1). */
int	 hfield_hop_by_hop(const char *name, size_t len);
/* The name is listed in a Connection value (hop-by-hop too, RFC 9110
 * 7.6.1): a comma-separated list of tokens. */
int	 hfield_conn_listed(const char *conn, size_t clen, const char *name,
	    size_t len);

/*
 * A request as its front edge holds it.  get(src, i, out) gives field i
 * (0..n-1) in the order received: the edge keeps its own layout (HTTP/1's
 * parser array, HTTP/2's header list) and no copy of it is made.
 */
struct hfield_req {
	void		(*get)(const void *src, unsigned i, struct hfield *);
	const void	*src;
	unsigned	 n;
	const char	*host;		/* sent as Host: the absolute-form */
	size_t		 host_len;	/* authority, or Host; NULL: none */
	const char	*peer;		/* the client: ends X-Forwarded-For */
	const char	*proto;		/* X-Forwarded-Proto: "http", "https" */
	const char	*subject;	/* a verified client certificate's
					 * subject, or NULL */
};

#define HFIELD_XFF_INLINE	256

/*
 * Where the forwarded fields go.  emit(arg, f) is called once per field,
 * in order, at most max times; the pointers in f stay valid until
 * hfield_out_free (the X-Forwarded-For value lives in this struct, or on
 * the heap when longer than HFIELD_XFF_INLINE).
 */
struct hfield_out {
	void		(*emit)(void *arg, const struct hfield *);
	void		*arg;
	unsigned	 max;		/* at least 4 */
	char		*xff;		/* private */
	char		 buf[HFIELD_XFF_INLINE];
};

/*
 * The request fields to forward: the client's end-to-end fields in order,
 * minus hop-by-hop ones, the ones Connection names and the ones we set
 * (X-Forwarded-*; X-Request-Id, which the upstream edge sends its own
 * way, and X-Client-Cert-Subject: a client's own copy is always dropped),
 * Host replaced by req->host; then X-Forwarded-For (the client's values
 * joined, the peer appended), X-Forwarded-Proto and, only from a verified
 * client certificate, X-Client-Cert-Subject.  Fields beyond max are
 * dropped, never ours.  -1: out of memory, nothing emitted.
 */
int	 hfield_forward(const struct hfield_req *, struct hfield_out *);
void	 hfield_out_free(struct hfield_out *);

#endif
