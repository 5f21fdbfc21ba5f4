/*
 * accesslog.h -- one line per finished request, in the "combined" format
 * or as JSON lines (conf access_log, access_log_format).
 *
 * Each worker formats lines into its own buffer (no lock, no allocation)
 * and writes the buffer with one write(2) when it is nearly full and on
 * the worker's tick (every 250 ms), so lines appear within a moment and
 * lines of different workers never interleave (O_APPEND).  The file is
 * reopened on SIGUSR1 (logrotate): the new file takes over the same
 * descriptor number with dup3(), so workers never see a closed descriptor.
 */
#ifndef INGRESSD_ACCESSLOG_H
#define INGRESSD_ACCESSLOG_H

#include <stddef.h>

struct reqlog;
struct accesslog_slot;

/* Main thread, before the workers start. */
int	 accesslog_init(unsigned nworkers);
void	 accesslog_free(void);
/* Open a log file for appending (also used for the error log): the
 * descriptor, or -1 and err. */
int	 accesslog_open_file(const char *path, char *err, size_t errlen);
/* The stderr ingressd started with (journald under systemd). */
int	 accesslog_stderr(void);
/*
 * Main thread: send lines to path (NULL: off, "stderr", or a file whose
 * descriptor fd the caller opened with accesslog_open_file and hands
 * over) in format (enum conf_access_format).
 */
void	 accesslog_set(const char *path, int fd, int format);
/* Main thread: open the same path again (SIGUSR1).  -1 and err. */
int	 accesslog_reopen(char *err, size_t errlen);
/* Main thread, after accesslog_init(): worker id's buffer, or NULL.  The
 * worker keeps it in its context (wctx.h). */
struct accesslog_slot *accesslog_slot(unsigned id);
/* Worker threads, each with its own slot (NULL: nothing logged). */
void	 accesslog_write(struct accesslog_slot *, const struct reqlog *);
void	 accesslog_flush(struct accesslog_slot *);

#endif
