/*
 * sdnotify.h -- tell systemd what we are doing (Type=notify).  A no-op when
 * not started by systemd (no NOTIFY_SOCKET) or built without libsystemd.
 */
#ifndef INGRESSD_SDNOTIFY_H
#define INGRESSD_SDNOTIFY_H

void	sdnotify_ready(void);
void	sdnotify_stopping(void);
void	sdnotify_status(const char *, ...) __attribute__((format(printf, 1, 2)));

#endif
