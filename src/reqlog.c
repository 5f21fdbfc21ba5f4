/*
 * reqlog.c -- one finished request, to the access log and metrics.
 */
#include "log.h"
#include "reqlog.h"
#include "worker.h"

void
reqlog_done(struct worker *w, const struct reqlog *r)
{
	if (log_verbose < LOG_LEVEL_DEBUG)
		return;
	log_debug("access: %s \"%s %.*s HTTP/1.%d\" %d %llu %s %s %.6f",
	    r->peer, r->method ? r->method : "-",
	    r->method ? (int)r->target_len : 1, r->method ? r->target : "-",
	    r->minor, r->status, (unsigned long long)r->bytes_out,
	    r->deployment ? r->deployment : "-",
	    r->replica ? r->replica : "-", r->total_s);
}
