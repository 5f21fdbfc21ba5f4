"""python3 -m ingressd_replica MODULE:CALLABLE [--listen ADDR] [...]

Imports MODULE (the current directory is on the path) and serves its
CALLABLE as the handler; the other options are serve()'s (--listen, --id,
--deployment, --max-concurrency, --drain-ms, --threads)."""

import importlib
import os
import sys

from .server import serve


def main(argv):
    if not argv or ":" not in argv[0] or argv[0].startswith("-"):
        sys.stderr.write("usage: python3 -m ingressd_replica "
                         "MODULE:CALLABLE [--listen ADDR] [--id ID] ...\n")
        return 2
    modname, _, attr = argv[0].partition(":")
    sys.path.insert(0, os.getcwd())
    try:
        handler = getattr(importlib.import_module(modname), attr)
    except (ImportError, AttributeError) as e:
        sys.stderr.write("replica: %s: %s\n" % (argv[0], e))
        return 1
    return serve(handler, argv=argv[1:])


def console():
    """The ingressd-replica command that pip installs."""
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
