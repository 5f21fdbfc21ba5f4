/*
 * etcd_stats.c -- registry.etcd's figures, from any thread: readiness
 * (etcd.h: etcd_enabled, etcd_in_sync) and the ingressd_etcd_* families of
 * /metrics.  etcd.c writes them (etcd_stats.h).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "etcd.h"
#include "etcd_stats.h"
#include "monotime.h"

struct etcd_stats etcd_stats;

int
etcd_enabled(void)
{
	return atomic_load(&etcd_stats.on);
}

int
etcd_in_sync(void)
{
	return atomic_load(&etcd_stats.synced);
}

static void
etcd_family(FILE *fp, const char *name, const char *type, const char *help)
{
	fprintf(fp, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void
etcd_metrics_render(FILE *fp)
{
	if (!etcd_enabled())
		return;
	etcd_family(fp, "ingressd_etcd_revision", "gauge",
	    "Last etcd revision received on the watch (or listed).");
	fprintf(fp, "ingressd_etcd_revision %lld\n",
	    (long long)atomic_load(&etcd_stats.revision));
	etcd_family(fp, "ingressd_etcd_last_heard_seconds", "gauge",
	    "Seconds since the last watch event or progress notification.");
	fprintf(fp, "ingressd_etcd_last_heard_seconds %.3f\n",
	    monotime_now() - (double)atomic_load(&etcd_stats.heard_ms) / 1000.0);
	etcd_family(fp, "ingressd_etcd_watch_up", "gauge",
	    "1 while a watch stream is open.");
	fprintf(fp, "ingressd_etcd_watch_up %d\n", atomic_load(&etcd_stats.watch_up));
	etcd_family(fp, "ingressd_etcd_in_sync", "gauge",
	    "1 once a list completed or the snapshot was loaded.");
	fprintf(fp, "ingressd_etcd_in_sync %d\n", atomic_load(&etcd_stats.synced));
	etcd_family(fp, "ingressd_etcd_reconnects_total", "counter",
	    "Sessions started again after a failure or a compaction.");
	fprintf(fp, "ingressd_etcd_reconnects_total %llu\n",
	    (unsigned long long)atomic_load(&etcd_stats.reconnects));
	etcd_family(fp, "ingressd_etcd_relists_total", "counter",
	    "Full lists after the first (compaction, or a list interrupted).");
	fprintf(fp, "ingressd_etcd_relists_total %llu\n",
	    (unsigned long long)atomic_load(&etcd_stats.relists));
	etcd_family(fp, "ingressd_etcd_events_total", "counter",
	    "Watch events applied.");
	fprintf(fp, "ingressd_etcd_events_total %llu\n",
	    (unsigned long long)atomic_load(&etcd_stats.events));
}
