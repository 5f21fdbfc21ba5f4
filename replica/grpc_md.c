/*
 * grpc_md.c -- a gRPC call's response metadata (see replica_grpc.h): the
 * fields a handler adds to the response head (initial metadata) and to
 * the trailers, checked as they are added and kept in the req until
 * grpc.c sends the head or finishes the call.
 *
 * Each list is one evbuffer of "name\0value\0" pairs in the req, so it
 * works on any req, dispatched or not, and goes when the req goes.
 */
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "replica_grpc.h"
#include "replica_impl.h"

/* Names the application may not set: gRPC's own (grpc-*), the ones the
 * library writes, and HTTP/2's connection-specific fields. */
static const char *const md_reserved[] = {
	"content-type", "content-length", "te", "connection", "keep-alive",
	"proxy-connection", "transfer-encoding", "upgrade", "trailer", NULL,
};

static int
md_name_ok(const char *name)
{
	const char *p;
	size_t i;

	if (*name == '\0' || strlen(name) > WIRE_MAX_NAME ||
	    strncmp(name, "grpc-", 5) == 0)
		return 0;
	for (p = name; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '_' || *p == '.'))
			return 0;
	for (i = 0; md_reserved[i] != NULL; i++)
		if (strcmp(name, md_reserved[i]) == 0)
			return 0;
	return 1;
}

static int
md_is_bin(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && strcmp(name + n - 4, "-bin") == 0;
}

static int
md_b64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/* Base64 with or without padding, as gRPC accepts a -bin value. */
static int
md_b64_ok(const char *v)
{
	size_t n = 0, pad = 0;

	for (; v[n] != '\0' && md_b64_char(v[n]); n++)
		;
	while (v[n + pad] == '=')
		pad++;
	if (v[n + pad] != '\0' || n % 4 == 1)
		return 0;
	return pad == 0 || (n + pad) % 4 == 0;
}

int
replica_grpc_metadata_check(const char *name, const char *value)
{
	const char *p;

	if (name == NULL || value == NULL || !md_name_ok(name))
		return -1;
	if (md_is_bin(name))
		return md_b64_ok(value) ? 0 : -1;
	for (p = value; *p != '\0'; p++)
		if (*p < 0x20 || *p > 0x7e)
			return -1;
	return 0;
}

ssize_t
replica_grpc_metadata_decode(const char *value, void *out, size_t len)
{
	size_t n = strlen(value), dlen;
	char *padded, *dec;
	ssize_t rc = -1;

	if (!md_b64_ok(value))
		return -1;
	while (n > 0 && value[n - 1] == '=')
		n--;
	/* b64_decode() wants the padding gRPC lets senders leave off. */
	if ((padded = malloc(n + 4)) == NULL)
		return -1;
	memcpy(padded, value, n);
	while (n % 4 != 0)
		padded[n++] = '=';
	padded[n] = '\0';
	if ((dec = b64_decode(padded, &dlen)) != NULL && dlen <= len) {
		memcpy(out, dec, dlen);
		rc = (ssize_t)dlen;
	}
	free(dec);
	free(padded);
	return rc;
}

/* Too late: the head is out (for a header), the call is over, gone. */
static int
md_closed(struct replica_req *q, int which)
{
	return q->cancelled || q->failed || q->out_done ||
	    (which == GRPC_MD_HEAD && q->out_head);
}

static int
md_add(struct replica_req *q, int which, const char *name, const char *value)
{
	struct evbuffer **b = &q->grpc_md[which];
	size_t add;

	if (md_closed(q, which) || replica_grpc_metadata_check(name, value))
		return -1;
	/* SETTINGS_MAX_HEADER_LIST_SIZE's measure: 32 over name and value. */
	add = strlen(name) + strlen(value) + 32;
	if (q->grpc_md_size + add > REPLICA_GRPC_MAX_METADATA)
		return -1;
	if (*b == NULL && (*b = evbuffer_new()) == NULL)
		return -1;
	/* Room first, so a pair goes in whole or not at all. */
	if (evbuffer_expand(*b, add) != 0)
		return -1;
	evbuffer_add(*b, name, strlen(name) + 1);
	evbuffer_add(*b, value, strlen(value) + 1);
	q->grpc_md_size += add;
	return 0;
}

/* A -bin field from raw bytes: base64 without padding, as gRPC emits. */
static int
md_add_bin(struct replica_req *q, int which, const char *name,
    const void *p, size_t n)
{
	char *enc, *e;
	int rc;

	if (name == NULL || !md_is_bin(name) || (p == NULL && n != 0) ||
	    n > REPLICA_GRPC_MAX_METADATA)
		return -1;
	if ((enc = b64_encode(n != 0 ? p : "", n)) == NULL)
		return -1;
	for (e = enc + strlen(enc); e > enc && e[-1] == '='; e--)
		e[-1] = '\0';
	rc = md_add(q, which, name, enc);
	free(enc);
	return rc;
}

int
replica_grpc_header_add(struct replica_req *q, const char *name,
    const char *value)
{
	return md_add(q, GRPC_MD_HEAD, name, value);
}

int
replica_grpc_header_add_bin(struct replica_req *q, const char *name,
    const void *p, size_t n)
{
	return md_add_bin(q, GRPC_MD_HEAD, name, p, n);
}

int
replica_grpc_trailer_add(struct replica_req *q, const char *name,
    const char *value)
{
	return md_add(q, GRPC_MD_TRAILERS, name, value);
}

int
replica_grpc_trailer_add_bin(struct replica_req *q, const char *name,
    const void *p, size_t n)
{
	return md_add_bin(q, GRPC_MD_TRAILERS, name, p, n);
}

int
grpc_md_fields(struct replica_req *q, int which, const char **hdrs, int *i,
    int max)
{
	struct evbuffer *b = q->grpc_md[which];
	const char *p, *end;
	size_t len;

	if (b == NULL || (len = evbuffer_get_length(b)) == 0)
		return 0;
	/* The strings stay put: nothing is added once the fields go out. */
	if ((p = (const char *)evbuffer_pullup(b, -1)) == NULL)
		return -1;
	for (end = p + len; p < end; p += strlen(p) + 1) {
		if (*i + 2 > max)
			return -1;
		hdrs[(*i)++] = p;
		p += strlen(p) + 1;
		hdrs[(*i)++] = p;
	}
	return 0;
}
