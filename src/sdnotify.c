/*
 * sdnotify.c -- systemd notifications (see sdnotify.h).
 */
#include <stdarg.h>
#include <stdio.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "sdnotify.h"

static void
sdnotify_send(const char *msg)
{
#ifdef HAVE_SYSTEMD
	sd_notify(0, msg);
#else
	(void)msg;
#endif
}

void
sdnotify_ready(void)
{
	sdnotify_send("READY=1");
}

void
sdnotify_stopping(void)
{
	sdnotify_send("STOPPING=1");
}

void
sdnotify_status(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "STATUS=");
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	sdnotify_send(buf);
}
