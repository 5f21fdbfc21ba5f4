/*
 * inproc_mod.h -- replica modules (replica/replica_module.h) loaded into
 * ingressd: the process-wide table of loaded modules, each one loaded
 * once and counted, closed when its last reference goes.
 *
 * A reference is held by each worker's instance of a module (inproc.c),
 * and an instance lives while any of its requests does, so a module is
 * never closed while a stream uses it.  Modules are known by path and by
 * the file's identity (device, inode, mtime, size): after a rebuild under
 * the same path, a reload gets the new file, loaded from a private copy
 * (the dynamic loader would hand back the old one by its name) while the
 * old one finishes its requests.
 *
 * Leaf module: dlopen and files only, no logging; errors go to the
 * caller's buffer, naming the module.  Thread-safe (a mutex).
 */
#ifndef INGRESSD_INPROC_MOD_H
#define INGRESSD_INPROC_MOD_H

#include <stddef.h>

struct inproc_mod;
struct replica_api;
struct replica_module;

/*
 * Conf time: path is a module that speaks our ABI; its identity goes to
 * file.  0, or -1 with err ("PATH: module ABI version 2, ingressd speaks
 * 1 ...", a dlopen error, a missing file).
 */
int		 inproc_mod_probe(const char *path, char *file, size_t filelen,
		    char *err, size_t errlen);
/*
 * A reference to the module path with identity file, loaded and bound to
 * api on first use; NULL with err.
 */
struct inproc_mod *inproc_mod_get(const char *path, const char *file,
		    const struct replica_api *api, char *err, size_t errlen);
/* The last reference goes: the module is closed. */
void		 inproc_mod_put(struct inproc_mod *);
const struct replica_module *inproc_mod_desc(const struct inproc_mod *);
const char	*inproc_mod_path(const struct inproc_mod *);
/* Modules loaded now (tests, status). */
unsigned	 inproc_mod_loaded(void);

#endif
