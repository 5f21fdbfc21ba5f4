/*
 * etcd_kv.c -- blocking transactions on etcd's JSON gateway (etcd_kv.h).
 *
 * HTTP/1.0 on purpose: the gateway (Go's net/http) then answers with the
 * body up to the close, never chunked, so reading to EOF is the parser.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "b64.h"
#include "conf.h"
#include "etcd_kv.h"
#include "monotime.h"

#define ETCD_KV_MAX_RESP	(1024 * 1024)

char *
etcd_kv_key(const char *prefix, const char *name, const char *id)
{
	char *k;

	if (asprintf(&k, "%s/deployments/%s/replicas/%s", prefix, name, id) ==
	    -1)
		return NULL;
	return k;
}

/* Wait for fd to be ready for events until deadline; 0, or -1 (errno). */
static int
etcd_kv_wait(int fd, short events, double deadline)
{
	struct pollfd p = { fd, events, 0 };
	double left = deadline - monotime_now();
	int rv;

	if (left <= 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	if ((rv = poll(&p, 1, (int)(left * 1000) + 1)) == 0)
		errno = ETIMEDOUT;
	return rv > 0 ? 0 : -1;
}

static int
etcd_kv_connect(const char *endpoint, double deadline)
{
	struct sockaddr_in sin;
	char host[64];
	const char *colon = strrchr(endpoint, ':');
	socklen_t sl = sizeof(int);
	int fd, e = 0;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	if (colon == NULL || (size_t)(colon - endpoint) >= sizeof(host)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(host, endpoint, (size_t)(colon - endpoint));
	host[colon - endpoint] = '\0';
	sin.sin_port = htons((unsigned short)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 &&
	    (errno != EINPROGRESS || etcd_kv_wait(fd, POLLOUT, deadline) ==
	    -1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) == -1 ||
	    (e != 0 && (errno = e)))) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int
etcd_kv_io(int fd, const char *req, size_t len, double deadline, char **out,
    size_t *outlen)
{
	size_t off = 0, cap = 4096;
	ssize_t n;
	char *buf, *nb;

	while (off < len) {
		if ((n = send(fd, req + off, len - off, MSG_NOSIGNAL)) > 0)
			off += (size_t)n;
		else if (n == -1 && errno != EAGAIN)
			return -1;
		else if (etcd_kv_wait(fd, POLLOUT, deadline) == -1)
			return -1;
	}
	if ((buf = malloc(cap)) == NULL)
		return -1;
	for (off = 0;;) {
		if (off + 1 == cap) {
			if (cap >= ETCD_KV_MAX_RESP || (nb = realloc(buf,
			    cap * 2)) == NULL) {
				free(buf);
				errno = EMSGSIZE;
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
		if ((n = recv(fd, buf + off, cap - off - 1, 0)) > 0)
			off += (size_t)n;
		else if (n == 0)
			break;
		else if (errno != EAGAIN ||
		    etcd_kv_wait(fd, POLLIN, deadline) == -1) {
			free(buf);
			return -1;
		}
	}
	buf[off] = '\0';
	*out = buf;
	*outlen = off;
	return 0;
}

int
etcd_kv_post(const char *endpoint, const char *path, const char *body,
    double timeout, char **resp, char *err, size_t errlen)
{
	double deadline = monotime_now() + timeout;
	char *req = NULL, *raw = NULL, *sep;
	size_t rawlen;
	int fd, status, len;

	*resp = NULL;
	if ((len = asprintf(&req, "POST %s HTTP/1.0\r\nHost: %s\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	    path, endpoint, strlen(body), body)) == -1) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((fd = etcd_kv_connect(endpoint, deadline)) == -1 ||
	    etcd_kv_io(fd, req, (size_t)len, deadline, &raw, &rawlen) == -1) {
		snprintf(err, errlen, "etcd %s: %s", endpoint, strerror(errno));
		if (fd != -1)
			close(fd);
		free(req);
		return -1;
	}
	close(fd);
	free(req);
	if (sscanf(raw, "HTTP/%*d.%*d %d", &status) != 1 ||
	    (sep = strstr(raw, "\r\n\r\n")) == NULL) {
		snprintf(err, errlen, "etcd %s: not an HTTP answer", endpoint);
		free(raw);
		return -1;
	}
	memmove(raw, sep + 4, rawlen - (size_t)(sep + 4 - raw) + 1);
	*resp = raw;
	return status;
}

/* POST a txn to each endpoint in turn; the parsed answer, or NULL. */
static json_t *
etcd_kv_txn(const struct conf_etcd *e, json_t *txn, char *err, size_t errlen)
{
	char *body, *resp;
	json_t *doc = NULL;
	unsigned i;
	int status = -1;

	if ((body = json_dumps(txn, JSON_COMPACT)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (i = 0; i < e->nendpoints && status == -1; i++)
		status = etcd_kv_post(e->endpoints[i], "/v3/kv/txn", body,
		    e->request_timeout, &resp, err, errlen);
	free(body);
	if (status == -1)
		return NULL;
	if (status != 200 || (doc = json_loads(resp, 0, NULL)) == NULL)
		snprintf(err, errlen, "etcd answered %d: %.200s", status, resp);
	free(resp);
	return doc;
}

int
etcd_kv_put(const struct conf_etcd *e, const char *key, const char *value,
    char *err, size_t errlen)
{
	char *k = b64_encode(key, strlen(key)), *v = b64_encode(value,
	    strlen(value));
	json_t *txn = NULL, *doc = NULL;

	if (k != NULL && v != NULL)
		txn = json_pack("{s:[], s:[{s:{s:s, s:s}}]}", "compare",
		    "success", "request_put", "key", k, "value", v);
	free(k);
	free(v);
	if (txn == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	doc = etcd_kv_txn(e, txn, err, errlen);
	json_decref(txn);
	json_decref(doc);
	return doc != NULL ? 0 : -1;
}

int
etcd_kv_delete(const struct conf_etcd *e, const char *key, char *err,
    size_t errlen)
{
	char *k = b64_encode(key, strlen(key));
	json_t *txn = NULL, *doc;
	int ok;

	/* version > 0: the key exists (etcd's gateway leaves out zero and
	 * false fields, so "succeeded" is absent when it did not). */
	if (k != NULL)
		txn = json_pack("{s:[{s:s, s:s, s:s, s:s}], "
		    "s:[{s:{s:s}}]}", "compare", "key", k, "target", "VERSION",
		    "result", "GREATER", "version", "0", "success",
		    "request_delete_range", "key", k);
	free(k);
	if (txn == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	doc = etcd_kv_txn(e, txn, err, errlen);
	json_decref(txn);
	if (doc == NULL)
		return -1;
	ok = json_is_true(json_object_get(doc, "succeeded"));
	json_decref(doc);
	return ok;
}
