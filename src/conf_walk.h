/*
 * conf_walk.h -- a generic validator for JSON objects described by tables.
 *
 * Each JSON object has a table of the keys it may hold: name, handler,
 * offset of the field it fills, and limits.  conf_walk() rejects keys not
 * in the table, then runs each present key's handler with the key path
 * ("deployments.echo.spawn.replicas") pushed, so every error can say where
 * it is.  The typed leaf handlers below (conf_uint ... conf_string) fill a
 * field at the key's offset.  This layer knows nothing of ingressd's
 * schema: the tables and their handlers are in conf.c and below
 * (conf_impl.h).
 */
#ifndef INGRESSD_CONF_WALK_H
#define INGRESSD_CONF_WALK_H

#include <stddef.h>

#include <jansson.h>

#define CONF_REQUIRED	0x1	/* the key must be present */
#define CONF_ZERO_OK	0x2	/* seconds: 0 is allowed (means "default") */

#define CONF_MAX_SECONDS 86400

struct conf;

struct conf_ctx {
	struct conf	*conf;		/* the schema's; the walker never reads it */
	const char	*path;		/* the file, for messages */
	char		*err;
	size_t		 errlen;
	char		 kpath[512];	/* "deployments.echo.spawn" */
	size_t		 kplen;
};

struct conf_key;
typedef int (*conf_fn)(struct conf_ctx *, const struct conf_key *, json_t *,
    void *);

struct conf_key {
	const char	*name;
	conf_fn		 fn;
	size_t		 off;		/* field in the object being filled */
	long long	 min;		/* integers only */
	long long	 max;
	int		 flags;
};

int	conf_error(struct conf_ctx *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
size_t	conf_push(struct conf_ctx *, const char *);
size_t	conf_push_index(struct conf_ctx *, size_t);
void	conf_pop(struct conf_ctx *, size_t);
int	conf_walk(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
char	*conf_strdup(const char *);
void	conf_free_strv(char **, size_t);
int	conf_uint(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
int	conf_size(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
int	conf_seconds(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
int	conf_bool(struct conf_ctx *, const struct conf_key *, json_t *,
		    void *);
int	conf_string(struct conf_ctx *, const struct conf_key *,
		    json_t *, void *);
void	conf_sanitize(char *);

#endif /* INGRESSD_CONF_WALK_H */
