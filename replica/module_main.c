/*
 * module_main.c -- main() of a standalone example replica: the module's
 * handler linked with the library, served over the wire protocol.
 * Replica options (replica.h) first; after "--", the module's own args.
 */
#include <string.h>

#include "replica_module.h"

extern const struct replica_module ingressd_module;

int
main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return replica_module_main(&ingressd_module, i, argv,
			    argc - i - 1, argv + i + 1);
	}
	return replica_module_main(&ingressd_module, argc, argv, 0, argv + argc);
}
