/*
 * supervise.c -- spawned replica processes (see supervise.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <event2/event.h>

#include "conf.h"
#include "log.h"
#include "registry.h"
#include "supervise.h"

#define RESTART_MIN_MS		100
#define RESTART_MAX_MS		5000
#define HEALTHY_AFTER_SEC	10	/* up this long: backoff starts over */

extern char **environ;

struct child {
	struct supervise *sv;
	const struct conf_deployment *cd;
	struct reg_endpoint *ep;
	pid_t		 pid;
	char		**envp;		/* built before fork: no malloc after */
	struct event	*restart;
	unsigned	 backoff_ms;
	time_t		 started;
};

struct supervise {
	struct event_base *base;
	const struct conf *conf;
	struct registry	*reg;
	struct child	*children;
	unsigned	 nchildren;
	struct event	*sigchld;
	int		 stopping;
};

static void	supervise_restart_cb(evutil_socket_t, short, void *);
static void	supervise_sigchld_cb(evutil_socket_t, short, void *);

static const char *
child_sock(const struct child *c)
{
	return c->ep->addr.text + 5;	/* "unix:/path" */
}

/* Our environment plus the three variables that tell a replica who it is. */
static char **
child_envp(const struct child *c)
{
	size_t i, n = 0;
	char **envp;

	while (environ[n] != NULL)
		n++;
	if ((envp = calloc(n + 4, sizeof(*envp))) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		envp[i] = environ[i];
	if (asprintf(&envp[n], "INGRESSD_LISTEN=%s", c->ep->addr.text) == -1 ||
	    asprintf(&envp[n + 1], "INGRESSD_REPLICA_ID=%s", c->ep->id) == -1 ||
	    asprintf(&envp[n + 2], "INGRESSD_DEPLOYMENT=%s", c->cd->name) == -1)
		return NULL;	/* a few bytes lost on a path that exits */
	return envp;
}

struct supervise *
supervise_new(struct event_base *base, const struct conf *conf,
    struct registry *reg, char *err, size_t errlen)
{
	struct supervise *sv;
	struct reg_deployment *d;
	unsigned i, j, n = 0;

	if ((sv = calloc(1, sizeof(*sv))) == NULL)
		return NULL;
	sv->base = base;
	sv->conf = conf;
	sv->reg = reg;
	for (i = 0; i < conf->ndeployments; i++) {
		if (conf->deployments[i].source == CONF_SPAWN)
			n += conf->deployments[i].replicas;
	}
	sv->children = calloc(n ? n : 1, sizeof(*sv->children));
	sv->sigchld = evsignal_new(base, SIGCHLD, supervise_sigchld_cb, sv);
	if (sv->children == NULL || sv->sigchld == NULL) {
		snprintf(err, errlen, "out of memory");
		supervise_free(sv);
		return NULL;
	}
	evsignal_add(sv->sigchld, NULL);
	for (i = 0; i < conf->ndeployments; i++) {
		const struct conf_deployment *cd = &conf->deployments[i];

		if (cd->source != CONF_SPAWN)
			continue;
		d = registry_deployment(reg, i);
		for (j = 0; j < cd->replicas; j++) {
			struct child *c = &sv->children[sv->nchildren++];

			c->sv = sv;
			c->cd = cd;
			c->ep = reg_deployment_endpoint(d, j);
			c->envp = child_envp(c);
			c->restart = evtimer_new(base, supervise_restart_cb, c);
			if (c->envp == NULL || c->restart == NULL) {
				snprintf(err, errlen, "out of memory");
				supervise_free(sv);
				return NULL;
			}
		}
	}
	return sv;
}

/* In the child: nothing but async-signal-safe calls until exec. */
static void
child_exec(const struct child *c, pid_t parent)
{
	sigset_t none;
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(1);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if ((fd = open("/dev/null", O_RDONLY)) != -1) {
		dup2(fd, 0);
		if (fd > 2)
			close(fd);
	}
	execvpe(c->cd->command[0], c->cd->command, c->envp);
	_exit(127);
}

static int
supervise_spawn(struct child *c)
{
	pid_t parent = getpid(), pid;

	unlink(child_sock(c));		/* a socket left by a crash */
	if ((pid = fork()) == -1) {
		log_warn("replica %s: fork", c->ep->id);
		return -1;
	}
	if (pid == 0)
		child_exec(c, parent);
	c->pid = pid;
	c->started = time(NULL);
	atomic_store(&c->ep->pid, (int)pid);
	log_info("replica %s: started, pid %d, on %s", c->ep->id, (int)pid,
	    c->ep->addr.text);
	return 0;
}

int
supervise_start(struct supervise *sv, char *err, size_t errlen)
{
	unsigned i;

	for (i = 0; i < sv->nchildren; i++) {
		struct child *c = &sv->children[i];
		const char *cmd = c->cd->command[0];

		if (strchr(cmd, '/') != NULL && access(cmd, X_OK) == -1) {
			snprintf(err, errlen, "deployments.%s.spawn.command: "
			    "%s: %s", c->cd->name, cmd, strerror(errno));
			return -1;
		}
		if (supervise_spawn(c) == -1) {
			snprintf(err, errlen, "replica %s: fork: %s", c->ep->id,
			    strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void
supervise_restart_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct child *c = arg;
	struct timeval retry = { 1, 0 };

	if (c->sv->stopping || c->pid != 0)
		return;
	if (supervise_spawn(c) == 0)
		atomic_fetch_add(&c->ep->restarts, 1);
	else
		evtimer_add(c->restart, &retry);
}

static struct child *
supervise_find(struct supervise *sv, pid_t pid)
{
	unsigned i;

	for (i = 0; i < sv->nchildren; i++) {
		if (sv->children[i].pid == pid)
			return &sv->children[i];
	}
	return NULL;
}

static void
supervise_exited(struct child *c, int status)
{
	struct timeval tv;

	if (WIFSIGNALED(status))
		log_warnx("replica %s: pid %d killed by signal %d", c->ep->id,
		    (int)c->pid, WTERMSIG(status));
	else if (WEXITSTATUS(status) == 127)
		log_warnx("replica %s: pid %d: could not run %s", c->ep->id,
		    (int)c->pid, c->cd->command[0]);
	else
		log_warnx("replica %s: pid %d exited with status %d", c->ep->id,
		    (int)c->pid, WEXITSTATUS(status));
	c->pid = 0;
	atomic_store(&c->ep->pid, 0);
	if (c->sv->stopping)
		return;
	/* Backoff grows while it keeps dying young. */
	if (time(NULL) - c->started >= HEALTHY_AFTER_SEC)
		c->backoff_ms = 0;
	c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : RESTART_MIN_MS;
	if (c->backoff_ms > RESTART_MAX_MS)
		c->backoff_ms = RESTART_MAX_MS;
	tv.tv_sec = c->backoff_ms / 1000;
	tv.tv_usec = (c->backoff_ms % 1000) * 1000;
	evtimer_add(c->restart, &tv);
}

static void
supervise_sigchld_cb(evutil_socket_t sig, short ev, void *arg)
{
	struct supervise *sv = arg;
	struct child *c;
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if ((c = supervise_find(sv, pid)) != NULL)
			supervise_exited(c, status);
	}
}

static unsigned
supervise_alive(struct supervise *sv)
{
	unsigned i, n = 0;
	int status;

	for (i = 0; i < sv->nchildren; i++) {
		struct child *c = &sv->children[i];

		if (c->pid == 0)
			continue;
		if (waitpid(c->pid, &status, WNOHANG) == c->pid) {
			c->pid = 0;
			atomic_store(&c->ep->pid, 0);
			continue;
		}
		n++;
	}
	return n;
}

void
supervise_stop(struct supervise *sv, double grace)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	unsigned i, rounds = (unsigned)(grace * 100);

	sv->stopping = 1;
	for (i = 0; i < sv->nchildren; i++) {
		if (sv->children[i].pid != 0)
			kill(sv->children[i].pid, SIGTERM);
	}
	while (rounds-- > 0 && supervise_alive(sv) > 0)
		nanosleep(&pause, NULL);
	for (i = 0; i < sv->nchildren; i++) {
		struct child *c = &sv->children[i];

		if (c->pid != 0) {
			log_warnx("replica %s: pid %d did not stop, killing",
			    c->ep->id, (int)c->pid);
			kill(c->pid, SIGKILL);
			waitpid(c->pid, NULL, 0);
			c->pid = 0;
		}
		unlink(child_sock(c));
	}
}

void
supervise_free(struct supervise *sv)
{
	unsigned i;
	size_t n;

	if (sv == NULL)
		return;
	for (i = 0; i < sv->nchildren; i++) {
		struct child *c = &sv->children[i];

		if (c->restart != NULL)
			event_free(c->restart);
		if (c->envp != NULL) {
			for (n = 0; c->envp[n] != NULL; n++)
				;
			free(c->envp[n - 3]);
			free(c->envp[n - 2]);
			free(c->envp[n - 1]);
			free(c->envp);
		}
	}
	if (sv->sigchld != NULL)
		event_free(sv->sigchld);
	free(sv->children);
	free(sv);
}
