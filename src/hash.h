/*
 * hash.h -- FNV-1a over a NUL-terminated string, for tables of names
 * (the registry's indexes, a worker's handle table).  Names are short and
 * the tables grow to about one name per bucket, so a simple hash is enough.
 */
#ifndef INGRESSD_HASH_H
#define INGRESSD_HASH_H

#include <stdint.h>

static inline uint32_t
hash_name(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s != '\0')
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

#endif
