/*
 * ctl.h -- the files a running ingressd keeps in its runtime directory so
 * that "ingressd -s reload" can find it and learn what became of a reload.
 *
 *   ingressd.pid    the daemon's pid: written at start, removed at stop
 *   reload.status   one line, "SEQ ok TEXT" or "SEQ failed TEXT", replaced
 *                   (rename) after every SIGHUP; SEQ counts them from 1
 *
 * Helpers only: they never log, errors go into the caller's buffer.
 */
#ifndef INGRESSD_CTL_H
#define INGRESSD_CTL_H

#include <stddef.h>
#include <sys/types.h>

int	ctl_write_pid(const char *dir, char *err, size_t errlen);
/* Removes both files (stop). */
void	ctl_remove(const char *dir);
/* After a SIGHUP: ok or not, and why (one line). */
void	ctl_reload_status(const char *dir, int ok, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

int	ctl_read_pid(const char *dir, pid_t *pid, char *err, size_t errlen);
/* The last status: 0 with *seq (0: none yet), *ok and text filled. */
int	ctl_read_status(const char *dir, unsigned *seq, int *ok, char *text,
	    size_t len);

#endif
