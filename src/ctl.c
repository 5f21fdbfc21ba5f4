/*
 * ctl.c -- control files in the runtime directory (see ctl.h).
 *
 * The status file is written whole under a temporary name and renamed, so
 * a reader never sees half a line.  The sequence number lets a reader that
 * sent SIGHUP tell the answer to its signal from an older one; signals
 * that arrive together are answered once, by one load of the newest file,
 * which is the answer each sender wants.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

#define CTL_PID		"ingressd.pid"
#define CTL_STATUS	"reload.status"

static unsigned ctl_seq;	/* the daemon's reloads answered */

static void
ctl_path(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* Write text to dir/name through a temporary file and rename(2). */
static int
ctl_put(const char *dir, const char *name, const char *text)
{
	char path[4096], tmp[4200];
	FILE *fp;
	int rv;

	ctl_path(path, sizeof(path), dir, name);
	snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
	if ((fp = fopen(tmp, "w")) == NULL)
		return -1;
	rv = fputs(text, fp) == EOF ? -1 : 0;
	if (fclose(fp) == EOF)
		rv = -1;
	if (rv == 0 && rename(tmp, path) == -1)
		rv = -1;
	if (rv == -1)
		unlink(tmp);
	return rv;
}

int
ctl_write_pid(const char *dir, char *err, size_t errlen)
{
	char text[32];

	ctl_seq = 0;
	ctl_remove(dir);	/* a status left by an earlier run */
	snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	if (ctl_put(dir, CTL_PID, text) == -1) {
		snprintf(err, errlen, "%s/%s: %s", dir, CTL_PID,
		    strerror(errno));
		return -1;
	}
	return 0;
}

void
ctl_remove(const char *dir)
{
	char path[4096];

	ctl_path(path, sizeof(path), dir, CTL_PID);
	unlink(path);
	ctl_path(path, sizeof(path), dir, CTL_STATUS);
	unlink(path);
}

void
ctl_reload_status(const char *dir, int ok, const char *fmt, ...)
{
	char line[1200], *p;
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "%u %s ", ++ctl_seq,
	    ok ? "ok" : "failed");
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	for (p = line; *p != '\0'; p++) {
		if (*p == '\n')
			*p = ' ';
	}
	strcat(line, "\n");
	/* Nobody to tell if this fails: the reader times out and says so. */
	(void)ctl_put(dir, CTL_STATUS, line);
}

int
ctl_read_pid(const char *dir, pid_t *pid, char *err, size_t errlen)
{
	char path[4096];
	FILE *fp;
	long v;

	ctl_path(path, sizeof(path), dir, CTL_PID);
	if ((fp = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fscanf(fp, "%ld", &v) != 1 || v <= 1) {
		fclose(fp);
		snprintf(err, errlen, "%s: no pid in it", path);
		return -1;
	}
	fclose(fp);
	*pid = (pid_t)v;
	return 0;
}

int
ctl_read_status(const char *dir, unsigned *seq, int *ok, char *text,
    size_t len)
{
	char path[4096], line[1200], word[16];
	FILE *fp;
	int n = 0;

	*seq = 0;
	*ok = 0;
	if (len > 0)
		text[0] = '\0';
	ctl_path(path, sizeof(path), dir, CTL_STATUS);
	if ((fp = fopen(path, "r")) == NULL)
		return errno == ENOENT ? 0 : -1;
	if (fgets(line, sizeof(line), fp) == NULL ||
	    sscanf(line, "%u %15s %n", seq, word, &n) != 2 || n == 0) {
		fclose(fp);
		*seq = 0;
		return -1;
	}
	fclose(fp);
	line[strcspn(line, "\n")] = '\0';
	*ok = strcmp(word, "ok") == 0;
	snprintf(text, len, "%s", line + n);
	return 0;
}
