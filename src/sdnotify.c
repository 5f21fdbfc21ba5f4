/*
 * sdnotify.c -- systemd notifications (see sdnotify.h).
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "net.h"
#include "sdnotify.h"

#define SD_LISTEN_FDS_START	3
#define SD_LISTEN_FDS_MAX	64

static int		 sd_fd = -1;
static struct sockaddr_un sd_addr;
static socklen_t	 sd_addrlen;
static uint64_t		 sd_watchdog_usec;
static unsigned		 sd_nlisten;
static unsigned char	 sd_taken[SD_LISTEN_FDS_MAX];

/* As sd_listen_fds(3): only if the variables were meant for us. */
static void
sdnotify_init_listen(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	long n;
	int fd, fl;

	if (pid == NULL || fds == NULL || atol(pid) != (long)getpid())
		return;
	n = atol(fds);
	if (n <= 0 || n > SD_LISTEN_FDS_MAX)
		return;
	for (fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++) {
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		if ((fl = fcntl(fd, F_GETFL)) != -1)
			fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	}
	sd_nlisten = (unsigned)n;
}

void
sdnotify_init(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	const char *usec = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	size_t len;

	/* The watchdog is ours unless systemd named another process. */
	if (usec != NULL && (pid == NULL || atol(pid) == (long)getpid()))
		sd_watchdog_usec = strtoull(usec, NULL, 10);
	if (path != NULL && (path[0] == '/' || path[0] == '@') &&
	    (len = strlen(path)) < sizeof(sd_addr.sun_path)) {
		memset(&sd_addr, 0, sizeof(sd_addr));
		sd_addr.sun_family = AF_UNIX;
		memcpy(sd_addr.sun_path, path, len);
		if (path[0] == '@')
			sd_addr.sun_path[0] = '\0';	/* abstract */
		sd_addrlen = (socklen_t)(offsetof(struct sockaddr_un,
		    sun_path) + len + (path[0] == '/'));
		sd_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	}
	sdnotify_init_listen();
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
}

unsigned
sdnotify_listen_fds(void)
{
	return sd_nlisten;
}

int
sdnotify_listen_take(const struct sockaddr_storage *want)
{
	struct sockaddr_storage ss;
	socklen_t len;
	unsigned i;

	for (i = 0; i < sd_nlisten; i++) {
		if (sd_taken[i])
			continue;
		len = sizeof(ss);
		memset(&ss, 0, sizeof(ss));
		if (getsockname(SD_LISTEN_FDS_START + (int)i,
		    (struct sockaddr *)&ss, &len) == 0 &&
		    net_addr_same(&ss, want)) {
			sd_taken[i] = 1;
			return SD_LISTEN_FDS_START + (int)i;
		}
	}
	return -1;
}

int
sdnotify_listen_unused(void)
{
	unsigned i;

	for (i = 0; i < sd_nlisten; i++) {
		if (!sd_taken[i]) {
			sd_taken[i] = 1;
			return SD_LISTEN_FDS_START + (int)i;
		}
	}
	return -1;
}

void
sdnotify_free(void)
{
	if (sd_fd != -1)
		close(sd_fd);
	sd_fd = -1;
}

static void
sdnotify_send(const char *msg)
{
	if (sd_fd == -1)
		return;
	(void)sendto(sd_fd, msg, strlen(msg), MSG_NOSIGNAL,
	    (struct sockaddr *)&sd_addr, sd_addrlen);
}

void
sdnotify_ready(void)
{
	sdnotify_send("READY=1");
}

/* MONOTONIC_USEC lets systemd >= 253 (Type=notify-reload) match it up. */
void
sdnotify_reloading(void)
{
	struct timespec ts;
	char buf[96];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(buf, sizeof(buf), "RELOADING=1\nMONOTONIC_USEC=%llu",
	    (unsigned long long)ts.tv_sec * 1000000ULL +
	    (unsigned long long)ts.tv_nsec / 1000);
	sdnotify_send(buf);
}

void
sdnotify_stopping(void)
{
	sdnotify_send("STOPPING=1");
}

void
sdnotify_watchdog(void)
{
	sdnotify_send("WATCHDOG=1");
}

uint64_t
sdnotify_watchdog_usec(void)
{
	return sd_watchdog_usec;
}

void
sdnotify_status(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	if (sd_fd == -1)
		return;
	n = snprintf(buf, sizeof(buf), "STATUS=");
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	sdnotify_send(buf);
}
