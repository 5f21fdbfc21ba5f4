/*
 * etcd_stats.h -- what the etcd watch (etcd.c, the main thread) publishes
 * for /metrics and /-/ready, read from any thread (etcd_stats.c).  Private
 * to registry.etcd.
 */
#ifndef INGRESSD_ETCD_STATS_H
#define INGRESSD_ETCD_STATS_H

#include <stdatomic.h>
#include <stdint.h>

struct etcd_stats {
	_Atomic int	 on, synced, watch_up;
	_Atomic int64_t	 revision;
	_Atomic uint64_t heard_ms;	/* monotime (ms) of the last message */
	_Atomic uint64_t reconnects, relists, events;
};

extern struct etcd_stats etcd_stats;

#endif
