/*
 * handle.h -- a deployment name, resolved and cached per worker.
 *
 * The first request for a name creates its handle: RESOLVING (ask the
 * registry) -> WARMING (connect each replica, HELLO, PING) -> READY on the
 * first PONG.  Requests wait in the handle's bounded queue meanwhile; a
 * request that waits past its queue deadline gets 503.  The handle is kept:
 * later requests find it in the worker's table and never resolve again.
 * A handle owns no timer and polls nothing: upstreams tell it what changed.
 */
#ifndef INGRESSD_HANDLE_H
#define INGRESSD_HANDLE_H

struct handle;
struct stream;
struct upstream;
struct worker;

struct handle_table *handle_table_new(void);
void		 handle_table_free(struct handle_table *);

/* The worker's handle for name, created on first use; NULL if unknown. */
struct handle	*handle_get(struct worker *, const char *name);
/* Attach the stream to a replica now, or queue it, or fail it (503). */
void		 handle_submit(struct handle *, struct stream *);
/* A queued stream leaves early (aborted or timed out). */
void		 handle_dequeue(struct handle *, struct stream *);
/* An upstream it watches changed state or freed a slot. */
void		 handle_upstream_event(struct handle *, struct upstream *);
const char	*handle_name(const struct handle *);
double		 handle_request_timeout(const struct handle *);

/* Reload: resolve an existing handle again in place (1), none (0), or the
 * name is gone (-1).  A removed deployment's handle is detached, kept
 * until handle_is_idle(), then released. */
int		 handle_refresh(struct worker *, const char *name);
struct handle	*handle_detach(struct worker *, const char *name);
int		 handle_is_idle(const struct handle *);
void		 handle_release(struct handle *);
/* Publish each handle's queue length in the registry (for metrics). */
void		 handle_table_publish(struct worker *);

#endif
