/*
 * log.c -- the daemon's one logging vocabulary.
 *
 * Every line is formatted into a stack buffer and written with a single
 * write(2) so lines from different threads never interleave; stdio is not
 * used at all.  Lines longer than the buffer are truncated.
 *
 * Under journald a line starts with its syslog priority, "<4>" for a
 * warning (sd-daemon(3)), so that journalctl -p filters, and carries no
 * timestamp (journald stamps it).  Anywhere else it starts with a UTC
 * timestamp.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/stat.h>

#include <event2/event.h>

#include "log.h"

#define LOG_LINE_MAX	2048

int	log_verbose = LOG_LEVEL_INFO;
static int log_stderr = -1;	/* the stderr we were started with */

static const char *log_names[] = { "warn", "info", "debug" };

/* JOURNAL_STREAM's "DEV:INO", and whether fd 2 is that stream now. */
static int	 log_jset;
static dev_t	 log_jdev;
static ino_t	 log_jino;
static _Atomic int log_journal;

static void	log_vwrite(int, const char *, const char *, va_list, int)
		    __attribute__((format(printf, 3, 0)));
static void	log_event_cb(int, const char *);

/*
 * systemd sets JOURNAL_STREAM to the device and inode of the stream it
 * connected our stderr to (systemd.exec(5)).  The variable alone proves
 * nothing: it survives an error_log file put in stderr's place, and any
 * process started from a service inherits it.  Only while fd 2 is still
 * that very stream is journald reading our lines.
 */
static void
log_journal_parse(void)
{
	const char *s = getenv("JOURNAL_STREAM");
	uintmax_t dev, ino;
	char end;

	if (s != NULL && sscanf(s, "%ju:%ju%c", &dev, &ino, &end) == 2) {
		log_jdev = (dev_t)dev;
		log_jino = (ino_t)ino;
		log_jset = 1;
	}
}

static void
log_journal_check(void)
{
	struct stat st;

	atomic_store(&log_journal, log_jset &&
	    fstat(STDERR_FILENO, &st) == 0 && st.st_dev == log_jdev &&
	    st.st_ino == log_jino);
}

/* "<N>" under journald, else a UTC timestamp. */
static size_t
log_prefix(char *buf, size_t len, int prio)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	if (atomic_load(&log_journal))
		return (size_t)snprintf(buf, len, "<%d>", prio);
	if (clock_gettime(CLOCK_REALTIME, &ts) == -1 ||
	    gmtime_r(&ts.tv_sec, &tm) == NULL)
		return 0;
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	if (n == 0 || n + 6 >= len)
		return 0;
	n += (size_t)snprintf(buf + n, len - n, ".%03ldZ ",
	    ts.tv_nsec / 1000000);
	return n;
}

/* Format one line and write it whole; errnum < 0 means no strerror. */
static void
log_vwrite(int prio, const char *level, const char *fmt, va_list ap,
    int errnum)
{
	char	 line[LOG_LINE_MAX];
	size_t	 len;
	int	 n;

	len = log_prefix(line, sizeof line, prio);
	n = snprintf(line + len, sizeof line - len, "ingressd[%ld]: %s: ",
	    (long)getpid(), level);
	if (n < 0)
		return;
	len += (size_t)n;
	n = vsnprintf(line + len, sizeof line - len, fmt, ap);
	if (n > 0)
		len += (size_t)n;
	if (len > sizeof line - 2)
		len = sizeof line - 2;
	if (errnum >= 0) {
		n = snprintf(line + len, sizeof line - len, ": %s",
		    strerror(errnum));
		if (n > 0)
			len += (size_t)n;
		if (len > sizeof line - 2)
			len = sizeof line - 2;
	}
	line[len++] = '\n';
	/* Nothing useful to do if stderr is gone. */
	while (write(STDERR_FILENO, line, len) == -1 && errno == EINTR)
		continue;
}

static void
log_event_cb(int severity, const char *msg)
{
	switch (severity) {
	case EVENT_LOG_DEBUG:
		log_debug("libevent: %s", msg);
		break;
	case EVENT_LOG_MSG:
		log_info("libevent: %s", msg);
		break;
	default:
		log_warnx("libevent: %s", msg);
		break;
	}
}

void
log_init(int level)
{
	if (log_stderr == -1) {
		log_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
		log_journal_parse();
		log_journal_check();
	}
	log_set_level(level);
	event_set_log_callback(log_event_cb);
}

int
log_file_open(const char *path, char *err, size_t errlen)
{
	int fd;

	if (path == NULL || strcmp(path, "stderr") == 0)
		return -2;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd == -1)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return fd;
}

/* dup2 onto stderr so that children spawned later inherit it too. */
void
log_redirect(int fd)
{
	if (fd == -1 || (fd == -2 && log_stderr == -1))
		return;
	dup2(fd == -2 ? log_stderr : fd, STDERR_FILENO);
	if (fd >= 0)
		close(fd);
	log_journal_check();
}

void
log_set_level(int level)
{
	if (level < LOG_LEVEL_WARN)
		level = LOG_LEVEL_WARN;
	if (level > LOG_LEVEL_DEBUG)
		level = LOG_LEVEL_DEBUG;
	log_verbose = level;
}

int
log_level_parse(const char *s)
{
	size_t	i;

	if (s == NULL)
		return (-1);
	for (i = 0; i < sizeof log_names / sizeof log_names[0]; i++) {
		if (strcasecmp(s, log_names[i]) == 0)
			return ((int)i);
	}
	return (-1);
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	va_start(ap, fmt);
	log_vwrite(LOG_WARNING, "warn", fmt, ap, saved);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	va_start(ap, fmt);
	log_vwrite(LOG_WARNING, "warn", fmt, ap, -1);
	va_end(ap);
	errno = saved;
}

void
log_errx(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	va_start(ap, fmt);
	log_vwrite(LOG_ERR, "error", fmt, ap, -1);
	va_end(ap);
	errno = saved;
}

void
log_info(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	if (log_verbose < LOG_LEVEL_INFO)
		return;
	va_start(ap, fmt);
	log_vwrite(LOG_INFO, "info", fmt, ap, -1);
	va_end(ap);
	errno = saved;
}

void
log_debug(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	if (log_verbose < LOG_LEVEL_DEBUG)
		return;
	va_start(ap, fmt);
	log_vwrite(LOG_DEBUG, "debug", fmt, ap, -1);
	va_end(ap);
	errno = saved;
}

void
fatal(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	va_start(ap, fmt);
	log_vwrite(LOG_CRIT, "fatal", fmt, ap, saved);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(LOG_CRIT, "fatal", fmt, ap, -1);
	va_end(ap);
	exit(1);
}
