/*
 * tls.c -- OpenSSL contexts for listeners and replicas (see tls.h).
 *
 * SNI: each certificate gets its own SSL_CTX, configured identically; the
 * first is the one a handshake starts on, and the servername callback
 * moves it to the first certificate whose names (X509_check_host: SAN,
 * wildcards) match the client's server name.  No match keeps the default.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "conf.h"
#include "tls.h"

/* Modern defaults (Mozilla "intermediate"): ECDHE with AEAD only. */
#define TLS_DEFAULT_CIPHERS	"ECDHE-ECDSA-AES128-GCM-SHA256:" \
	"ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:" \
	"ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:" \
	"ECDHE-RSA-CHACHA20-POLY1305"
#define TLS_DEFAULT_SUITES	"TLS_AES_128_GCM_SHA256:" \
	"TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
#define TLS_ALPN_MAX		256

struct tls_srv {
	atomic_int	 refs;
	SSL_CTX		**ctx;		/* one per certificate; [0] default */
	unsigned	 nctx;
	unsigned char	 alpn[TLS_ALPN_MAX];	/* wire format */
	size_t		 alpn_len;
	double		 handshake_timeout;
};

struct tls_slot {
	pthread_mutex_t	 lock;
	struct tls_srv	*srv;
};

struct tls_cli {
	SSL_CTX		*ctx;
	char		*server_name;
	struct tls_cli	*older;		/* replaced, maybe still in use */
	pthread_mutex_t	 lock;		/* sess: every worker connects */
	SSL_SESSION	*sess;		/* a copy of the newest session */
};

/* Ticket keys: [0] encrypts, [1] (the one before) still decrypts. */
struct tls_tkey {
	unsigned char	 name[16];
	unsigned char	 aes[32];
	unsigned char	 hmac[32];
	time_t		 born;
	int		 set;
};

static pthread_mutex_t	 tls_tkey_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tls_tkey	 tls_tkeys[2];
static int		 tls_srv_index = -1;	/* SSL ex_data: its tls_srv */

static _Atomic uint64_t	 tls_n_ok[2], tls_n_resumed, tls_n_failed[TLS_FAIL_N];
static _Atomic uint64_t	 tls_n_refused;
/* Handshakes by cipher: OpenSSL's names are static strings, so a slot is
 * claimed once by pointer (compare-and-swap) and counted after. */
static const char *_Atomic tls_cipher_names[TLS_MAX_CIPHERS];
static _Atomic uint64_t	 tls_n_cipher[TLS_MAX_CIPHERS];

static const char *tls_fail_names[TLS_FAIL_N] = {
	"timeout", "eof", "version", "no_shared_cipher", "no_client_cert",
	"bad_certificate", "protocol",
};

/* Ticket keys ------------------------------------------------------------ */

static int
tls_tkey_make(struct tls_tkey *k, time_t now)
{
	if (RAND_bytes(k->name, sizeof(k->name)) != 1 ||
	    RAND_bytes(k->aes, sizeof(k->aes)) != 1 ||
	    RAND_bytes(k->hmac, sizeof(k->hmac)) != 1)
		return -1;
	k->born = now;
	k->set = 1;
	return 0;
}

/* Under tls_tkey_lock: the current key rolls to [1] once it is old. */
static void
tls_tkey_rotate(time_t now)
{
	struct tls_tkey k;

	if (now - tls_tkeys[0].born < TLS_TICKET_ROTATE)
		return;
	if (tls_tkey_make(&k, now) == -1)
		return;		/* keep the old key a while longer */
	tls_tkeys[1] = tls_tkeys[0];
	tls_tkeys[0] = k;
	OPENSSL_cleanse(&k, sizeof(k));
}

static int
tls_tkey_init(EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx,
    const struct tls_tkey *k, unsigned char *iv, int enc)
{
	OSSL_PARAM params[2];

	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)"SHA256", 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_CipherInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->aes, iv,
	    enc) != 1 || EVP_MAC_init(hctx, k->hmac, sizeof(k->hmac),
	    params) != 1)
		return -1;
	return 0;
}

/*
 * OpenSSL's ticket key callback: 1 ok, 2 ok but renew (an old key), 0 no
 * such key (full handshake), -1 error.
 */
static int
tls_ticket_cb(SSL *ssl, unsigned char *name, unsigned char *iv,
    EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx, int enc)
{
	struct tls_tkey k;
	int i, rv = 0;

	pthread_mutex_lock(&tls_tkey_lock);
	tls_tkey_rotate(time(NULL));
	if (enc) {
		k = tls_tkeys[0];
		rv = 1;
	} else {
		for (i = 0; i < 2; i++) {
			if (tls_tkeys[i].set &&
			    memcmp(name, tls_tkeys[i].name, 16) == 0) {
				k = tls_tkeys[i];
				/* 2: issue a fresh ticket.  Always in TLS 1.3,
				 * where a client resumes with its newest ticket
				 * (one spent per connection, RFC 8446 C.4): with
				 * none after a resumption, every other handshake
				 * would be a full one.  In TLS 1.2, once the key
				 * that sealed it has rotated out. */
				rv = i == 0 && SSL_version(ssl) != TLS1_3_VERSION ?
				    1 : 2;
				break;
			}
		}
	}
	pthread_mutex_unlock(&tls_tkey_lock);
	if (rv == 0)
		return 0;
	if (enc) {
		memcpy(name, k.name, 16);
		if (RAND_bytes(iv, 16) != 1)
			rv = -1;
	}
	if (rv != -1 && tls_tkey_init(cctx, hctx, &k, iv, enc) == -1)
		rv = -1;
	OPENSSL_cleanse(&k, sizeof(k));
	return rv;
}

static void
tls_srv_exfree(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
    long argl, void *argp)
{
	if (ptr != NULL)
		tls_srv_unref(ptr);
}

int
tls_init(char *err, size_t errlen)
{
	pthread_mutex_lock(&tls_tkey_lock);
	if (!tls_tkeys[0].set && tls_tkey_make(&tls_tkeys[0], time(NULL)) == -1) {
		pthread_mutex_unlock(&tls_tkey_lock);
		snprintf(err, errlen, "cannot make a session ticket key");
		return -1;
	}
	pthread_mutex_unlock(&tls_tkey_lock);
	if (tls_srv_index == -1)
		tls_srv_index = SSL_get_ex_new_index(0, NULL, NULL, NULL,
		    tls_srv_exfree);
	return tls_srv_index == -1 ? -1 : 0;
}

/* Errors ------------------------------------------------------------------ */

/* "FILE: OpenSSL's reason" into err, and the queue cleared. */
static int
tls_err(char *err, size_t errlen, const char *file, const char *what)
{
	char buf[256];
	unsigned long e = ERR_peek_last_error();

	if (e != 0)
		ERR_error_string_n(e, buf, sizeof(buf));
	else
		snprintf(buf, sizeof(buf), "unknown error");
	snprintf(err, errlen, "%s: %s: %s", file, what,
	    e != 0 ? ERR_reason_error_string(e) != NULL ?
	    ERR_reason_error_string(e) : buf : buf);
	ERR_clear_error();
	return -1;
}

/* Contexts --------------------------------------------------------------- */

static int
tls_alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	struct tls_srv *srv = SSL_get_ex_data(ssl, tls_srv_index);
	unsigned char *sel;

	if (srv == NULL || srv->alpn_len == 0)
		return SSL_TLSEXT_ERR_NOACK;
	/* Our order wins: SSL_select_next_proto walks its first list. */
	if (SSL_select_next_proto(&sel, outlen, srv->alpn,
	    (unsigned)srv->alpn_len, in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;	/* HTTP/1.1 without ALPN */
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

static int
tls_sni_cb(SSL *ssl, int *alert, void *arg)
{
	struct tls_srv *srv = SSL_get_ex_data(ssl, tls_srv_index);
	const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	X509 *x;
	unsigned i;

	if (srv == NULL || name == NULL)
		return SSL_TLSEXT_ERR_OK;
	for (i = 0; i < srv->nctx; i++) {
		x = SSL_CTX_get0_certificate(srv->ctx[i]);
		if (x != NULL && X509_check_host(x, name, 0, 0, NULL) == 1) {
			if (i > 0)
				SSL_set_SSL_CTX(ssl, srv->ctx[i]);
			break;
		}
	}
	return SSL_TLSEXT_ERR_OK;
}

static int
tls_ctx_versions(SSL_CTX *ctx, const char *min)
{
	int v = min != NULL && strcmp(min, "TLSv1.3") == 0 ? TLS1_3_VERSION :
	    TLS1_2_VERSION;

	return SSL_CTX_set_min_proto_version(ctx, v) == 1 &&
	    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) == 1 ? 0 : -1;
}

static int
tls_ctx_verify(SSL_CTX *ctx, const struct conf_tls *c, char *err,
    size_t errlen)
{
	STACK_OF(X509_NAME) *names;
	int mode = SSL_VERIFY_PEER;

	if (c->verify_client == CONF_VERIFY_OFF || c->client_ca == NULL)
		return 0;
	if (SSL_CTX_load_verify_locations(ctx, c->client_ca, NULL) != 1)
		return tls_err(err, errlen, c->client_ca, "client_ca");
	if ((names = SSL_load_client_CA_file(c->client_ca)) == NULL)
		return tls_err(err, errlen, c->client_ca, "client_ca");
	SSL_CTX_set_client_CA_list(ctx, names);
	if (c->verify_client == CONF_VERIFY_REQUIRE)
		mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	SSL_CTX_set_verify(ctx, mode, NULL);
	SSL_CTX_set_verify_depth(ctx, 8);
	return 0;
}

/* A certificate chain and its key, checked against each other. */
static int
tls_ctx_cert(SSL_CTX *ctx, const char *cert, const char *key, char *err,
    size_t errlen)
{
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
		return tls_err(err, errlen, cert, "certificate");
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		if (ERR_GET_REASON(ERR_peek_last_error()) ==
		    X509_R_KEY_VALUES_MISMATCH) {
			ERR_clear_error();
			snprintf(err, errlen, "%s: private key does not match "
			    "the certificate %s", key, cert);
			return -1;
		}
		return tls_err(err, errlen, key, "private key");
	}
	if (SSL_CTX_check_private_key(ctx) != 1)
		return tls_err(err, errlen, key, "does not match the "
		    "certificate");
	return 0;
}

/* A refused certificate would fail every handshake: refuse it here. */
static int
tls_ctx_dates(SSL_CTX *ctx, const char *cert, char *err, size_t errlen)
{
	X509 *x = SSL_CTX_get0_certificate(ctx);

	if (x == NULL)
		return 0;
	if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
		snprintf(err, errlen, "%s: certificate has expired", cert);
		return -1;
	}
	if (X509_cmp_current_time(X509_get0_notBefore(x)) >= 0) {
		snprintf(err, errlen, "%s: certificate is not yet valid", cert);
		return -1;
	}
	return 0;
}

static SSL_CTX *
tls_srv_ctx(const struct conf_tls *c, const struct conf_tls_cert *cc,
    char *err, size_t errlen)
{
	static const unsigned char sid[] = "ingressd";
	SSL_CTX *ctx;

	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		tls_err(err, errlen, cc->cert, "SSL_CTX_new");
		return NULL;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION |
	    SSL_OP_IGNORE_UNEXPECTED_EOF |
	    (c->session_tickets ? 0 : SSL_OP_NO_TICKET));
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	/* Tickets only: a per-context cache would not be shared by workers'
	 * ... it is one process, but tickets need no memory at all. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	if (!c->session_tickets)
		SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
	SSL_CTX_set_read_ahead(ctx, 1);
	if (tls_ctx_versions(ctx, c->min_version) == -1 ||
	    SSL_CTX_set_cipher_list(ctx, c->ciphers != NULL ? c->ciphers :
	    TLS_DEFAULT_CIPHERS) != 1 ||
	    SSL_CTX_set_ciphersuites(ctx, c->ciphersuites != NULL ?
	    c->ciphersuites : TLS_DEFAULT_SUITES) != 1) {
		tls_err(err, errlen, cc->cert, "ciphers");
		goto fail;
	}
	if (tls_ctx_cert(ctx, cc->cert, cc->key, err, errlen) == -1 ||
	    tls_ctx_dates(ctx, cc->cert, err, errlen) == -1 ||
	    tls_ctx_verify(ctx, c, err, errlen) == -1)
		goto fail;
	SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, tls_ticket_cb);
	SSL_CTX_set_tlsext_servername_callback(ctx, tls_sni_cb);
	SSL_CTX_set_alpn_select_cb(ctx, tls_alpn_cb, NULL);
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

static int
tls_alpn_wire(struct tls_srv *srv, const struct conf_tls *c)
{
	size_t len;
	unsigned i;

	for (i = 0; i < c->nalpn; i++) {
		len = strlen(c->alpn[i]);
		if (len == 0 || len > 255 ||
		    srv->alpn_len + 1 + len > sizeof(srv->alpn))
			return -1;
		srv->alpn[srv->alpn_len++] = (unsigned char)len;
		memcpy(srv->alpn + srv->alpn_len, c->alpn[i], len);
		srv->alpn_len += len;
	}
	return 0;
}

struct tls_srv *
tls_srv_new(const struct conf_tls *c, char *err, size_t errlen)
{
	struct tls_srv *srv;
	unsigned i;

	if ((srv = calloc(1, sizeof(*srv))) == NULL ||
	    (srv->ctx = calloc(c->ncerts, sizeof(*srv->ctx))) == NULL) {
		free(srv);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	atomic_init(&srv->refs, 1);
	srv->handshake_timeout = c->handshake_timeout;
	if (tls_alpn_wire(srv, c) == -1) {
		snprintf(err, errlen, "alpn: too long");
		tls_srv_unref(srv);
		return NULL;
	}
	for (i = 0; i < c->ncerts; i++) {
		if ((srv->ctx[i] = tls_srv_ctx(c, &c->certs[i], err,
		    errlen)) == NULL) {
			tls_srv_unref(srv);
			return NULL;
		}
		srv->nctx++;
	}
	return srv;
}

void
tls_srv_unref(struct tls_srv *srv)
{
	unsigned i;

	if (srv == NULL || atomic_fetch_sub(&srv->refs, 1) != 1)
		return;
	for (i = 0; i < srv->nctx; i++)
		SSL_CTX_free(srv->ctx[i]);
	free(srv->ctx);
	free(srv);
}

double
tls_srv_handshake_timeout(const struct tls_srv *srv)
{
	return srv->handshake_timeout;
}

struct ssl_st *
tls_srv_ssl(struct tls_srv *srv)
{
	SSL *ssl;

	if ((ssl = SSL_new(srv->ctx[0])) == NULL)
		return NULL;
	atomic_fetch_add(&srv->refs, 1);
	SSL_set_ex_data(ssl, tls_srv_index, srv);	/* SSL_free unrefs */
	SSL_set_accept_state(ssl);
	return ssl;
}

int
tls_check(const struct conf_tls *c, char *err, size_t errlen)
{
	struct tls_srv *srv;

	if ((srv = tls_srv_new(c, err, errlen)) == NULL)
		return -1;
	tls_srv_unref(srv);
	return 0;
}

/* Slots ------------------------------------------------------------------ */

struct tls_slot *
tls_slot_new(struct tls_srv *srv)
{
	struct tls_slot *sl;

	if ((sl = calloc(1, sizeof(*sl))) == NULL)
		return NULL;
	pthread_mutex_init(&sl->lock, NULL);
	sl->srv = srv;
	return sl;
}

void
tls_slot_free(struct tls_slot *sl)
{
	if (sl == NULL)
		return;
	tls_srv_unref(sl->srv);
	pthread_mutex_destroy(&sl->lock);
	free(sl);
}

void
tls_slot_set(struct tls_slot *sl, struct tls_srv *srv)
{
	struct tls_srv *old;

	pthread_mutex_lock(&sl->lock);
	old = sl->srv;
	sl->srv = srv;
	pthread_mutex_unlock(&sl->lock);
	tls_srv_unref(old);	/* open connections keep theirs */
}

struct ssl_st *
tls_slot_ssl(struct tls_slot *sl, double *timeout)
{
	SSL *ssl;

	pthread_mutex_lock(&sl->lock);
	ssl = tls_srv_ssl(sl->srv);
	*timeout = sl->srv->handshake_timeout;
	pthread_mutex_unlock(&sl->lock);
	return ssl;
}

/* Client side ------------------------------------------------------------ */

/*
 * Client sessions: a copy of the newest session a server gave is offered
 * by every next connection of this context (one replica address, one CA
 * and name), in any worker, as nginx's proxy_ssl_session_reuse does, so a
 * pool that opens connections pays one full handshake, not one each.
 * Copies, because OpenSSL marks the session a TLS 1.3 handshake used as
 * spent in the object itself when it ends (RFC 8446 C.4): one shared
 * object would resume only the first of a burst (nginx's client does
 * that), and the mark would be written under other threads.  Stateless
 * ticket servers (OpenSSL, nginx, Go) take a ticket more than once; any
 * other makes a full handshake and gives a fresh session.
 */
static int
tls_cli_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct tls_cli *cl = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	SSL_SESSION *copy, *old;

	if (cl == NULL || !SSL_SESSION_is_resumable(sess) ||
	    (copy = SSL_SESSION_dup(sess)) == NULL)
		return 0;
	pthread_mutex_lock(&cl->lock);
	old = cl->sess;
	cl->sess = copy;
	pthread_mutex_unlock(&cl->lock);
	SSL_SESSION_free(old);
	return 0;		/* the connection keeps sess; we keep the copy */
}

/* A copy of the newest session for one connection, or NULL. */
static SSL_SESSION *
tls_cli_session(struct tls_cli *cl)
{
	SSL_SESSION *kept, *copy;

	pthread_mutex_lock(&cl->lock);
	if ((kept = cl->sess) != NULL)
		SSL_SESSION_up_ref(kept);
	pthread_mutex_unlock(&cl->lock);
	if (kept == NULL)
		return NULL;
	copy = SSL_SESSION_dup(kept);	/* kept is never written: no lock */
	SSL_SESSION_free(kept);
	return copy;
}

struct tls_cli *
tls_cli_new(const char *ca, const char *cert, const char *key,
    const char *server_name, char *err, size_t errlen)
{
	struct tls_cli *cl;

	if ((cl = calloc(1, sizeof(*cl))) == NULL ||
	    (cl->ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		free(cl);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&cl->lock, NULL);
	SSL_CTX_set_app_data(cl->ctx, cl);
	SSL_CTX_set_options(cl->ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(cl->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_read_ahead(cl->ctx, 1);
	SSL_CTX_set_session_cache_mode(cl->ctx, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(cl->ctx, tls_cli_new_session);
	if (tls_ctx_versions(cl->ctx, NULL) == -1) {
		tls_err(err, errlen, "tls", "versions");
		goto fail;
	}
	if (ca != NULL) {
		if (SSL_CTX_load_verify_locations(cl->ctx, ca, NULL) != 1) {
			tls_err(err, errlen, ca, "ca");
			goto fail;
		}
		SSL_CTX_set_verify(cl->ctx, SSL_VERIFY_PEER, NULL);
	}
	if (cert != NULL && tls_ctx_cert(cl->ctx, cert, key != NULL ? key :
	    cert, err, errlen) == -1)
		goto fail;
	if (server_name != NULL && (cl->server_name = strdup(server_name)) ==
	    NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	return cl;
fail:
	tls_cli_free(cl);
	return NULL;
}

void
tls_cli_free(struct tls_cli *cl)
{
	struct tls_cli *older;

	for (; cl != NULL; cl = older) {
		older = cl->older;
		SSL_CTX_free(cl->ctx);
		SSL_SESSION_free(cl->sess);
		pthread_mutex_destroy(&cl->lock);
		free(cl->server_name);
		free(cl);
	}
}

void
tls_cli_retire(struct tls_cli *cl, struct tls_cli *older)
{
	cl->older = older;
}

struct ssl_st *
tls_cli_ssl(struct tls_cli *cl, const char *alpn)
{
	unsigned char wire[1 + 255];
	size_t n = alpn != NULL ? strlen(alpn) : 0;
	SSL_SESSION *sess;
	SSL *ssl;

	if (n > 255 || (ssl = SSL_new(cl->ctx)) == NULL)
		return NULL;
	if (cl->server_name != NULL &&
	    (SSL_set_tlsext_host_name(ssl, cl->server_name) != 1 ||
	    SSL_set1_host(ssl, cl->server_name) != 1))
		goto fail;
	if (n > 0) {
		wire[0] = (unsigned char)n;
		memcpy(wire + 1, alpn, n);
		if (SSL_set_alpn_protos(ssl, wire, (unsigned)n + 1) != 0)
			goto fail;	/* 0 is success here */
	}
	if ((sess = tls_cli_session(cl)) != NULL) {
		(void)SSL_set_session(ssl, sess);	/* its own ref */
		SSL_SESSION_free(sess);
	}
	SSL_set_connect_state(ssl);
	return ssl;
fail:
	SSL_free(ssl);
	return NULL;
}

/* Handshakes ------------------------------------------------------------- */

static void
tls_count_cipher(const char *name)
{
	const char *cur;
	unsigned i;

	for (i = 0; i < TLS_MAX_CIPHERS && name != NULL; i++) {
		cur = atomic_load(&tls_cipher_names[i]);
		if (cur == NULL) {
			const char *empty = NULL;

			if (atomic_compare_exchange_strong(&tls_cipher_names[i],
			    &empty, name))
				cur = name;
			else
				cur = empty;
		}
		if (cur == name || strcmp(cur, name) == 0) {
			atomic_fetch_add_explicit(&tls_n_cipher[i], 1,
			    memory_order_relaxed);
			return;
		}
	}
}

void
tls_handshake_ok(struct ssl_st *ssl)
{
	atomic_fetch_add_explicit(&tls_n_ok[SSL_version(ssl) ==
	    TLS1_3_VERSION], 1, memory_order_relaxed);
	if (SSL_session_reused(ssl))
		atomic_fetch_add_explicit(&tls_n_resumed, 1,
		    memory_order_relaxed);
	tls_count_cipher(SSL_get_cipher_name(ssl));
}

void
tls_handshake_failed(enum tls_fail why)
{
	atomic_fetch_add_explicit(&tls_n_failed[why], 1, memory_order_relaxed);
}

static enum tls_fail
tls_fail_of(int reason)
{
	switch (reason) {
	case SSL_R_UNSUPPORTED_PROTOCOL:
	case SSL_R_WRONG_VERSION_NUMBER:
	case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
	case SSL_R_NO_PROTOCOLS_AVAILABLE:
		return TLS_FAIL_VERSION;
	case SSL_R_NO_SHARED_CIPHER:
	case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
		return TLS_FAIL_CIPHER;
	case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
	case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
		return TLS_FAIL_NO_CERT;
	case SSL_R_CERTIFICATE_VERIFY_FAILED:
	case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
	case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
	case SSL_R_TLSV1_ALERT_DECRYPT_ERROR:
		return TLS_FAIL_BAD_CERT;
	default:
		return TLS_FAIL_PROTOCOL;
	}
}

enum tls_fail
tls_fail_reason(struct ssl_st *ssl, int ssl_error, char *detail, size_t len)
{
	unsigned long e = ERR_peek_last_error();
	enum tls_fail why;

	if (e == 0) {
		snprintf(detail, len, "connection closed");
		why = TLS_FAIL_EOF;
	} else {
		ERR_error_string_n(e, detail, len);
		why = tls_fail_of(ERR_GET_REASON(e));
	}
	if (ssl_error == SSL_ERROR_SSL && why == TLS_FAIL_BAD_CERT &&
	    ssl != NULL && SSL_get_verify_result(ssl) != X509_V_OK)
		snprintf(detail, len, "certificate verify failed: %s",
		    X509_verify_cert_error_string(SSL_get_verify_result(ssl)));
	ERR_clear_error();
	return why;
}

const char *
tls_fail_name(enum tls_fail why)
{
	return why < TLS_FAIL_N ? tls_fail_names[why] : "other";
}

const char *
tls_version(struct ssl_st *ssl)
{
	return SSL_get_version(ssl);
}

const char *
tls_cipher(struct ssl_st *ssl)
{
	return SSL_get_cipher_name(ssl);
}

const char *
tls_sni(struct ssl_st *ssl)
{
	return SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
}

const char *
tls_alpn(struct ssl_st *ssl, size_t *len)
{
	const unsigned char *p = NULL;
	unsigned n = 0;

	SSL_get0_alpn_selected(ssl, &p, &n);
	*len = n;
	return n > 0 ? (const char *)p : NULL;
}

int
tls_peer_subject(struct ssl_st *ssl, char *buf, size_t len)
{
	X509 *x = SSL_get0_peer_certificate(ssl);
	BIO *b;
	int n;

	buf[0] = '\0';
	if (x == NULL || SSL_get_verify_result(ssl) != X509_V_OK ||
	    (b = BIO_new(BIO_s_mem())) == NULL)
		return 0;
	X509_NAME_print_ex(b, X509_get_subject_name(x), 0, XN_FLAG_RFC2253 &
	    ~ASN1_STRFLGS_ESC_MSB);
	n = BIO_read(b, buf, (int)len - 1);
	BIO_free(b);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0;
}

void
tls_stats(struct tls_stats *st)
{
	int i;

	for (i = 0; i < 2; i++)
		st->handshakes[i] = atomic_load(&tls_n_ok[i]);
	st->resumed = atomic_load(&tls_n_resumed);
	for (i = 0; i < TLS_FAIL_N; i++)
		st->failed[i] = atomic_load(&tls_n_failed[i]);
	st->reloads_refused = atomic_load(&tls_n_refused);
	for (i = 0; i < TLS_MAX_CIPHERS; i++) {
		st->ciphers[i] = atomic_load(&tls_cipher_names[i]);
		st->by_cipher[i] = atomic_load(&tls_n_cipher[i]);
	}
}

void
tls_reload_refused(void)
{
	atomic_fetch_add(&tls_n_refused, 1);
}
