/*
 * idtab.h -- a table from a stream id to a pointer: the streams of one
 * wire connection, on both sides (upstream.c in ingressd, conn.c in the
 * replica library).
 *
 * Open addressing with linear probing on a Fibonacci hash of the id, at
 * most half full, so a lookup is one or two probes whatever ids the peer
 * picks; deletion shifts the probe run back instead of leaving tombstones,
 * so a connection that lives for millions of streams never needs a
 * rehash.  The table grows (doubles) and never shrinks.
 *
 * The struct is declared here only so that a connection can embed it:
 * its fields are private.  A zeroed struct is an empty table; nothing is
 * allocated until the first idtab_put() or idtab_reserve().  Pure: no
 * I/O, no logging, no libevent.
 */
#ifndef INGRESSD_IDTAB_H
#define INGRESSD_IDTAB_H

#include <stddef.h>
#include <stdint.h>

struct idtab_slot;

struct idtab {
	struct idtab_slot *slots;
	size_t		 size;		/* slots: zero or a power of two */
	size_t		 count;
	size_t		 cursor;	/* where idtab_pop() looks first */
	unsigned	 shift;		/* 64 - log2(size), for the hash */
};

/* Room for n entries in all: the next puts up to n cannot fail. */
int	 idtab_reserve(struct idtab *, size_t n);
/* val must not be NULL and id must not be in the table; -1: no memory. */
int	 idtab_put(struct idtab *, uint32_t id, void *val);
void	*idtab_get(const struct idtab *, uint32_t id);
/* Removes id; returns its value, or NULL when it was not there. */
void	*idtab_del(struct idtab *, uint32_t id);
/*
 * Removes and returns some entry (its id in *id unless NULL), or NULL when
 * the table is empty.  Emptying a table by popping costs O(size) in all,
 * even while the callers delete other entries between pops.
 */
void	*idtab_pop(struct idtab *, uint32_t *id);
size_t	 idtab_count(const struct idtab *);
/* Frees the slots; the table is empty (and usable) again. */
void	 idtab_clear(struct idtab *);

#endif
