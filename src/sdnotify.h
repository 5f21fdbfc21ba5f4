/*
 * sdnotify.h -- tell systemd what we are doing (Type=notify).
 *
 * The sd_notify(3) protocol spoken directly (one datagram to the unix
 * socket named by $NOTIFY_SOCKET): no libsystemd to build or link against,
 * and the same binary works with and without systemd.
 * Everything is a no-op when not started by systemd.  sdnotify_init()
 * reads and then removes NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID and the
 * socket activation variables (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES)
 * from the environment, so spawned replicas do not inherit them.
 */
#ifndef INGRESSD_SDNOTIFY_H
#define INGRESSD_SDNOTIFY_H

#include <stdint.h>

#include <sys/socket.h>

void	 sdnotify_init(void);
void	 sdnotify_free(void);
void	 sdnotify_ready(void);
void	 sdnotify_reloading(void);
void	 sdnotify_stopping(void);
void	 sdnotify_watchdog(void);
/* WatchdogSec= in microseconds (0: no watchdog for us). */
uint64_t sdnotify_watchdog_usec(void);
/* Sockets passed by socket activation: descriptors 3 .. 3 + n - 1, made
 * close-on-exec and non-blocking.  0 when none were passed. */
unsigned sdnotify_listen_fds(void);
/* The passed socket bound to this address (each is handed out once), or
 * -1; then, once every address had its turn, each one nobody took (the
 * caller closes it), -1 when none is left. */
int	 sdnotify_listen_take(const struct sockaddr_storage *);
int	 sdnotify_listen_unused(void);
void	 sdnotify_status(const char *, ...)
	    __attribute__((format(printf, 1, 2)));

#endif
