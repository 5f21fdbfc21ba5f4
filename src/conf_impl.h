/*
 * conf_impl.h -- what ingressd's conf schema files share (private to
 * conf.c, conf_deploy.c and conf_listen.c).
 *
 * Layered: conf.c (the top-level table, load, defaults, free, the small
 * sections) calls conf_deploy.c (deployments and routes), which calls
 * conf_listen.c (listen entries, TLS keys and the address checks); all
 * call the walker (conf_walk.h), which calls none of them.
 */
#ifndef INGRESSD_CONF_IMPL_H
#define INGRESSD_CONF_IMPL_H

#include "conf.h"
#include "conf_walk.h"

#define CONF_NAME_MAX	255

/* conf_listen.c */
int	conf_check_addr(struct conf_ctx *, const char *);
int	conf_check_listeners(struct conf_ctx *, const struct conf *);
int	conf_addr_list(struct conf_ctx *, json_t *, int, char ***,
		    unsigned *);
int	conf_listen(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
int	conf_listen_one(struct conf_ctx *, json_t *, char **addr,
		    struct conf_tls **);
int	conf_path(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
void	conf_tls_free(struct conf_tls *);

/* conf_deploy.c */
int	conf_routes(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
int	conf_deployments(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
int	conf_upstream_tls(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
void	conf_upstream_tls_free(struct conf_upstream_tls *);

#endif /* INGRESSD_CONF_IMPL_H */
