/*
 * idtab.c -- stream id to pointer (see idtab.h).
 */
#include <stdlib.h>
#include <string.h>

#include "idtab.h"

#define IDTAB_MIN	16

struct idtab_slot {
	uint32_t	 id;
	void		*val;		/* NULL: the slot is free */
};

/* Fibonacci hashing: sequential ids spread evenly, any mask works. */
static size_t
idtab_home(const struct idtab *t, uint32_t id)
{
	return (size_t)(((uint64_t)id * 0x9e3779b97f4a7c15ull) >> t->shift);
}

static void
idtab_place(struct idtab *t, uint32_t id, void *val)
{
	size_t	i = idtab_home(t, id);

	while (t->slots[i].val != NULL)
		i = (i + 1) & (t->size - 1);
	t->slots[i].id = id;
	t->slots[i].val = val;
}

static int
idtab_resize(struct idtab *t, size_t size)
{
	struct idtab_slot *old = t->slots;
	size_t		 oldsize = t->size, i;
	unsigned	 bits = 0;

	if ((t->slots = calloc(size, sizeof *t->slots)) == NULL) {
		t->slots = old;
		return -1;
	}
	while (((size_t)1 << bits) < size)
		bits++;
	t->size = size;
	t->shift = 64 - bits;
	t->cursor = 0;
	for (i = 0; i < oldsize; i++)
		if (old[i].val != NULL)
			idtab_place(t, old[i].id, old[i].val);
	free(old);
	return 0;
}

int
idtab_reserve(struct idtab *t, size_t n)
{
	size_t	size = t->size != 0 ? t->size : IDTAB_MIN;

	/* At most half full: probe runs stay short. */
	while (size / 2 < n) {
		if (size > SIZE_MAX / 2 / sizeof(struct idtab_slot))
			return -1;
		size *= 2;
	}
	return size == t->size ? 0 : idtab_resize(t, size);
}

int
idtab_put(struct idtab *t, uint32_t id, void *val)
{
	if (idtab_reserve(t, t->count + 1) != 0)
		return -1;
	idtab_place(t, id, val);
	t->count++;
	return 0;
}

static size_t
idtab_find(const struct idtab *t, uint32_t id)
{
	size_t	i;

	if (t->size == 0)
		return SIZE_MAX;
	for (i = idtab_home(t, id); t->slots[i].val != NULL;
	    i = (i + 1) & (t->size - 1))
		if (t->slots[i].id == id)
			return i;
	return SIZE_MAX;
}

void *
idtab_get(const struct idtab *t, uint32_t id)
{
	size_t	i = idtab_find(t, id);

	return i == SIZE_MAX ? NULL : t->slots[i].val;
}

/*
 * Empty slot i, then walk the rest of its probe run: an entry whose home
 * is not cyclically in (i, j] would be unreachable past the hole, so it
 * moves into the hole, which moves to j.
 */
static void
idtab_remove_at(struct idtab *t, size_t i)
{
	size_t	mask = t->size - 1, j = i, home;

	t->slots[i].val = NULL;
	t->count--;
	for (;;) {
		j = (j + 1) & mask;
		if (t->slots[j].val == NULL)
			return;
		home = idtab_home(t, t->slots[j].id);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->slots[i] = t->slots[j];
			t->slots[j].val = NULL;
			i = j;
		}
	}
}

void *
idtab_del(struct idtab *t, uint32_t id)
{
	size_t	 i = idtab_find(t, id);
	void	*val;

	if (i == SIZE_MAX)
		return NULL;
	val = t->slots[i].val;
	idtab_remove_at(t, i);
	return val;
}

/*
 * From the cursor on, wrapping once.  Deletions only shift entries within
 * a run of full slots, so the free slots already passed stay free and the
 * cursor never has to go back for long.
 */
void *
idtab_pop(struct idtab *t, uint32_t *id)
{
	size_t	 n, i;
	void	*val;

	if (t->count == 0)
		return NULL;
	for (n = 0, i = t->cursor; n < t->size; n++, i = (i + 1) & (t->size - 1))
		if (t->slots[i].val != NULL)
			break;
	t->cursor = i;
	val = t->slots[i].val;
	if (id != NULL)
		*id = t->slots[i].id;
	idtab_remove_at(t, i);
	return val;
}

size_t
idtab_count(const struct idtab *t)
{
	return t->count;
}

void
idtab_clear(struct idtab *t)
{
	free(t->slots);
	memset(t, 0, sizeof *t);
}
