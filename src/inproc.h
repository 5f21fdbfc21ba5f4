/*
 * inproc.h -- the in-process upstream edge: a deployment whose source is
 * "inproc" runs a replica module (replica/replica_module.h) inside each
 * worker.  A request is handed to the module's handler by direct call on
 * the worker's own thread -- no frame, no socket, no second process --
 * with the same events in the same order as a replica gets over the
 * wire, the same flow control (the stream's credit both ways), deadlines
 * and cancel.  The core reaches it through upconn_ops under the
 * protocol name "inproc" and cannot tell it from a wire replica.
 *
 * One instance of a module per (worker, endpoint): init on the worker's
 * thread at first use, fini once released and no request of it is left.
 * A module is loaded once per process (inproc_mod.c) and closed when its
 * last instance goes: a reload that names another module (or the same
 * path rebuilt) starts new instances for new requests while the old ones
 * finish on the old module.
 *
 * The trade-off (docs/architecture.md): a crash in a module is a crash
 * of ingressd, and a handler that blocks stalls its worker; the daemon's
 * stall watchdog names the module (inproc_running()).
 */
#ifndef INGRESSD_INPROC_H
#define INGRESSD_INPROC_H

#include <stddef.h>

/* Register the edge under "inproc" (main thread, before workers start).
 * 0 or -1. */
int		 inproc_register(void);
/*
 * Any thread (the stall watchdog): 1 and the module and replica in buf
 * when worker is inside a module call ingressd made (a request event,
 * init or fini), else 0.  Best effort: read while the worker runs.
 */
int		 inproc_running(unsigned worker, char *buf, size_t len);

#endif
