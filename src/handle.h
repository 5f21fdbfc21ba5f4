/*
 * handle.h -- a deployment name, resolved and cached per worker.
 *
 * The first request for a name creates its handle: RESOLVING (ask the
 * registry) -> WARMING (connect each replica, HELLO, PING) -> READY on the
 * first PONG.  Requests wait in the handle's bounded queue meanwhile; a
 * request that waits past its queue deadline gets 503.  Later requests find
 * the handle in the worker's table and never resolve again, until the
 * registry pushes a change for the name (handle_refresh).
 *
 * The table has no fixed capacity.  A handle nobody used for
 * handle_idle_ttl seconds is freed by the worker's tick, which walks a
 * least-recently-used list from its old end, so a tick costs what expired,
 * not what is cached; the name comes back through the first-use path.
 * A handle owns no timer and polls nothing: upstreams tell it what changed.
 */
#ifndef INGRESSD_HANDLE_H
#define INGRESSD_HANDLE_H

struct handle;
struct stream;
struct wctx;

struct handle_table *handle_table_new(void);
void		 handle_table_free(struct handle_table *);

/* The worker's handle for name, created on first use; NULL if unknown. */
struct handle	*handle_get(struct wctx *, const char *name);
/* Attach the stream to a replica now, or queue it, or fail it (503: the
 * stream's on_fail runs before this returns).  The caller holds h (below)
 * for the stream's life: a retry comes back to it. */
void		 handle_submit(struct handle *, struct stream *);
const char	*handle_name(const struct handle *);
double		 handle_request_timeout(const struct handle *);
/* Has the handle a READY replica (busy or not)? */
int		 handle_has_ready(const struct handle *);
/* The front holds the handle from handle_submit() until it frees the
 * stream: a held handle is never freed (idle expiry skips it). */
void		 handle_hold(struct handle *);
void		 handle_drop(struct handle *);

/* The registry changed the name: resolve an existing handle again in
 * place (1), none (0), or the name is gone (-1).  A removed deployment's
 * handle is detached, kept until handle_is_idle(), then released. */
int		 handle_refresh(struct wctx *, const char *name);
struct handle	*handle_detach(struct wctx *, const char *name);
int		 handle_is_idle(const struct handle *);
void		 handle_release(struct handle *);
/* The worker's tick: free the handles idle for ttl seconds or more (0:
 * never), least recently used first.  Returns how many went. */
unsigned	 handle_table_expire(struct wctx *, double ttl);

#endif
