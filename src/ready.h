/*
 * ready.h -- GET /-/ready: may a load balancer send traffic here?
 *
 * Ready means every deployment that a route names outright (not
 * deployment_from) and whose replicas the conf lists (spawn, endpoints)
 * can serve: a prewarm deployment once every worker holds a ready handle,
 * any other once some worker has a ready connection to one of its
 * replicas.  Names only known at run time (dns, registration, names taken
 * from the request) never hold readiness back.  With registry.etcd, not
 * ready until etcd's first list completed or the snapshot loaded (see
 * etcd.h).  See docs/operations.md.
 */
#ifndef INGRESSD_READY_H
#define INGRESSD_READY_H

#include <stddef.h>

struct worker;

/*
 * 1 if ready, else 0 with a one-line reason in why.  On the worker's
 * thread: a deployment not yet warm on it is warmed (as a first request
 * would), so a probe of a lazily connected deployment turns ready.
 */
int	ready_check(struct worker *, char *why, size_t whylen);

#endif
