/*
 * monotime.c -- seconds on the monotonic clock (see monotime.h).
 */
#include <time.h>

#include "monotime.h"

static double
monotime_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double
monotime_now(void)
{
	return monotime_of(CLOCK_MONOTONIC);
}

double
monotime_coarse(void)
{
	return monotime_of(CLOCK_MONOTONIC_COARSE);
}
