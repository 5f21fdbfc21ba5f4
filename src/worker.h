/*
 * worker.h -- one thread with its own event_base, listeners, handles and
 * replica connections.  Workers share nothing on the hot path: the registry
 * (read at resolve time) and the immutable conf are all they see of the rest.
 */
#ifndef INGRESSD_WORKER_H
#define INGRESSD_WORKER_H

#include <stdint.h>

struct conf;
struct event_base;
struct handle_table;
struct registry;
struct route_table;
struct worker;

struct worker	*worker_new(unsigned id, const struct conf *,
		    struct registry *, const struct route_table *);
void		 worker_free(struct worker *);
/* Listen on fd (already bound); admin: the admin listener. */
int		 worker_add_listener(struct worker *, int fd, int admin);
int		 worker_start(struct worker *);
/* From another thread: stop the loop, then join. */
void		 worker_stop(struct worker *);
void		 worker_join(struct worker *);
/* Schedule fn(worker, arg) on the worker's own thread. */
void		 worker_post(struct worker *, void (*)(struct worker *, void *),
		    void *arg);

unsigned	 worker_id(const struct worker *);
struct event_base *worker_base(const struct worker *);
const struct conf *worker_conf(const struct worker *);
struct registry	*worker_registry(const struct worker *);
const struct route_table *worker_routes(const struct worker *);
struct handle_table *worker_handles(const struct worker *);
/* Per-worker slot for upstream.c's connection table. */
void		**worker_upstream_pool(struct worker *);
void		**worker_front_list(struct worker *);
uint32_t	*worker_rng(struct worker *);
/* A fresh request id (hex), unique across workers and restarts. */
void		 worker_request_id(struct worker *, char *buf, size_t len);
/* Connections: counted against limits.max_connections across workers. */
int		 worker_conn_open(struct worker *);
void		 worker_conn_close(struct worker *);

#endif
