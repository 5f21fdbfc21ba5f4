/*
 * supervise.h -- replica processes that ingressd spawns.
 *
 * Runs on the main thread.  Each spawn deployment gets N processes, each on
 * a unix socket the registry chose under the runtime directory (handed over
 * in INGRESSD_LISTEN, with INGRESSD_REPLICA_ID and INGRESSD_DEPLOYMENT).
 * A replica that dies is restarted with a growing backoff; its pid and
 * restart count are published in the registry.  Children get
 * PR_SET_PDEATHSIG so that they die with ingressd even on SIGKILL.
 *
 * On reload, supervise_apply() starts the replicas the new registry wants
 * and marks the others retired (with the reload's generation); once every
 * worker has switched to that generation, supervise_drain() lets each
 * retired replica finish its streams, then sends it SIGTERM (at the latest
 * after the drain timeout), and forgets it when it exits.
 */
#ifndef INGRESSD_SUPERVISE_H
#define INGRESSD_SUPERVISE_H

#include <stddef.h>

struct conf;
struct event_base;
struct registry;
struct supervise;

struct supervise *supervise_new(struct event_base *, struct registry *);
/* Can every spawn command of conf be found?  -1 and err (naming the key). */
int		 supervise_check(const struct conf *, char *err, size_t errlen);
/* Match the children to the registry's spawn deployments (conf has their
 * commands).  -1 and err when a process cannot be forked. */
int		 supervise_apply(struct supervise *, const struct conf *,
		    unsigned gen, char *err, size_t errlen);
/* Workers no longer use children retired at or before gen. */
void		 supervise_drain(struct supervise *, unsigned gen, double drain);
/* Children running now. */
unsigned	 supervise_running(const struct supervise *);
/* SIGTERM every child, wait up to grace seconds, SIGKILL the rest, remove
 * their sockets.  Blocking: called once at shutdown. */
void		 supervise_stop(struct supervise *, double grace);
void		 supervise_free(struct supervise *);

#endif
