/*
 * monotime.h -- seconds on the monotonic clock, as a double.
 *
 * For intervals that must not jump with the wall clock: restart backoff,
 * stop deadlines, idle TTLs.  Event-loop timers use deadline.h instead.
 */
#ifndef INGRESSD_MONOTIME_H
#define INGRESSD_MONOTIME_H

double	monotime_now(void);
/* CLOCK_MONOTONIC_COARSE: a tick's resolution, and no system call. */
double	monotime_coarse(void);

#endif
