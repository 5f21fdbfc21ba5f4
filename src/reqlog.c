/*
 * reqlog.c -- one finished request, to the access log and the metrics.
 */
#include "accesslog.h"
#include "metrics.h"
#include "reqlog.h"

const char *
reqlog_reject_str(enum reqlog_reject r)
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

void
reqlog_done(struct worker *w, const struct reqlog *r)
{
	metrics_request(w, r);
	accesslog_write(w, r);
}
