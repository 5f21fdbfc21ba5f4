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
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "b64.h"
#include "conf.h"
#include "etcd_kv.h"
#include "monotime.h"
#include "tls.h"

struct etcd_peer {
	struct tls_cli	*tls;		/* NULL: plain http */
	char		*username;	/* NULL: no auth */
	char		*password;
	char		*token;		/* NULL: authenticate first */
};

struct etcd_peer *
etcd_peer_new(int https, const char *ca, const char *cert, const char *key,
    const char *server_name, const char *username, const char *password,
    char *err, size_t errlen)
{
	struct etcd_peer *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		goto oom;
	if (https && (p->tls = tls_cli_new(ca, cert, key, server_name, err,
	    errlen)) == NULL) {
		etcd_peer_free(p);
		return NULL;
	}
	if (username != NULL && ((p->username = strdup(username)) == NULL ||
	    (p->password = strdup(password != NULL ? password : "")) == NULL))
		goto oom;
	return p;
oom:
	etcd_peer_free(p);
	snprintf(err, errlen, "out of memory");
	return NULL;
}

struct etcd_peer *
etcd_peer_conf(const struct conf_etcd *c, char *err, size_t errlen)
{
	const struct conf_upstream_tls *t = c->tls;

	return etcd_peer_new(c->https, t != NULL ? t->ca : NULL, t != NULL ?
	    t->cert : NULL, t != NULL ? t->key : NULL, t != NULL ?
	    t->server_name : NULL, c->username, c->password, err, errlen);
}

void
etcd_peer_free(struct etcd_peer *p)
{
	if (p == NULL)
		return;
	tls_cli_free(p->tls);
	free(p->username);
	if (p->password != NULL)
		explicit_bzero(p->password, strlen(p->password));
	free(p->password);
	free(p->token);
	free(p);
}

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

/* One step of a TLS call: >0 done, 0 wait (done), -1 failed (errno). */
static int
etcd_kv_ssl_wait(SSL *ssl, int rv, double deadline)
{
	switch (SSL_get_error(ssl, rv)) {
	case SSL_ERROR_WANT_READ:
		return etcd_kv_wait(SSL_get_fd(ssl), POLLIN, deadline);
	case SSL_ERROR_WANT_WRITE:
		return etcd_kv_wait(SSL_get_fd(ssl), POLLOUT, deadline);
	default:
		errno = ECONNRESET;
		return -1;
	}
}

static ssize_t
etcd_kv_send(int fd, SSL *ssl, const char *p, size_t len, double deadline)
{
	ssize_t n;

	if (ssl == NULL) {
		if ((n = send(fd, p, len, MSG_NOSIGNAL)) == -1 &&
		    errno == EAGAIN)
			return etcd_kv_wait(fd, POLLOUT, deadline) == -1 ? -1 :
			    0;
		return n;
	}
	if ((n = SSL_write(ssl, p, (int)len)) > 0)
		return n;
	return etcd_kv_ssl_wait(ssl, (int)n, deadline) == -1 ? -1 : 0;
}

/* Bytes read, 0 at EOF, -2 try again, -1 failed. */
static ssize_t
etcd_kv_recv(int fd, SSL *ssl, char *p, size_t len, double deadline)
{
	ssize_t n;

	if (ssl == NULL) {
		if ((n = recv(fd, p, len, 0)) == -1 && errno == EAGAIN)
			return etcd_kv_wait(fd, POLLIN, deadline) == -1 ? -1 :
			    -2;
		return n;
	}
	if ((n = SSL_read(ssl, p, (int)len)) > 0)
		return n;
	if (SSL_get_error(ssl, (int)n) == SSL_ERROR_ZERO_RETURN)
		return 0;
	return etcd_kv_ssl_wait(ssl, (int)n, deadline) == -1 ? -1 : -2;
}

static int
etcd_kv_io(int fd, SSL *ssl, const char *req, size_t len, double deadline,
    char **out, size_t *outlen)
{
	size_t off = 0, cap = 4096;
	ssize_t n;
	char *buf, *nb;

	while (off < len)
		if ((n = etcd_kv_send(fd, ssl, req + off, len - off,
		    deadline)) == -1)
			return -1;
		else
			off += (size_t)n;
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
		if ((n = etcd_kv_recv(fd, ssl, buf + off, cap - off - 1,
		    deadline)) > 0)
			off += (size_t)n;
		else if (n == 0)
			break;
		else if (n == -1) {
			free(buf);
			return -1;
		}
	}
	buf[off] = '\0';
	*out = buf;
	*outlen = off;
	return 0;
}

/* The TLS handshake on fd: an SSL, or NULL and why in err. */
static SSL *
etcd_kv_handshake(struct etcd_peer *p, int fd, const char *endpoint,
    double deadline, char *err, size_t errlen)
{
	SSL *ssl;
	long vr;
	int rv;

	ERR_clear_error();
	if ((ssl = tls_cli_ssl(p->tls, NULL)) == NULL ||
	    SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		snprintf(err, errlen, "etcd %s: out of memory", endpoint);
		return NULL;
	}
	while ((rv = SSL_connect(ssl)) != 1)
		if (etcd_kv_ssl_wait(ssl, rv, deadline) == -1) {
			vr = SSL_get_verify_result(ssl);
			snprintf(err, errlen, "etcd %s: TLS handshake failed: "
			    "%s", endpoint, vr != X509_V_OK ?
			    X509_verify_cert_error_string(vr) : errno ==
			    ETIMEDOUT ? "timed out" :
			    ERR_reason_error_string(ERR_peek_last_error()) !=
			    NULL ? ERR_reason_error_string(
			    ERR_peek_last_error()) : "connection closed");
			ERR_clear_error();
			SSL_free(ssl);
			return NULL;
		}
	return ssl;
}

/* One POST, as is: the status and body, or -1. */
static int
etcd_kv_post1(struct etcd_peer *p, const char *endpoint, const char *path,
    const char *body, const char *token, double deadline, char **resp,
    char *err, size_t errlen)
{
	char *req = NULL, *raw = NULL, *sep;
	size_t rawlen;
	SSL *ssl = NULL;
	int fd, status, len, rv;

	*resp = NULL;
	if ((len = asprintf(&req, "POST %s HTTP/1.0\r\nHost: %s\r\n"
	    "%s%s%sContent-Type: application/json\r\nContent-Length: %zu"
	    "\r\n\r\n%s", path, endpoint, token != NULL ? "Authorization: " :
	    "", token != NULL ? token : "", token != NULL ? "\r\n" : "",
	    strlen(body), body)) == -1) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((fd = etcd_kv_connect(endpoint, deadline)) == -1)
		snprintf(err, errlen, "etcd %s: %s", endpoint, strerror(errno));
	else if (p != NULL && p->tls != NULL && (ssl = etcd_kv_handshake(p,
	    fd, endpoint, deadline, err, errlen)) == NULL)
		;
	else if ((rv = etcd_kv_io(fd, ssl, req, (size_t)len, deadline, &raw,
	    &rawlen)) == -1)
		snprintf(err, errlen, "etcd %s: %s", endpoint, strerror(errno));
	SSL_free(ssl);
	if (fd != -1)
		close(fd);
	free(req);
	if (raw == NULL)
		return -1;
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

/* POST /v3/auth/authenticate: the token into p, or -1 and err. */
static int
etcd_kv_auth(struct etcd_peer *p, const char *endpoint, double deadline,
    char *err, size_t errlen)
{
	json_t *doc = json_pack("{s:s, s:s}", "name", p->username,
	    "password", p->password);
	char *body = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL, *resp;
	const char *tok;
	int status;

	json_decref(doc);
	if (body == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	status = etcd_kv_post1(p, endpoint, "/v3/auth/authenticate", body,
	    NULL, deadline, &resp, err, errlen);
	explicit_bzero(body, strlen(body));
	free(body);
	if (status == -1)
		return -1;
	doc = json_loads(resp, 0, NULL);
	tok = json_string_value(json_object_get(doc, "token"));
	if (status != 200 || tok == NULL || (p->token = strdup(tok)) == NULL)
		snprintf(err, errlen, "etcd %s: authenticate as %s: HTTP %d: "
		    "%.200s", endpoint, p->username, status, resp);
	json_decref(doc);
	free(resp);
	return p->token != NULL ? 0 : -1;
}

int
etcd_kv_post(struct etcd_peer *p, const char *endpoint, const char *path,
    const char *body, double timeout, char **resp, char *err, size_t errlen)
{
	double deadline = monotime_now() + timeout;
	int status, again;

	*resp = NULL;
	for (again = 1;; again--) {
		if (p != NULL && p->username != NULL && p->token == NULL &&
		    etcd_kv_auth(p, endpoint, deadline, err, errlen) == -1)
			return -1;
		status = etcd_kv_post1(p, endpoint, path, body, p != NULL ?
		    p->token : NULL, deadline, resp, err, errlen);
		/* 401: the token expired or etcd restarted; once more. */
		if (status != 401 || p == NULL || p->username == NULL ||
		    again == 0)
			return status;
		free(*resp);
		*resp = NULL;
		free(p->token);
		p->token = NULL;
	}
}

/* POST a txn to each endpoint in turn; the parsed answer, or NULL. */
static json_t *
etcd_kv_txn(const struct conf_etcd *e, json_t *txn, char *err, size_t errlen)
{
	struct etcd_peer *p;
	char *body, *resp;
	json_t *doc = NULL;
	unsigned i;
	int status = -1;

	/* A peer per call: admin writes are rare, and threads share none. */
	if ((p = etcd_peer_conf(e, err, errlen)) == NULL)
		return NULL;
	if ((body = json_dumps(txn, JSON_COMPACT)) == NULL) {
		etcd_peer_free(p);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (i = 0; i < e->nendpoints && status == -1; i++)
		status = etcd_kv_post(p, e->endpoints[i], "/v3/kv/txn", body,
		    e->request_timeout, &resp, err, errlen);
	etcd_peer_free(p);
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
