/*
 * etcd_kv.h -- blocking writes to etcd's v3 JSON gateway, for the admin
 * API's write-through (a registration on one instance reaches the fleet).
 *
 * Runs on the thread serving the admin request: each call is one short
 * HTTP/1.0 POST per endpoint tried, bounded by registry.etcd's
 * request_timeout, so a dead etcd costs that admin request its timeout and
 * never touches the main loop.  The endpoints are tried in turn; the
 * first that answers decides.
 */
#ifndef INGRESSD_ETCD_KV_H
#define INGRESSD_ETCD_KV_H

#include <stddef.h>

struct conf_etcd;
struct etcd_peer;

/*
 * How to reach etcd: https (verify with ca, present cert/key; NULL: plain
 * http) and credentials (username NULL: none).  Holds the auth token
 * between calls: one thread at a time.  NULL and err when a file is bad.
 */
struct etcd_peer *etcd_peer_new(int https, const char *ca, const char *cert,
		    const char *key, const char *server_name,
		    const char *username, const char *password, char *err,
		    size_t errlen);
/* registry.etcd's. */
struct etcd_peer *etcd_peer_conf(const struct conf_etcd *, char *err,
		    size_t errlen);
void		 etcd_peer_free(struct etcd_peer *);

/* The key of replica id of name: PREFIX/deployments/NAME/replicas/ID
 * (free()), or NULL when out of memory. */
char	*etcd_kv_key(const char *prefix, const char *name, const char *id);
/*
 * Put value at key in one transaction.  0, or -1 with err (etcd
 * unreachable, refused).
 */
int	 etcd_kv_put(const struct conf_etcd *, const char *key,
	    const char *value, char *err, size_t errlen);
/*
 * Delete key in a transaction that first compares its version (> 0: the
 * key exists).  1 deleted, 0 no such key, -1 with err.
 */
int	 etcd_kv_delete(const struct conf_etcd *, const char *key, char *err,
	    size_t errlen);
/*
 * One POST of body to path at endpoint (IP:PORT) through peer (NULL:
 * plain http, no auth): the HTTP status and the response body (free()),
 * or -1 and err.  With credentials, authenticates first when it holds no
 * token, and once more when etcd says the token is invalid (401).
 */
int	 etcd_kv_post(struct etcd_peer *, const char *endpoint,
	    const char *path, const char *body, double timeout, char **resp,
	    char *err, size_t errlen);

#endif
