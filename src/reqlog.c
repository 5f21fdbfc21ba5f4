/*
 * reqlog.c -- one finished request, to the access log and the metrics.
 */
#include "accesslog.h"
#include "metrics.h"
#include "reqlog.h"

void
reqlog_done(struct worker *w, const struct reqlog *r)
{
	metrics_request(w, r);
	accesslog_write(w, r);
}
