/*
 * etcd_set.h -- the replica set etcd holds, mirrored and applied to the
 * registry (main thread only).
 *
 * The mirror maps each etcd key to its value as etcd last sent it.  A put
 * or delete from the watch changes one replica; a list replaces the whole
 * set, and only the keys whose value differs are applied, so a re-list
 * after a compaction that missed nothing bumps no name.
 */
#ifndef INGRESSD_ETCD_SET_H
#define INGRESSD_ETCD_SET_H

#include <stddef.h>
#include <stdint.h>

struct etcd_set;
struct registry;

struct etcd_set	*etcd_set_new(struct registry *, const char *prefix);
void		 etcd_set_free(struct etcd_set *);
/* A watch event. */
void		 etcd_set_put(struct etcd_set *, const char *key,
		    const char *value);
void		 etcd_set_delete(struct etcd_set *, const char *key);
/* A list: begin, add each key, end (diff, apply, swap); end returns how
 * many keys changed. */
void		 etcd_set_list_begin(struct etcd_set *);
void		 etcd_set_list_add(struct etcd_set *, const char *key,
		    const char *value);
unsigned	 etcd_set_list_end(struct etcd_set *);
/* The snapshot file: 0 loaded (applied), 1 none, -1 and err. */
int		 etcd_set_load(struct etcd_set *, const char *path, char *err,
		    size_t errlen);
/* Written to path.tmp, fsynced, renamed: 0, or -1 and err. */
int		 etcd_set_save(struct etcd_set *, const char *path,
		    int64_t revision, char *err, size_t errlen);
unsigned	 etcd_set_size(struct etcd_set *);

#endif
