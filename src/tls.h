/*
 * tls.h -- OpenSSL contexts: a TLS listener's certificates (SNI), ALPN,
 * client verification and session tickets; the client side toward
 * replicas, HTTP servers and etcd, with session resumption; what a
 * finished handshake says (for logs and metrics).
 *
 * The I/O itself is in sock.c (sock_tls_accept, sock_tls_connect): this
 * module only makes the SSL objects and reads them.  A leaf: it calls
 * nothing of ours but log-free helpers, and reports errors in buffers.
 *
 * Lifetimes.  A listener's contexts are a struct tls_srv, reference
 * counted: each SSL made from it holds a reference (dropped by SSL_free),
 * so a reload that swaps in a new tls_srv (tls_slot_set) leaves every
 * open connection on the certificates it started with.
 *
 * Session tickets are encrypted with process-wide keys (every listener,
 * every worker), rotated every TLS_TICKET_ROTATE seconds; a ticket made
 * under the previous key is still accepted (and renewed).
 */
#ifndef INGRESSD_TLS_H
#define INGRESSD_TLS_H

#include <stddef.h>
#include <stdint.h>

#define TLS_TICKET_ROTATE	3600	/* seconds a ticket key encrypts */
#define TLS_MAX_CIPHERS		16	/* cipher names counted apart */

struct ssl_st;
struct conf_tls;
struct tls_srv;
struct tls_slot;
struct tls_cli;

/* Why a handshake failed (a metrics label: append only). */
enum tls_fail {
	TLS_FAIL_TIMEOUT,	/* not done within handshake_timeout */
	TLS_FAIL_EOF,		/* the peer closed or reset */
	TLS_FAIL_VERSION,	/* no common protocol version */
	TLS_FAIL_CIPHER,	/* no shared cipher */
	TLS_FAIL_NO_CERT,	/* verify_client "require": none sent */
	TLS_FAIL_BAD_CERT,	/* a peer certificate did not verify */
	TLS_FAIL_PROTOCOL,	/* not TLS, or broken TLS */
	TLS_FAIL_N
};

/* Process-wide: ticket keys.  Main thread, before any context. */
int		 tls_init(char *err, size_t errlen);

/* A listener's contexts from its conf; NULL and "FILE: reason" in err. */
struct tls_srv	*tls_srv_new(const struct conf_tls *, char *err, size_t);
void		 tls_srv_unref(struct tls_srv *);
double		 tls_srv_handshake_timeout(const struct tls_srv *);

/* The listener's current contexts, swapped by a reload (any thread). */
struct tls_slot	*tls_slot_new(struct tls_srv *);	/* takes the ref */
void		 tls_slot_free(struct tls_slot *);
void		 tls_slot_set(struct tls_slot *, struct tls_srv *);
/* A server SSL from the current contexts (NULL: out of memory), and the
 * handshake timeout that goes with it. */
struct ssl_st	*tls_slot_ssl(struct tls_slot *, double *timeout);

/* Toward replicas: verify with ca (NULL: no verification), present
 * cert/key (NULL: none); server_name: SNI and the name checked.  The
 * newest session a server gives is offered by the next connections
 * (resumption), from any thread. */
struct tls_cli	*tls_cli_new(const char *ca, const char *cert, const char *key,
		    const char *server_name, char *err, size_t errlen);
/* Frees cl and every context it retired. */
void		 tls_cli_free(struct tls_cli *);
/* older is replaced by cl, but may still be in use: freed with cl. */
void		 tls_cli_retire(struct tls_cli *cl, struct tls_cli *older);
/* A client SSL offering ALPN protocol alpn (NULL: no ALPN). */
struct ssl_st	*tls_cli_ssl(struct tls_cli *, const char *alpn);

/* A server SSL straight from a tls_srv (the replica library's side). */
struct ssl_st	*tls_srv_ssl(struct tls_srv *);

/* What sock.c reports about a handshake. */
void		 tls_handshake_ok(struct ssl_st *);
void		 tls_handshake_failed(enum tls_fail);
/* The reason for a failed handshake step, from OpenSSL's error queue
 * (which it clears); detail gets OpenSSL's text. */
enum tls_fail	 tls_fail_reason(struct ssl_st *, int ssl_error, char *detail,
		    size_t len);
const char	*tls_fail_name(enum tls_fail);

/* A finished handshake, for logs and headers. */
const char	*tls_version(struct ssl_st *);	/* "TLSv1.3" */
const char	*tls_cipher(struct ssl_st *);
const char	*tls_sni(struct ssl_st *);	/* NULL: none sent */
/* The ALPN protocol chosen, or NULL (len 0). */
const char	*tls_alpn(struct ssl_st *, size_t *len);
/* The client certificate's subject (RFC 2253) if one was sent and
 * verified; 0 and "" otherwise. */
int		 tls_peer_subject(struct ssl_st *, char *buf, size_t len);

/* Counters for /metrics, summed over the process. */
struct tls_stats {
	uint64_t	 handshakes[2];		/* TLSv1.2, TLSv1.3 */
	uint64_t	 resumed;
	uint64_t	 failed[TLS_FAIL_N];
	uint64_t	 reloads_refused;
	const char	*ciphers[TLS_MAX_CIPHERS];	/* NULL: unused */
	uint64_t	 by_cipher[TLS_MAX_CIPHERS];
};
void		 tls_stats(struct tls_stats *);
void		 tls_reload_refused(void);

/* -t and reloads: check each certificate file against its key. */
int		 tls_check(const struct conf_tls *, char *err, size_t errlen);

#endif
