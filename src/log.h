/*
 * log.h -- one logging vocabulary for the daemon.
 *
 * log_warn() appends strerror(errno); log_warnx() does not.  log_errx()
 * is for an error that ends the daemon's start (the caller cleans up and
 * exits); fatal() and fatalx() log and exit(1).  Lines go to stderr with
 * a level name, and a timestamp or, under journald, a "<N>" syslog
 * priority.  libevent's own messages are routed here too.
 * Thread-safe: each line is written with one write(2).
 */
#ifndef INGRESSD_LOG_H
#define INGRESSD_LOG_H

#include <stddef.h>

enum log_level { LOG_LEVEL_WARN = 0, LOG_LEVEL_INFO = 1, LOG_LEVEL_DEBUG = 2 };

void	log_init(int level);
void	log_set_level(int level);
/* The error log: a descriptor open on path, -2 for "stderr" (or NULL),
 * -1 with err filled; log_redirect() then puts it in stderr's place. */
int	log_file_open(const char *path, char *err, size_t errlen);
void	log_redirect(int fd);
int	log_level_parse(const char *);	/* -1 when unknown */
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_errx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	fatal(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
extern int log_verbose;		/* current level, cheap to test */

#endif
