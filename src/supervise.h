/*
 * supervise.h -- replica processes that ingressd spawns.
 *
 * Runs on the main thread.  Each spawn deployment gets N processes, each on
 * a unix socket ingressd chooses under the runtime directory (handed over
 * in INGRESSD_LISTEN, with INGRESSD_REPLICA_ID and INGRESSD_DEPLOYMENT).
 * A replica that dies is restarted with a growing backoff; its pid and
 * restart count are published in the registry.  Children get
 * PR_SET_PDEATHSIG so that they die with ingressd even on SIGKILL.
 */
#ifndef INGRESSD_SUPERVISE_H
#define INGRESSD_SUPERVISE_H

#include <stddef.h>

struct conf;
struct event_base;
struct registry;
struct supervise;

struct supervise *supervise_new(struct event_base *, const struct conf *,
		    struct registry *, char *err, size_t errlen);
/* Start every replica; -1 (and err) if one cannot be started at all. */
int		 supervise_start(struct supervise *, char *err, size_t errlen);
/* SIGTERM every child, wait up to grace seconds, SIGKILL the rest, remove
 * their sockets.  Blocking: called once at shutdown. */
void		 supervise_stop(struct supervise *, double grace);
void		 supervise_free(struct supervise *);

#endif
