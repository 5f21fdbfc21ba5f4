/*
 * host.c -- ingressd-host: serve a replica module (replica_module.h) over
 * the wire protocol, in a process of its own.
 *
 *	ingressd-host [REPLICA OPTIONS] MODULE [ARGS...]
 *
 * REPLICA OPTIONS are the library's (--listen ADDR, --id ID, ...; or the
 * environment ingressd's spawn sets); ARGS go to the module's init, as
 * the "args" of an inproc deployment would.  The module is the same .so
 * ingressd loads in-process: it is bound to this library's functions.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "replica_module.h"

/* The module's descriptor, or NULL with the reason printed. */
static const struct replica_module *
host_load(const char *path)
{
	const struct replica_module *m;
	char rel[4096];
	void *dl;

	/* A bare name would be looked up on the library path. */
	if (strchr(path, '/') == NULL) {
		snprintf(rel, sizeof rel, "./%s", path);
		path = rel;
	}
	if ((dl = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		fprintf(stderr, "ingressd-host: %s\n", dlerror());
		return NULL;
	}
	if ((m = dlsym(dl, REPLICA_MODULE_SYMBOL)) == NULL) {
		fprintf(stderr, "ingressd-host: %s: no %s symbol: not a replica "
		    "module\n", path, REPLICA_MODULE_SYMBOL);
		return NULL;
	}
	if (m->abi != REPLICA_MODULE_ABI) {
		fprintf(stderr, "ingressd-host: %s: module ABI version %u, this "
		    "host speaks %u: rebuild the module against this "
		    "replica_module.h\n", path, (unsigned)m->abi,
		    (unsigned)REPLICA_MODULE_ABI);
		return NULL;
	}
	if (m->handler == NULL || m->handler->on_request == NULL ||
	    m->bind == NULL) {
		fprintf(stderr, "ingressd-host: %s: module has no on_request\n",
		    path);
		return NULL;
	}
	return m;
}

int
main(int argc, char **argv)
{
	const struct replica_module *m;
	int i;

	/* Options come in pairs ("--listen ADDR") or as "--opt=value". */
	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strchr(argv[i], '=') == NULL)
			i++;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: ingressd-host [--listen ADDR] [--id ID] "
		    "[...] MODULE [ARGS...]\n");
		return 2;
	}
	if ((m = host_load(argv[i])) == NULL)
		return 1;
	m->bind(&replica_lib_api);
	/* The library parses argv[1..i-1]. */
	return replica_module_main(m, i, argv, argc - i - 1, argv + i + 1);
}
