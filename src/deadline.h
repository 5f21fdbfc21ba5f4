/*
 * deadline.h -- a deadline that is cheap to move.
 *
 * Requests push their deadlines forward on every piece of progress; doing
 * that with event_add() each time costs a heap update per event.  A
 * deadline instead remembers when it is due and keeps its libevent timer
 * at the earliest time it may be due: moving it later touches only a
 * double, and when the timer fires early the callback re-arms it for the
 * rest (deadline_expired() says which).  One event per object, embedded,
 * in the worker's one timer heap.
 */
#ifndef INGRESSD_DEADLINE_H
#define INGRESSD_DEADLINE_H

#include <event2/event.h>
#include <event2/event_struct.h>

struct deadline {
	struct event	 ev;
	struct event_base *base;
	double		 due;		/* 0: not set */
	double		 armed;		/* when ev fires; 0: not armed */
};

void	deadline_init(struct deadline *, struct event_base *,
	    event_callback_fn, void *arg);
/* Due in secs from now (replaces any earlier setting). */
void	deadline_set(struct deadline *, double secs);
void	deadline_clear(struct deadline *);
/* In the callback: 1 if the deadline really passed; else 0 (re-armed). */
int	deadline_expired(struct deadline *);
/* Before freeing the object that embeds it. */
void	deadline_del(struct deadline *);

#endif
