/*
 * arena.h -- a growable buffer of NUL-terminated strings built from spans
 * that may arrive split (a parser hands out pieces).  Items are addressed
 * by offset: offsets stay valid as the arena grows, pointers (buf + off)
 * only until the next add.  Pure; a value embedded in its owner, which
 * reads buf and len directly.
 */
#ifndef INGRESSD_ARENA_H
#define INGRESSD_ARENA_H

#include <stddef.h>

struct arena {
	char		*buf;
	size_t		 len;
	size_t		 cap;
	int		 in_span;	/* an item is being accumulated */
};

/* Each returns 0, or -1 when out of memory. */
/* Room for n more bytes; pointers into the arena are void after it. */
int	 arena_reserve(struct arena *, size_t n);
int	 arena_add(struct arena *, const void *, size_t n);
/* Append a span of the current item, setting *start when it begins. */
int	 arena_span(struct arena *, size_t *start, const void *, size_t n);
/* End the current item with a NUL (even if no span came for it). */
int	 arena_close(struct arena *, size_t *start);
/* The same, spaces and tabs trimmed from both ends of the item. */
int	 arena_close_trim(struct arena *, size_t *start);
/* Empty it for the next message, keeping the memory. */
void	 arena_reset(struct arena *);
void	 arena_free(struct arena *);

#endif
