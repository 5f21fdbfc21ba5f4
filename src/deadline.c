/*
 * deadline.c -- lazily re-armed deadlines (see deadline.h).
 */
#include "deadline.h"

/* Slack for timers that fire a hair early. */
#define DEADLINE_SLACK	0.0005

static double
deadline_now(struct event_base *base)
{
	struct timeval tv;

	event_base_gettimeofday_cached(base, &tv);
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void
deadline_arm(struct deadline *d, double now, double at)
{
	struct timeval tv;
	double secs = at - now;

	if (secs < 0)
		secs = 0;
	tv.tv_sec = (time_t)secs;
	tv.tv_usec = (suseconds_t)((secs - (double)tv.tv_sec) * 1e6);
	evtimer_add(&d->ev, &tv);
	d->armed = at;
}

void
deadline_init(struct deadline *d, struct event_base *base,
    event_callback_fn cb, void *arg)
{
	evtimer_assign(&d->ev, base, cb, arg);
	d->base = base;
	d->due = 0;
	d->armed = 0;
}

void
deadline_set(struct deadline *d, double secs)
{
	double now = deadline_now(d->base);

	d->due = now + secs;
	/* Only an earlier time needs the heap; a later one waits for the
	 * timer to fire and re-arm. */
	if (d->armed == 0 || d->due < d->armed)
		deadline_arm(d, now, d->due);
}

void
deadline_clear(struct deadline *d)
{
	d->due = 0;
}

int
deadline_expired(struct deadline *d)
{
	double now = deadline_now(d->base);

	d->armed = 0;
	if (d->due == 0)
		return 0;
	if (now + DEADLINE_SLACK < d->due) {
		deadline_arm(d, now, d->due);
		return 0;
	}
	d->due = 0;
	return 1;
}

void
deadline_del(struct deadline *d)
{
	evtimer_del(&d->ev);
	d->armed = 0;
	d->due = 0;
}
