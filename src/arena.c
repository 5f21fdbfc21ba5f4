/*
 * arena.c -- a growable buffer of NUL-terminated strings (see arena.h).
 */
#include <stdlib.h>
#include <string.h>

#include "arena.h"

#define ARENA_MIN	512

int
arena_reserve(struct arena *a, size_t n)
{
	size_t	 cap;
	char	*b;

	if (n > a->cap - a->len) {
		cap = a->cap != 0 ? a->cap : ARENA_MIN;
		while (cap - a->len < n)
			cap *= 2;
		if ((b = realloc(a->buf, cap)) == NULL)
			return -1;
		a->buf = b;
		a->cap = cap;
	}
	return 0;
}

int
arena_add(struct arena *a, const void *p, size_t n)
{
	if (arena_reserve(a, n) == -1)
		return -1;
	memcpy(a->buf + a->len, p, n);
	a->len += n;
	return 0;
}

int
arena_span(struct arena *a, size_t *start, const void *p, size_t n)
{
	if (!a->in_span) {
		a->in_span = 1;
		*start = a->len;
	}
	return arena_add(a, p, n);
}

int
arena_close(struct arena *a, size_t *start)
{
	if (!a->in_span)
		*start = a->len;
	a->in_span = 0;
	return arena_add(a, "", 1);
}

static int
arena_is_space(char c)
{
	return c == ' ' || c == '\t';
}

int
arena_close_trim(struct arena *a, size_t *start)
{
	if (!a->in_span)
		*start = a->len;
	a->in_span = 0;
	while (a->len > *start && arena_is_space(a->buf[a->len - 1]))
		a->len--;
	while (*start < a->len && arena_is_space(a->buf[*start]))
		(*start)++;
	return arena_add(a, "", 1);
}

void
arena_reset(struct arena *a)
{
	a->len = 0;
	a->in_span = 0;
}

void
arena_free(struct arena *a)
{
	free(a->buf);
	a->buf = NULL;
	a->len = a->cap = 0;
	a->in_span = 0;
}
