/*
 * echo.c -- a replica that describes the request it got, for tests.
 *
 * 200 application/json:
 *   {"method","path","query","headers":{lowercased name: value},
 *    "body_length","body","replica","deployment","request_id","conn_pings",
 *    "deadline_ms"}
 * "body" is there only when the body is at most 65536 bytes of valid UTF-8.
 * "deployment" is the REQUEST's, or the replica's when the REQUEST's is
 * empty.
 * Repeated headers are joined with ", ".
 *
 * Query "raw=1": 200 application/octet-stream, no content-length, sent as
 * soon as the head arrives, then every body piece mirrored back as it
 * arrives, END at the end.  Query "status=NNN" sets the status in both modes.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "replica_module.h"

#define BODY_MAX	65536

struct echo {
	int		 raw;
	int		 status;
	struct evbuffer	*body;		/* the first BODY_MAX bytes */
};

static void
echo_free(struct replica_req *q, struct echo *e)
{
	replica_req_set_user(q, NULL);
	if (e->body != NULL)
		evbuffer_free(e->body);
	free(e);
}

/* A JSON string; bytes that are not UTF-8 are taken as Latin-1. */
static json_t *
json_bytes(const char *p, size_t n)
{
	json_t	*j;
	char	*u, *w;
	size_t	 i;

	if ((j = json_stringn(p, n)) != NULL)
		return j;
	if ((u = malloc(2 * n + 1)) == NULL)
		return NULL;
	for (w = u, i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (ch < 0x80)
			*w++ = (char)ch;
		else {
			*w++ = (char)(0xc0 | ch >> 6);
			*w++ = (char)(0x80 | (ch & 0x3f));
		}
	}
	j = json_stringn(u, (size_t)(w - u));
	free(u);
	return j;
}

static json_t *
echo_headers(struct replica_req *q)
{
	json_t		*h, *old;
	const char	*name, *value;
	char		 lower[256], *joined;
	unsigned	 i;
	size_t		 k;

	if ((h = json_object()) == NULL)
		return NULL;
	for (i = 0; replica_req_header_at(q, i, &name, &value) == 0; i++) {
		for (k = 0; name[k] != '\0' && k < sizeof lower - 1; k++)
			lower[k] = (char)tolower((unsigned char)name[k]);
		lower[k] = '\0';
		if ((old = json_object_get(h, lower)) != NULL) {
			if (asprintf(&joined, "%s, %s", json_string_value(old),
			    value) == -1)
				continue;
			json_object_set_new(h, lower, json_bytes(joined,
			    strlen(joined)));
			free(joined);
		} else
			json_object_set_new(h, lower, json_bytes(value,
			    strlen(value)));
	}
	return h;
}

static json_t *
echo_body(struct replica_req *q, struct echo *e)
{
	size_t	 n = replica_req_body_length(q);
	char	*p;

	if (n > BODY_MAX)
		return NULL;
	if (n == 0 || e->body == NULL)
		return json_string("");
	p = (char *)evbuffer_pullup(e->body, -1);
	return json_stringn(p, n);	/* NULL when not UTF-8 */
}

static char *
echo_json(struct replica_req *q, struct echo *e)
{
	struct replica	*r = replica_req_replica(q);
	const char	*qs = replica_req_query(q);
	const char	*dep = replica_req_deployment(q);
	json_t		*o, *body;
	char		*s;

	o = json_object();
	if (o == NULL)
		return NULL;
	json_object_set_new(o, "method", json_bytes(replica_req_method(q),
	    strlen(replica_req_method(q))));
	json_object_set_new(o, "path", json_bytes(replica_req_path(q),
	    strlen(replica_req_path(q))));
	json_object_set_new(o, "query", json_bytes(qs, strlen(qs)));
	json_object_set_new(o, "headers", echo_headers(q));
	json_object_set_new(o, "body_length",
	    json_integer((json_int_t)replica_req_body_length(q)));
	if ((body = echo_body(q, e)) != NULL)
		json_object_set_new(o, "body", body);
	json_object_set_new(o, "replica", json_string(replica_id(r)));
	if (*dep == '\0')
		dep = replica_deployment(r);
	json_object_set_new(o, "deployment", json_bytes(dep, strlen(dep)));
	json_object_set_new(o, "request_id",
	    json_bytes(replica_req_request_id(q),
	    strlen(replica_req_request_id(q))));
	json_object_set_new(o, "conn_pings",
	    json_integer(replica_req_conn_pings(q)));
	json_object_set_new(o, "deadline_ms",
	    json_integer(replica_req_deadline_ms(q)));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static void
echo_request(struct replica_req *q, void *arg)
{
	static const char *const raw_hdrs[] = {
		"content-type", "application/octet-stream", NULL,
	};
	struct echo	*e;
	char		 v[16];
	long		 status;

	if ((e = calloc(1, sizeof *e)) == NULL) {
		replica_fail(q, "out of memory");
		return;
	}
	e->status = 200;
	if (replica_query_get(replica_req_query(q), "status", v, sizeof v)) {
		status = strtol(v, NULL, 10);
		if (status >= 100 && status <= 999)
			e->status = (int)status;
	}
	e->raw = replica_query_get(replica_req_query(q), "raw", v, sizeof v) &&
	    strcmp(v, "1") == 0;
	replica_req_set_user(q, e);
	if (e->raw && replica_respond(q, e->status, raw_hdrs, 0) != 0) {
		echo_free(q, e);
		replica_fail(q, "cannot respond");
	}
}

static void
echo_body_piece(struct replica_req *q, const void *p, size_t n, void *arg)
{
	struct echo	*e = replica_req_user(q);
	size_t		 have;

	if (e == NULL)
		return;
	if (e->raw) {
		replica_write(q, p, n);
		return;
	}
	if (e->body == NULL && (e->body = evbuffer_new()) == NULL)
		return;
	have = evbuffer_get_length(e->body);
	if (have < BODY_MAX)
		evbuffer_add(e->body, p, n < BODY_MAX - have ? n :
		    BODY_MAX - have);
}

static void
echo_end(struct replica_req *q, void *arg)
{
	struct echo	*e = replica_req_user(q);
	const char	*hdrs[] = { "content-type", "application/json",
	    "content-length", NULL, NULL };
	char		*json, len[32];
	int		 status;

	if (e == NULL)
		return;
	if (e->raw) {
		echo_free(q, e);
		replica_end(q);
		return;
	}
	json = echo_json(q, e);
	status = e->status;
	echo_free(q, e);
	if (json == NULL) {
		replica_fail(q, "cannot build JSON");
		return;
	}
	snprintf(len, sizeof len, "%zu", strlen(json));
	hdrs[3] = len;
	if (replica_respond(q, status, hdrs, 0) == 0)
		replica_write_end(q, json, strlen(json));
	free(json);
}

static void
echo_cancel(struct replica_req *q, void *arg)
{
	struct echo	*e = replica_req_user(q);

	if (e != NULL)
		echo_free(q, e);
}

static const struct replica_handler echo_handler = {
	.on_request = echo_request,
	.on_body = echo_body_piece,
	.on_end = echo_end,
	.on_cancel = echo_cancel,
};

REPLICA_MODULE("echo", &echo_handler, NULL, NULL);
