/*
 * metrics.c -- per-worker counters, summed at scrape time (see metrics.h).
 *
 * A worker finds the series for a request through a small open-addressing
 * index it alone reads, keyed by the label values (truncated to
 * METRICS_LABEL_MAX - 1 bytes).  A new series is filled in first and then
 * published by a release store of the series count, so the scraper (worker
 * 0's thread, on the admin listener) reads only complete series.  Series
 * are never removed: Prometheus counters must not go backwards.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "etcd.h"
#include "metrics.h"
#include "registry.h"
#include "reqlog.h"
#include "tls.h"

#define METRICS_LABEL_MAX	128
#define METRICS_INDEX		(METRICS_MAX_SERIES * 2)	/* power of 2 */
#define METRICS_NCLASS		6	/* 1xx..5xx, none */
/* One counter per status code 100..599, then "none" (no response).
 * Untouched codes cost address space, not memory: the slots are
 * calloc'd and a page is backed only once a worker writes to it. */
#define METRICS_NCODES		501
/* gRPC status codes 0..16 (OK .. UNAUTHENTICATED). */
#define METRICS_NGRPC		17

/* Histogram bounds in seconds; a final +Inf bucket follows. */
static const double metrics_bounds[] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
	10, 30, 60,
};
#define METRICS_NBOUNDS	(sizeof(metrics_bounds) / sizeof(metrics_bounds[0]))

static const char *metrics_classes[METRICS_NCLASS] = {
	"1xx", "2xx", "3xx", "4xx", "5xx", "none",
};

struct metrics_hist {
	_Atomic uint64_t buckets[METRICS_NBOUNDS + 1];	/* not cumulative */
	_Atomic uint64_t sum_us;
};

struct metrics_series {
	char		 route[METRICS_LABEL_MAX];
	char		 deployment[METRICS_LABEL_MAX];
	_Atomic uint64_t requests[METRICS_NCODES];
	_Atomic uint64_t rejects[REJECT_N];
	_Atomic uint64_t grpc[METRICS_NGRPC];
	_Atomic uint64_t aborted;
	_Atomic uint64_t bytes_in;
	_Atomic uint64_t bytes_out;
	struct metrics_hist total;
	struct metrics_hist upstream;
};

struct metrics_slot {
	struct metrics_series series[METRICS_MAX_SERIES];
	_Atomic unsigned nseries;
	int16_t		 index[METRICS_INDEX];	/* owner only; -1: empty */
	/* The hash of each indexed series' labels: a probe compares labels
	 * only on a hash match, so past the cap (thousands of names going
	 * to "_other") it does not read the labels of every series it
	 * passes (each on its own cache line). */
	uint32_t	 ihash[METRICS_INDEX];	/* owner only */
	_Atomic uint64_t conns;
	_Atomic uint64_t evictions;
};

/* One series summed over the workers, for rendering. */
struct metrics_sum {
	const char	*route;
	const char	*deployment;
	uint64_t	 requests[METRICS_NCODES];
	uint64_t	 rejects[REJECT_N];
	uint64_t	 grpc[METRICS_NGRPC];
	uint64_t	 aborted, bytes_in, bytes_out;
	uint64_t	 total[METRICS_NBOUNDS + 1], total_sum_us;
	uint64_t	 upstream[METRICS_NBOUNDS + 1], upstream_sum_us;
};

static struct metrics_slot *metrics_slots;
static unsigned	 metrics_nworkers;
static char	 metrics_version[32];
static double	 metrics_started;
static _Atomic uint64_t metrics_reloads_ok, metrics_reloads_failed;
static _Atomic int metrics_last_reload_ok = 1;

/* The reason's metrics label ("queue_full" ...), "" for REJECT_NONE. */
static const char *
metrics_reject_label(enum reqlog_reject r)
{
	static const char *names[REJECT_N] = {
		[REJECT_NONE] = "", [REJECT_QUEUE_FULL] = "queue_full",
		[REJECT_QUEUE_TIMEOUT] = "queue_timeout",
		[REJECT_NO_REPLICA] = "no_replica",
		[REJECT_REPLICA_FAILED] = "replica_failed",
		[REJECT_DEADLINE] = "deadline",
	};

	return (unsigned)r < REJECT_N ? names[r] : "";
}

int
metrics_init(unsigned nworkers, const char *version)
{
	struct timeval tv;
	unsigned i;

	metrics_slots = calloc(nworkers, sizeof(*metrics_slots));
	if (metrics_slots == NULL)
		return -1;
	for (i = 0; i < nworkers; i++)
		memset(metrics_slots[i].index, 0xff,
		    sizeof(metrics_slots[i].index));
	metrics_nworkers = nworkers;
	snprintf(metrics_version, sizeof(metrics_version), "%s", version);
	gettimeofday(&tv, NULL);
	metrics_started = (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
	return 0;
}

void
metrics_free(void)
{
	free(metrics_slots);
	metrics_slots = NULL;
	metrics_nworkers = 0;
}

/* Only the owner writes a slot: a plain add published with a store. */
static void
metrics_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) +
	    n, memory_order_relaxed);
}

static uint64_t
metrics_get(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

struct metrics_slot *
metrics_slot(unsigned id)
{
	return metrics_slots != NULL && id < metrics_nworkers ?
	    &metrics_slots[id] : NULL;
}

/* Recording ------------------------------------------------------------ */

static uint32_t
metrics_hash(const char *route, const char *dep)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; route[i] != '\0' && i < METRICS_LABEL_MAX - 1; i++)
		h = (h ^ (unsigned char)route[i]) * 16777619u;
	h = (h ^ 0xff) * 16777619u;
	for (i = 0; dep[i] != '\0' && i < METRICS_LABEL_MAX - 1; i++)
		h = (h ^ (unsigned char)dep[i]) * 16777619u;
	return h;
}

/* Is the stored (truncated) label the same as s? */
static int
metrics_label_eq(const char *stored, const char *s)
{
	size_t n = strnlen(s, METRICS_LABEL_MAX - 1);

	return strncmp(stored, s, n) == 0 && stored[n] == '\0';
}

/*
 * The series for these labels, created if there is room; past the cap,
 * the last slot becomes the "_other" series.  No allocation: the slots
 * were allocated at start.
 */
static struct metrics_series *
metrics_series(struct metrics_slot *mw, const char *route, const char *dep)
{
	struct metrics_series *s;
	uint32_t hv = metrics_hash(route, dep), i = hv & (METRICS_INDEX - 1);
	unsigned n;
	int k;

	for (; (k = mw->index[i]) >= 0; i = (i + 1) & (METRICS_INDEX - 1)) {
		s = &mw->series[k];
		if (mw->ihash[i] == hv && metrics_label_eq(s->route, route) &&
		    metrics_label_eq(s->deployment, dep))
			return s;
	}
	n = atomic_load_explicit(&mw->nseries, memory_order_relaxed);
	if (n == METRICS_MAX_SERIES - 1) {
		memcpy(mw->series[n].route, "_other", 7);
		memcpy(mw->series[n].deployment, "_other", 7);
		/* Published once, never indexed: every overflow lands here. */
		atomic_store_explicit(&mw->nseries, n + 1, memory_order_release);
		return &mw->series[n];
	}
	if (n >= METRICS_MAX_SERIES)
		return &mw->series[METRICS_MAX_SERIES - 1];
	s = &mw->series[n];
	snprintf(s->route, sizeof(s->route), "%s", route);
	snprintf(s->deployment, sizeof(s->deployment), "%s", dep);
	mw->index[i] = (int16_t)n;
	mw->ihash[i] = hv;
	atomic_store_explicit(&mw->nseries, n + 1, memory_order_release);
	return s;
}

static void
metrics_observe(struct metrics_hist *h, double secs)
{
	unsigned i;

	if (secs < 0)
		secs = 0;
	for (i = 0; i < METRICS_NBOUNDS && secs > metrics_bounds[i]; i++)
		;
	metrics_add(&h->buckets[i], 1);
	metrics_add(&h->sum_us, (uint64_t)(secs * 1e6 + 0.5));
}

void
metrics_request(struct metrics_slot *mw, const struct reqlog *r)
{
	struct metrics_series *s;
	int code;

	if (mw == NULL)
		return;
	s = metrics_series(mw, r->route != NULL ? r->route : "",
	    r->deployment != NULL ? r->deployment : "");
	code = r->status >= 100 && r->status < 600 ? r->status - 100 :
	    METRICS_NCODES - 1;
	metrics_add(&s->requests[code], 1);
	if (r->reject != REJECT_NONE && (unsigned)r->reject < REJECT_N)
		metrics_add(&s->rejects[r->reject], 1);
	if (r->grpc && r->grpc_status >= 0 && r->grpc_status < METRICS_NGRPC)
		metrics_add(&s->grpc[r->grpc_status], 1);
	if (r->aborted)
		metrics_add(&s->aborted, 1);
	metrics_add(&s->bytes_in, r->bytes_in);
	metrics_add(&s->bytes_out, r->bytes_out);
	metrics_observe(&s->total, r->total_s);
	if (r->upstream_s >= 0)
		metrics_observe(&s->upstream, r->upstream_s);
}

void
metrics_conn_opened(struct metrics_slot *mw)
{
	if (mw != NULL)
		metrics_add(&mw->conns, 1);
}

void
metrics_handle_evicted(struct metrics_slot *mw)
{
	if (mw != NULL)
		metrics_add(&mw->evictions, 1);
}

void
metrics_reloaded(int ok)
{
	atomic_fetch_add(ok ? &metrics_reloads_ok : &metrics_reloads_failed, 1);
	atomic_store(&metrics_last_reload_ok, ok);
}

/* Rendering ------------------------------------------------------------ */

/* A label value: backslash, double quote and newline escaped. */
static void
metrics_label(FILE *fp, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(fp, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", fp);
		else
			fputc(*s, fp);
	}
}

static void
metrics_family(FILE *fp, const char *name, const char *type, const char *help)
{
	fprintf(fp, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{route="..",deployment=".."[,extra]} value */
static void
metrics_line(FILE *fp, const char *name, const struct metrics_sum *m,
    const char *extra, uint64_t v)
{
	fprintf(fp, "%s{route=\"", name);
	metrics_label(fp, m->route);
	fputs("\",deployment=\"", fp);
	metrics_label(fp, m->deployment);
	fprintf(fp, "\"%s%s} %llu\n", extra[0] ? "," : "", extra,
	    (unsigned long long)v);
}

static void
metrics_hist_lines(FILE *fp, const char *name, const struct metrics_sum *m,
    const uint64_t *b, uint64_t sum_us)
{
	char full[128], le[64];
	uint64_t cum = 0;
	unsigned i;

	snprintf(full, sizeof(full), "%s_bucket", name);
	for (i = 0; i <= METRICS_NBOUNDS; i++) {
		cum += b[i];
		if (i < METRICS_NBOUNDS)
			snprintf(le, sizeof(le), "le=\"%g\"", metrics_bounds[i]);
		else
			snprintf(le, sizeof(le), "le=\"+Inf\"");
		metrics_line(fp, full, m, le, cum);
	}
	fprintf(fp, "%s_sum{route=\"", name);
	metrics_label(fp, m->route);
	fputs("\",deployment=\"", fp);
	metrics_label(fp, m->deployment);
	fprintf(fp, "\"} %.6f\n", (double)sum_us / 1e6);
	snprintf(full, sizeof(full), "%s_count", name);
	metrics_line(fp, full, m, "", cum);
}

static int
metrics_series_cmp(const void *a, const void *b)
{
	const struct metrics_series *x = *(const struct metrics_series *const *)a;
	const struct metrics_series *y = *(const struct metrics_series *const *)b;
	int c = strcmp(x->route, y->route);

	return c != 0 ? c : strcmp(x->deployment, y->deployment);
}

static void
metrics_sum_add(struct metrics_sum *m, struct metrics_series *s)
{
	unsigned i;

	for (i = 0; i < METRICS_NCODES; i++)
		m->requests[i] += metrics_get(&s->requests[i]);
	for (i = 0; i < REJECT_N; i++)
		m->rejects[i] += metrics_get(&s->rejects[i]);
	for (i = 0; i < METRICS_NGRPC; i++)
		m->grpc[i] += metrics_get(&s->grpc[i]);
	m->aborted += metrics_get(&s->aborted);
	m->bytes_in += metrics_get(&s->bytes_in);
	m->bytes_out += metrics_get(&s->bytes_out);
	for (i = 0; i <= METRICS_NBOUNDS; i++) {
		m->total[i] += metrics_get(&s->total.buckets[i]);
		m->upstream[i] += metrics_get(&s->upstream.buckets[i]);
	}
	m->total_sum_us += metrics_get(&s->total.sum_us);
	m->upstream_sum_us += metrics_get(&s->upstream.sum_us);
}

/* Every worker's series, summed by label set, sorted. */
static struct metrics_sum *
metrics_collect(unsigned *nout)
{
	struct metrics_series **all;
	struct metrics_sum *sums;
	unsigned w, i, n = 0, k = 0, ns;

	*nout = 0;
	all = calloc((size_t)metrics_nworkers * METRICS_MAX_SERIES + 1,
	    sizeof(*all));
	if (all == NULL)
		return NULL;
	for (w = 0; w < metrics_nworkers; w++) {
		ns = atomic_load_explicit(&metrics_slots[w].nseries,
		    memory_order_acquire);
		for (i = 0; i < ns && i < METRICS_MAX_SERIES; i++)
			all[n++] = &metrics_slots[w].series[i];
	}
	qsort(all, n, sizeof(*all), metrics_series_cmp);
	if ((sums = calloc(n + 1, sizeof(*sums))) == NULL) {
		free(all);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (k == 0 || metrics_series_cmp(&all[i - 1], &all[i]) != 0) {
			sums[k].route = all[i]->route;
			sums[k++].deployment = all[i]->deployment;
		}
		metrics_sum_add(&sums[k - 1], all[i]);
	}
	free(all);
	*nout = k;
	return sums;
}

/* gRPC calls by the grpc-status the client was sent (HTTP/2 edge). */
static void
metrics_render_grpc(FILE *fp, const struct metrics_sum *m, unsigned n)
{
	static const char *names[METRICS_NGRPC] = {
		"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
		"DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
		"PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
		"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
		"UNAUTHENTICATED",
	};
	unsigned i, c;
	char lbl[64];

	metrics_family(fp, "ingressd_grpc_calls_total", "counter",
	    "gRPC calls answered, by route, deployment and grpc-status.");
	for (i = 0; i < n; i++) {
		for (c = 0; c < METRICS_NGRPC; c++) {
			if (m[i].grpc[c] == 0)
				continue;
			snprintf(lbl, sizeof(lbl), "grpc_code=\"%s\"", names[c]);
			metrics_line(fp, "ingressd_grpc_calls_total", &m[i], lbl,
			    m[i].grpc[c]);
		}
	}
}

static void
metrics_render_requests(FILE *fp)
{
	struct metrics_sum *m;
	unsigned i, c, n;
	char cls[64];

	if ((m = metrics_collect(&n)) == NULL)
		return;
	metrics_family(fp, "ingressd_requests_total", "counter",
	    "Requests answered, by route, deployment, status code and class.");
	for (i = 0; i < n; i++) {
		for (c = 0; c < METRICS_NCODES; c++) {
			if (m[i].requests[c] == 0)
				continue;
			if (c == METRICS_NCODES - 1)
				snprintf(cls, sizeof(cls), "code=\"none\","
				    "status_class=\"%s\"",
				    metrics_classes[METRICS_NCLASS - 1]);
			else
				snprintf(cls, sizeof(cls), "code=\"%u\","
				    "status_class=\"%s\"", c + 100,
				    metrics_classes[c / 100]);
			metrics_line(fp, "ingressd_requests_total", &m[i], cls,
			    m[i].requests[c]);
		}
	}
	metrics_family(fp, "ingressd_rejections_total", "counter",
	    "Requests ingressd answered itself with 502, 503 or 504, by "
	    "reason.");
	for (i = 0; i < n; i++) {
		for (c = 1; c < REJECT_N; c++) {
			if (m[i].rejects[c] == 0)
				continue;
			snprintf(cls, sizeof(cls), "reason=\"%s\"",
			    metrics_reject_label((enum reqlog_reject)c));
			metrics_line(fp, "ingressd_rejections_total", &m[i],
			    cls, m[i].rejects[c]);
		}
	}
	metrics_render_grpc(fp, m, n);
	metrics_family(fp, "ingressd_requests_aborted_total", "counter",
	    "Requests whose client went away before the response ended.");
	for (i = 0; i < n; i++)
		metrics_line(fp, "ingressd_requests_aborted_total", &m[i], "",
		    m[i].aborted);
	metrics_family(fp, "ingressd_request_body_bytes_total", "counter",
	    "Request body bytes read from clients.");
	for (i = 0; i < n; i++)
		metrics_line(fp, "ingressd_request_body_bytes_total", &m[i], "",
		    m[i].bytes_in);
	metrics_family(fp, "ingressd_response_bytes_total", "counter",
	    "Response bytes (head and body) written to clients.");
	for (i = 0; i < n; i++)
		metrics_line(fp, "ingressd_response_bytes_total", &m[i], "",
		    m[i].bytes_out);
	metrics_family(fp, "ingressd_request_duration_seconds", "histogram",
	    "From the request head to the end of the response.");
	for (i = 0; i < n; i++)
		metrics_hist_lines(fp, "ingressd_request_duration_seconds",
		    &m[i], m[i].total, m[i].total_sum_us);
	metrics_family(fp, "ingressd_upstream_duration_seconds", "histogram",
	    "From sending the request to a replica to the end of its "
	    "response.");
	for (i = 0; i < n; i++) {
		uint64_t cnt = 0;

		for (c = 0; c <= METRICS_NBOUNDS; c++)
			cnt += m[i].upstream[c];
		if (cnt > 0)
			metrics_hist_lines(fp,
			    "ingressd_upstream_duration_seconds", &m[i],
			    m[i].upstream, m[i].upstream_sum_us);
	}
	free(m);
}

/*
 * The registry's figures (registry_figures) as families of lines.  The
 * registry is walked once, under its mutex; each family's lines go to a
 * buffer of their own, since a family's lines must stay together.
 */
enum metrics_rfam {
	MR_QUEUE, MR_HANDLES, MR_RESOLUTIONS, MR_UP, MR_IN_FLIGHT,
	MR_REQUESTS, MR_PINGS, MR_PONGS, MR_MISSED, MR_RESTARTS, MR_HEALTH,
	MR_CONNS, MR_N
};

static const struct {
	const char	*name, *type, *help;
} metrics_rfams[MR_N] = {
	[MR_QUEUE] = { "ingressd_deployment_queue_depth", "gauge",
	    "Requests waiting for a free replica." },
	[MR_HANDLES] = { "ingressd_deployment_handles", "gauge",
	    "Workers holding a handle for the deployment, by handle state." },
	[MR_RESOLUTIONS] = { "ingressd_deployment_resolutions_total",
	    "counter", "Registry lookups made by handles for the deployment." },
	[MR_UP] = { "ingressd_replica_up", "gauge",
	    "1 if a worker has a ready connection to the replica." },
	[MR_IN_FLIGHT] = { "ingressd_replica_in_flight", "gauge",
	    "Requests running on the replica." },
	[MR_REQUESTS] = { "ingressd_replica_requests_total", "counter",
	    "Requests sent to the replica." },
	[MR_PINGS] = { "ingressd_replica_pings_total", "counter",
	    "PINGs sent to the replica." },
	[MR_PONGS] = { "ingressd_replica_pongs_total", "counter",
	    "PONGs received from the replica." },
	[MR_MISSED] = { "ingressd_replica_missed_pongs_total", "counter",
	    "Ping intervals that ended without the PONG." },
	[MR_RESTARTS] = { "ingressd_replica_restarts_total", "counter",
	    "Times a spawned replica was restarted." },
	[MR_HEALTH] = { "ingressd_replica_health_checks_total", "counter",
	    "Active health checks of an HTTP replica, by result." },
	[MR_CONNS] = { "ingressd_replica_connections", "gauge",
	    "Keep-alive connections to an HTTP replica: open, and idle." },
};

struct metrics_rbuf {
	FILE		*fp[MR_N];
	char		*buf[MR_N];
	size_t		 len[MR_N];
};

/* name{deployment="..",replica=".."} value for one figure of a replica. */
static void
metrics_replica_line(struct metrics_rbuf *rb, enum metrics_rfam fam,
    const char *dep, const char *id, unsigned long long v)
{
	FILE *fp = rb->fp[fam];

	fprintf(fp, "%s{deployment=\"%s\",replica=\"", metrics_rfams[fam].name,
	    dep);
	metrics_label(fp, id);
	fprintf(fp, "\"} %llu\n", v);
}

/* One figure with a third label (result=, state=). */
static void
metrics_replica_line2(struct metrics_rbuf *rb, enum metrics_rfam fam,
    const char *dep, const char *id, const char *label,
    unsigned long long v)
{
	FILE *fp = rb->fp[fam];

	fprintf(fp, "%s{deployment=\"%s\",replica=\"", metrics_rfams[fam].name,
	    dep);
	metrics_label(fp, id);
	fprintf(fp, "\",%s} %llu\n", label, v);
}

static void
metrics_render_http(struct metrics_rbuf *rb, const char *dep,
    const struct reg_replica_figures *f)
{
	metrics_replica_line2(rb, MR_HEALTH, dep, f->id, "result=\"passed\"",
	    f->health_passed);
	metrics_replica_line2(rb, MR_HEALTH, dep, f->id, "result=\"failed\"",
	    f->health_failed);
	metrics_replica_line2(rb, MR_CONNS, dep, f->id, "state=\"open\"",
	    f->conns_open);
	metrics_replica_line2(rb, MR_CONNS, dep, f->id, "state=\"idle\"",
	    f->conns_idle);
}

/* TLS handshakes on the listeners and toward replicas (tls.c's counts). */
static void
metrics_render_tls(FILE *fp)
{
	struct tls_stats st;
	unsigned i;

	tls_stats(&st);
	metrics_family(fp, "ingressd_tls_handshakes_total", "counter",
	    "TLS handshakes completed, by protocol version.");
	fprintf(fp, "ingressd_tls_handshakes_total{version=\"TLSv1.2\"} %llu\n"
	    "ingressd_tls_handshakes_total{version=\"TLSv1.3\"} %llu\n",
	    (unsigned long long)st.handshakes[0],
	    (unsigned long long)st.handshakes[1]);
	metrics_family(fp, "ingressd_tls_handshakes_resumed_total", "counter",
	    "TLS handshakes that resumed a session (ticket).");
	fprintf(fp, "ingressd_tls_handshakes_resumed_total %llu\n",
	    (unsigned long long)st.resumed);
	metrics_family(fp, "ingressd_tls_handshake_failures_total", "counter",
	    "TLS handshakes that failed, by reason.");
	for (i = 0; i < TLS_FAIL_N; i++)
		fprintf(fp, "ingressd_tls_handshake_failures_total{reason="
		    "\"%s\"} %llu\n", tls_fail_name((enum tls_fail)i),
		    (unsigned long long)st.failed[i]);
	metrics_family(fp, "ingressd_tls_handshakes_by_cipher_total", "counter",
	    "TLS handshakes completed, by cipher.");
	for (i = 0; i < TLS_MAX_CIPHERS && st.ciphers[i] != NULL; i++)
		fprintf(fp, "ingressd_tls_handshakes_by_cipher_total{cipher="
		    "\"%s\"} %llu\n", st.ciphers[i],
		    (unsigned long long)st.by_cipher[i]);
	metrics_family(fp, "ingressd_tls_reloads_refused_total", "counter",
	    "Reloads refused for a TLS certificate, key or setting.");
	fprintf(fp, "ingressd_tls_reloads_refused_total %llu\n",
	    (unsigned long long)st.reloads_refused);
}

static void
metrics_render_replica(struct metrics_rbuf *rb, const char *dep,
    const struct reg_replica_figures *f)
{
	metrics_replica_line(rb, MR_UP, dep, f->id, f->state == REG_E_READY);
	metrics_replica_line(rb, MR_IN_FLIGHT, dep, f->id, f->in_flight);
	metrics_replica_line(rb, MR_REQUESTS, dep, f->id, f->requests);
	metrics_replica_line(rb, MR_PINGS, dep, f->id, f->pings);
	metrics_replica_line(rb, MR_PONGS, dep, f->id, f->pongs);
	metrics_replica_line(rb, MR_MISSED, dep, f->id, f->missed_pongs);
	if (f->spawned)
		metrics_replica_line(rb, MR_RESTARTS, dep, f->id, f->restarts);
	if (strcmp(f->protocol, "http") == 0)
		metrics_render_http(rb, dep, f);
}

static void
metrics_render_deployment(void *arg, const struct reg_figures *f)
{
	static const enum reg_hstate states[] = {
		REG_H_RESOLVING, REG_H_WARMING, REG_H_READY, REG_H_FAILED,
	};
	struct metrics_rbuf *rb = arg;
	unsigned i;

	fprintf(rb->fp[MR_QUEUE], "%s{deployment=\"%s\"} %u\n",
	    metrics_rfams[MR_QUEUE].name, f->name, f->queued);
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		fprintf(rb->fp[MR_HANDLES], "%s{deployment=\"%s\","
		    "state=\"%s\"} %u\n", metrics_rfams[MR_HANDLES].name,
		    f->name, registry_hstate_str(states[i]),
		    f->handles[states[i]]);
	fprintf(rb->fp[MR_RESOLUTIONS], "%s{deployment=\"%s\"} %llu\n",
	    metrics_rfams[MR_RESOLUTIONS].name, f->name,
	    (unsigned long long)f->resolutions);
	for (i = 0; i < f->nreplicas; i++)
		metrics_render_replica(rb, f->name, &f->replicas[i]);
}

static void
metrics_render_registry(FILE *fp, struct registry *reg)
{
	struct metrics_rbuf rb;
	int i, ok = 1;

	memset(&rb, 0, sizeof(rb));
	for (i = 0; i < MR_N; i++) {
		if ((rb.fp[i] = open_memstream(&rb.buf[i], &rb.len[i])) == NULL)
			ok = 0;
	}
	if (ok)
		ok = registry_figures(reg, NULL, metrics_render_deployment,
		    &rb) != -1;
	for (i = 0; i < MR_N; i++) {
		if (rb.fp[i] != NULL && fclose(rb.fp[i]) != 0)
			ok = 0;
	}
	for (i = 0; i < MR_N; i++) {
		if (ok) {
			metrics_family(fp, metrics_rfams[i].name,
			    metrics_rfams[i].type, metrics_rfams[i].help);
			fwrite(rb.buf[i], 1, rb.len[i], fp);
		}
		free(rb.buf[i]);
	}
}

static void
metrics_render_process(FILE *fp, unsigned nconns)
{
	uint64_t conns = 0, evictions = 0;
	unsigned w;

	for (w = 0; w < metrics_nworkers; w++) {
		conns += metrics_get(&metrics_slots[w].conns);
		evictions += metrics_get(&metrics_slots[w].evictions);
	}
	metrics_family(fp, "ingressd_build_info", "gauge",
	    "The running version.");
	fprintf(fp, "ingressd_build_info{version=\"%s\"} 1\n", metrics_version);
	metrics_family(fp, "process_start_time_seconds", "gauge",
	    "Start time of the process since the epoch.");
	fprintf(fp, "process_start_time_seconds %.3f\n", metrics_started);
	metrics_family(fp, "ingressd_workers", "gauge", "Worker threads.");
	fprintf(fp, "ingressd_workers %u\n", metrics_nworkers);
	metrics_family(fp, "ingressd_config_reloads_total", "counter",
	    "Reloads (SIGHUP), by result.");
	fprintf(fp, "ingressd_config_reloads_total{result=\"success\"} %llu\n"
	    "ingressd_config_reloads_total{result=\"failure\"} %llu\n",
	    (unsigned long long)atomic_load(&metrics_reloads_ok),
	    (unsigned long long)atomic_load(&metrics_reloads_failed));
	metrics_family(fp, "ingressd_config_last_reload_successful", "gauge",
	    "0 if the last reload was refused (the old conf still runs).");
	fprintf(fp, "ingressd_config_last_reload_successful %d\n",
	    atomic_load(&metrics_last_reload_ok));
	metrics_family(fp, "ingressd_connections", "gauge",
	    "Client connections open.");
	fprintf(fp, "ingressd_connections %u\n", nconns);
	metrics_render_tls(fp);
	metrics_family(fp, "ingressd_connections_accepted_total", "counter",
	    "Client connections accepted.");
	fprintf(fp, "ingressd_connections_accepted_total %llu\n",
	    (unsigned long long)conns);
	metrics_family(fp, "ingressd_handle_evictions_total", "counter",
	    "Handles dropped: idle past handle_idle_ttl, or deployment removed.");
	fprintf(fp, "ingressd_handle_evictions_total %llu\n",
	    (unsigned long long)evictions);
}

char *
metrics_render(struct registry *reg, unsigned nconns, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *fp;

	if (metrics_slots == NULL || (fp = open_memstream(&buf, &n)) == NULL)
		return NULL;
	metrics_render_process(fp, nconns);
	metrics_render_requests(fp);
	metrics_render_registry(fp, reg);
	etcd_metrics_render(fp);
	if (fclose(fp) != 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}
