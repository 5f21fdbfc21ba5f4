/*
 * etcd.h -- registry.etcd: the fleet's registry, followed from etcd.
 *
 * Every key PREFIX/deployments/NAME/replicas/ID (a JSON value {"address",
 * "max_ongoing_requests", "protocol"}) is a registered replica of NAME.
 * One watch per instance, on the main thread's loop, over etcd's v3 JSON
 * gateway: list the prefix (paged, pinned to the first page's revision),
 * then watch from the next revision with progress notifications.  Every
 * change goes through registry_register/registry_unregister, the path the
 * admin API takes, so workers see one change per name, pushed.
 *
 * Faults: a failed list or watch keeps the last known set and reconnects
 * to the next endpoint after a backoff with jitter, resuming the watch
 * from the last revision received on a stream (an event's mod_revision or
 * a progress notification's header; never the "created" header, which may
 * be ahead of what was sent).  A watch cancelled because its revision was
 * compacted lists again and diffs: only names whose replicas changed are
 * bumped.  Nothing heard for watch_timeout (no event, no progress) means
 * a dead watch: reconnect.  The last known set goes to the snapshot file
 * (written whole, renamed into place) and is loaded at start, so an
 * instance restarted while etcd is down still serves.
 *
 * Ready (/-/ready) once the first list completed or the snapshot loaded;
 * it stays ready while etcd is away (it serves the last known set).
 */
#ifndef INGRESSD_ETCD_H
#define INGRESSD_ETCD_H

#include <stddef.h>
#include <stdio.h>

struct conf_etcd;
struct etcd;
struct event_base;
struct registry;

/* Load the snapshot (if any) into the registry and start listing. */
struct etcd	*etcd_new(struct event_base *, struct registry *,
		    const struct conf_etcd *, char *err, size_t errlen);
/* After the main loop stopped: writes a pending snapshot. */
void		 etcd_free(struct etcd *);

/* Any thread: is registry.etcd on, and has a full set arrived? */
int		 etcd_enabled(void);
int		 etcd_in_sync(void);
/* Any thread: the ingressd_etcd_* families of /metrics. */
void		 etcd_metrics_render(FILE *);

#endif
