/*
 * preflight.h -- what the start would refuse, found without starting
 * (ingressd -t): log files that cannot be created, listen addresses that
 * do not resolve, cannot be bound or name one socket twice.
 *
 * Nothing is created: a log file's directory is checked with access(2),
 * a TCP address with a bind(2) that never listens, a unix socket's
 * directory like a log file's.  Helpers only: errors and notes go into the
 * caller's buffers.
 */
#ifndef INGRESSD_PREFLIGHT_H
#define INGRESSD_PREFLIGHT_H

#include <stddef.h>

struct conf;

/*
 * 0 when the start should get past every check here, -1 and err when
 * not.  A TCP address already in use is not an error but a note (the
 * running ingressd, most often: -t runs beside it before a reload or a
 * restart); note is "" when there is none.
 */
int	preflight_check(const struct conf *, char *err, size_t errlen,
	    char *note, size_t notelen);
/* listen and admin resolved, no two the same socket address (start). */
int	preflight_unique(const struct conf *, char *err, size_t errlen);

/* TLS files: each certificate chain against its key, the CAs (-t and
 * the start; a reload checks the same when it builds the contexts). */
int	preflight_tls(const struct conf *, char *err, size_t errlen);

#endif
