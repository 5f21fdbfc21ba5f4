/*
 * metrics.h -- counters and histograms for GET /-/metrics (Prometheus text
 * exposition format 0.0.4).
 *
 * Request figures are kept per worker, each slot written only by its
 * worker with relaxed atomic stores (no lock, no read-modify-write, no
 * allocation on the request path) and summed when the page is rendered.
 * Series are keyed by route prefix and deployment name, both taken from
 * the conf; a worker keeps at most METRICS_MAX_SERIES of them, and
 * requests beyond that are counted under route="_other".  Replica and
 * deployment figures come from the registry's own per-worker slots.
 */
#ifndef INGRESSD_METRICS_H
#define INGRESSD_METRICS_H

#include <stddef.h>

#define METRICS_MAX_SERIES	256

struct registry;
struct reqlog;
struct metrics_slot;

/* Main thread, before the workers start. */
int	 metrics_init(unsigned nworkers, const char *version);
void	 metrics_free(void);
/* Main thread, after metrics_init(): worker id's slot, or NULL.  The
 * worker keeps it in its context (wctx.h). */
struct metrics_slot *metrics_slot(unsigned id);
/* Worker threads, each with its own slot (NULL: not counted). */
void	 metrics_request(struct metrics_slot *, const struct reqlog *);
void	 metrics_conn_opened(struct metrics_slot *);
void	 metrics_handle_evicted(struct metrics_slot *);
/* Main thread: a reload finished (ok) or was refused. */
void	 metrics_reloaded(int ok);
/* Any thread: the page, malloc'd (caller frees), or NULL; nconns: the
 * client connections open now (worker_conns()). */
char	*metrics_render(struct registry *, unsigned nconns, size_t *len);

#endif
