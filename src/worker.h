/*
 * worker.h -- one thread with its own event_base, listeners, handles and
 * replica connections.  Workers share nothing on the hot path: the registry
 * (read at resolve time) and the immutable conf are all they see of the rest.
 *
 * The conf and its route table travel together as a snapshot with a
 * reference count.  A reload posts a new snapshot to each worker, which
 * switches between two events; a request that started before keeps
 * pointers into the old one (its route and deployment names), so a worker
 * holds the old snapshot until every client connection it had at the
 * switch has closed (see worker.c).
 */
#ifndef INGRESSD_WORKER_H
#define INGRESSD_WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct conf;
struct event_base;
struct handle_table;
struct reg_change;
struct registry;
struct route_table;
struct wctx;
struct worker;

/*
 * What the worker calls back into the front edge, filled in by main: the
 * worker knows the thread and its loop, not the protocols it carries.
 * drain_all: close idle client connections, end busy ones after their
 * response (returns how many are still busy).  free_all: free every
 * client connection (the worker is going).
 */
struct worker_hooks {
	unsigned (*drain_all)(struct wctx *);
	void	(*free_all)(struct wctx *);
};

struct worker_snap;

/* Takes conf and routes (freed with the last reference); one reference. */
struct worker_snap *worker_snap_new(struct conf *, struct route_table *);
void		 worker_snap_ref(struct worker_snap *);
void		 worker_snap_unref(struct worker_snap *);
const struct conf *worker_snap_conf(const struct worker_snap *);

/* Takes a reference to snap; hooks are copied (NULL: none). */
struct worker	*worker_new(unsigned id, struct worker_snap *,
		    struct registry *, const struct worker_hooks *);
void		 worker_free(struct worker *);
/* Listen on fd (already bound); each accepted connection goes to
 * accept(ctx, fd, sa, socklen, arg) on the worker's thread. */
int		 worker_add_listener(struct worker *, int fd,
		    void (*accept)(struct wctx *, int, const struct sockaddr *,
		    int, void *), void *arg);
int		 worker_start(struct worker *);
/* From another thread: stop the loop, then join. */
void		 worker_stop(struct worker *);
void		 worker_join(struct worker *);
/* Schedule fn(worker, arg) on the worker's own thread.  The only worker
 * call other threads may make: a worker's event_base has no lock. */
void		 worker_post(struct worker *, void (*)(struct worker *, void *),
		    void *arg);

/* On the worker's thread: new requests use snap from now on. */
void		 worker_switch(struct worker *, struct worker_snap *);
/* On the worker's thread: a removed deployment's handle leaves the table
 * and is freed once nothing uses it. */
void		 worker_forget(struct worker *, const char *name);
/* On the worker's thread: the registry changed these names (a reload, a
 * registration, DNS); each handle resolves again or goes. */
void		 worker_apply_changes(struct worker *,
		    const struct reg_change *, unsigned n);
/* On the worker's thread: stop accepting, close idle client connections,
 * close busy ones after their response. */
void		 worker_drain(struct worker *);
/* Any thread: client connections still open after worker_drain() (busy,
 * or flushing their last response), or -1 before. */
int		 worker_busy(const struct worker *);
/* Any thread: post a no-op that counts; worker_beats() tells whether the
 * worker's loop is turning (the systemd watchdog). */
void		 worker_beat(struct worker *);
unsigned	 worker_beats(const struct worker *);
/* Client connections open across all workers. */
unsigned	 worker_conns(void);

/* The context the worker passes down (wctx.h), for code that runs on
 * the worker's thread. */
struct wctx	*worker_ctx(struct worker *);
/* For admin.c, which is handed the worker. */
const struct conf *worker_conf(const struct worker *);
struct registry	*worker_registry(const struct worker *);
/* On the worker's thread.  A fresh request id (hex), unique across
 * workers and restarts. */
void		 worker_request_id(struct wctx *, char *buf, size_t len);
/* Connections: counted against limits.max_connections across workers. */
int		 worker_conn_open(struct wctx *);
void		 worker_conn_close(struct wctx *);

#endif
