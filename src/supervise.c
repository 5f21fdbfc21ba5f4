/*
 * supervise.c -- spawned replica processes (see supervise.h).
 *
 * A child is keyed by its registry endpoint (its socket).  The registry
 * gives a spawn deployment new sockets when its command changes, so a
 * child never changes command: it is kept, or retired and replaced.
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
#include "monotime.h"
#include "registry.h"
#include "supervise.h"

#define RESTART_MIN_MS		100
#define RESTART_MAX_MS		5000
#define HEALTHY_AFTER_SEC	10	/* up this long: backoff starts over */
#define DRAIN_TICK_MS		100
#define TERM_GRACE_SEC		5	/* after SIGTERM, before SIGKILL */

extern char **environ;

struct child {
	struct supervise *sv;
	struct reg_endpoint *ep;
	char		*deployment;
	char		**argv;		/* a copy: the conf may go away */
	char		**envp;		/* built before fork: no malloc after */
	unsigned	 nenv;		/* ours at the end of envp */
	pid_t		 pid;
	struct event	*restart;
	unsigned	 backoff_ms;
	time_t		 started;
	int		 wanted;	/* scratch for supervise_apply */
	unsigned	 retired;	/* reload generation, 0: in service */
	int		 draining;
	double		 deadline;	/* SIGTERM by then */
	double		 kill_at;	/* SIGTERM sent: SIGKILL by then */
	struct child	*next;
};

struct supervise {
	struct event_base *base;
	struct registry	*reg;
	struct child	*children;
	struct event	*sigchld;
	struct event	*drain_ev;
	int		 stopping;
};

static void	supervise_restart_cb(evutil_socket_t, short, void *);
static void	supervise_sigchld_cb(evutil_socket_t, short, void *);
static void	supervise_drain_cb(evutil_socket_t, short, void *);

/* The socket path to clean up, or "" for a TCP replica (protocol http:
 * nothing of ours to unlink). */
static const char *
child_sock(const struct child *c)
{
	if (strncmp(c->ep->addr.text, "unix:", 5) != 0)
		return "";
	return c->ep->addr.text + 5;	/* "unix:/path" */
}

static void
strv_free(char **v, unsigned from)
{
	unsigned i;

	if (v == NULL)
		return;
	for (i = from; v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

static char **
strv_copy(char *const *v)
{
	size_t i, n = 0;
	char **out;

	while (v[n] != NULL)
		n++;
	if ((out = calloc(n + 1, sizeof(*out))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		if ((out[i] = strdup(v[i])) == NULL) {
			strv_free(out, 0);
			return NULL;
		}
	}
	return out;
}

/* Our environment (less JOURNAL_STREAM) plus the three variables that tell
 * a replica who it is. */
static char **
child_envp(struct child *c)
{
	size_t i, n = 0;
	char **envp;

	while (environ[n] != NULL)
		n++;
	if ((envp = calloc(n + 5, sizeof(*envp))) == NULL)
		return NULL;
	/* JOURNAL_STREAM is our stderr's, which a replica may not share
	 * (error_log): log.c checks it against fd 2, other code may not. */
	for (i = 0, n = 0; environ[i] != NULL; i++) {
		if (strncmp(environ[i], "JOURNAL_STREAM=", 15) != 0)
			envp[n++] = environ[i];
	}
	c->nenv = (unsigned)n;
	if (asprintf(&envp[n], "INGRESSD_LISTEN=%s", c->ep->addr.text) == -1)
		envp[n] = NULL;
	else if (asprintf(&envp[n + 1], "INGRESSD_REPLICA_ID=%s",
	    c->ep->id) == -1)
		envp[n + 1] = NULL;
	else if (asprintf(&envp[n + 2], "INGRESSD_DEPLOYMENT=%s",
	    c->deployment) == -1)
		envp[n + 2] = NULL;
	if (envp[n + 2] == NULL) {
		strv_free(envp, c->nenv);
		return NULL;
	}
	if (*child_sock(c) == '\0' && strrchr(c->ep->addr.text, ':') != NULL &&
	    asprintf(&envp[n + 3], "PORT=%s",
	    strrchr(c->ep->addr.text, ':') + 1) == -1) {
		strv_free(envp, c->nenv);
		return NULL;
	}
	return envp;
}

/*
 * A TCP replica (protocol http) learns its port from PORT in its
 * environment or from "{port}" in its arguments, replaced here: a plain
 * HTTP server (python3 -m http.server {port}) needs no wrapper.
 */
static int
child_argv_port(struct child *c)
{
	const char *port = strrchr(c->ep->addr.text, ':');
	char *p, *s;
	size_t i;

	if (*child_sock(c) != '\0' || port == NULL)
		return 0;
	port++;
	for (i = 0; c->argv[i] != NULL; i++) {
		if ((p = strstr(c->argv[i], "{port}")) == NULL)
			continue;
		if (asprintf(&s, "%.*s%s%s", (int)(p - c->argv[i]),
		    c->argv[i], port, p + 6) == -1)
			return -1;
		free(c->argv[i]);
		c->argv[i] = s;
	}
	return 0;
}

static void
child_free(struct child *c)
{
	if (c->restart != NULL)
		event_free(c->restart);
	strv_free(c->envp, c->nenv);
	strv_free(c->argv, 0);
	free(c->deployment);
	free(c);
}

static struct child *
child_new(struct supervise *sv, struct reg_endpoint *ep,
    const struct conf_deployment *cd)
{
	struct child *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->sv = sv;
	c->ep = ep;
	c->deployment = strdup(cd->name);
	c->argv = strv_copy(cd->command);
	if (c->argv != NULL && child_argv_port(c) == -1) {
		child_free(c);
		return NULL;
	}
	c->restart = evtimer_new(sv->base, supervise_restart_cb, c);
	if (c->deployment == NULL || c->argv == NULL || c->restart == NULL ||
	    (c->envp = child_envp(c)) == NULL) {
		child_free(c);
		return NULL;
	}
	return c;
}

struct supervise *
supervise_new(struct event_base *base, struct registry *reg)
{
	struct supervise *sv;

	if ((sv = calloc(1, sizeof(*sv))) == NULL)
		return NULL;
	sv->base = base;
	sv->reg = reg;
	sv->sigchld = evsignal_new(base, SIGCHLD, supervise_sigchld_cb, sv);
	sv->drain_ev = event_new(base, -1, EV_PERSIST, supervise_drain_cb, sv);
	if (sv->sigchld == NULL || sv->drain_ev == NULL) {
		supervise_free(sv);
		return NULL;
	}
	evsignal_add(sv->sigchld, NULL);
	return sv;
}

/* Found the way execvpe() will look: a path as is, a name in $PATH. */
static int
supervise_find_command(const char *cmd)
{
	const char *path = getenv("PATH"), *p, *end;
	char full[4096];
	size_t len;

	if (strchr(cmd, '/') != NULL)
		return access(cmd, X_OK);
	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; ; p = end + 1) {
		end = strchr(p, ':');
		len = end != NULL ? (size_t)(end - p) : strlen(p);
		if (snprintf(full, sizeof(full), "%.*s/%s", (int)len,
		    len ? p : ".", cmd) < (int)sizeof(full) &&
		    access(full, X_OK) == 0)
			return 0;
		if (end == NULL)
			break;
	}
	errno = ENOENT;
	return -1;
}

int
supervise_check(const struct conf *conf, char *err, size_t errlen)
{
	const struct conf_deployment *cd;
	unsigned i;

	for (i = 0; i < conf->ndeployments; i++) {
		cd = &conf->deployments[i];
		if (cd->source != CONF_SPAWN ||
		    supervise_find_command(cd->command[0]) == 0)
			continue;
		snprintf(err, errlen, "%s: deployments.%s.spawn.command: %s: %s",
		    conf->path, cd->name, cd->command[0],
		    strchr(cd->command[0], '/') == NULL && errno == ENOENT ?
		    "not found in $PATH" : strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Nothing but stdin, stdout and stderr crosses into a replica: not a
 * client connection (the client would never see it close), not a
 * listener, not a replica connection, whatever flags they were made with.
 */
static void
child_close_fds(void)
{
	long fd, max;

	if (close_range(3, ~0U, 0) == 0)
		return;
	max = sysconf(_SC_OPEN_MAX);
	for (fd = 3; fd < (max > 0 ? max : 65536); fd++)
		close((int)fd);
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
	signal(SIGUSR1, SIG_DFL);
	if ((fd = open("/dev/null", O_RDONLY)) != -1) {
		dup2(fd, 0);
		if (fd > 2)
			close(fd);
	}
	/* stdout goes where stderr goes: the error log or the journal. */
	dup2(STDERR_FILENO, STDOUT_FILENO);
	child_close_fds();
	execvpe(c->argv[0], c->argv, c->envp);
	_exit(127);
}

static int
supervise_spawn(struct child *c)
{
	pid_t parent = getpid(), pid;

	if (*child_sock(c) != '\0')
		unlink(child_sock(c));		/* a socket left by a crash */
	if ((pid = fork()) == -1) {
		log_warn("replica %s: fork", c->ep->id);
		return -1;
	}
	if (pid == 0)
		child_exec(c, parent);
	c->pid = pid;
	c->started = time(NULL);
	registry_publish_pid(c->ep, (int)pid);
	log_info("replica %s: started, pid %d, on %s", c->ep->id, (int)pid,
	    c->ep->addr.text);
	return 0;
}

static struct child *
supervise_child_of(struct supervise *sv, const struct reg_endpoint *ep)
{
	struct child *c;

	for (c = sv->children; c != NULL; c = c->next) {
		if (c->ep == ep)
			return c;
	}
	return NULL;
}

static void
supervise_unlink(struct supervise *sv, struct child *c)
{
	struct child **pp;

	for (pp = &sv->children; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (*child_sock(c) != '\0')
		unlink(child_sock(c));
	child_free(c);
}

/* One endpoint the registry wants running. */
static int
supervise_want(struct supervise *sv, struct reg_endpoint *ep,
    const struct conf_deployment *cd, char *err, size_t errlen)
{
	struct child *c;

	if ((c = supervise_child_of(sv, ep)) != NULL) {
		if (c->retired)
			log_info("replica %s: back in service", ep->id);
		c->wanted = 1;
		c->retired = 0;
		c->draining = 0;
		c->kill_at = 0;
		return 0;
	}
	if ((c = child_new(sv, ep, cd)) == NULL) {
		snprintf(err, errlen, "replica %s: out of memory", ep->id);
		return -1;
	}
	c->wanted = 1;
	c->next = sv->children;
	sv->children = c;
	if (supervise_spawn(c) == -1) {
		snprintf(err, errlen, "replica %s: fork: %s", ep->id,
		    strerror(errno));
		return -1;
	}
	return 0;
}

int
supervise_apply(struct supervise *sv, const struct conf *conf, unsigned gen,
    char *err, size_t errlen)
{
	const struct conf_deployment *cd;
	struct reg_deployment *d;
	struct child *c, *next;
	unsigned i, j;

	for (c = sv->children; c != NULL; c = c->next)
		c->wanted = 0;
	for (i = 0; (d = registry_deployment(sv->reg, i)) != NULL; i++) {
		cd = conf_find_deployment(conf, reg_deployment_name(d));
		if (cd == NULL || cd->source != CONF_SPAWN)
			continue;
		for (j = 0; j < reg_deployment_nendpoints(d); j++) {
			if (supervise_want(sv, reg_deployment_endpoint(d, j), cd,
			    err, errlen) == -1)
				return -1;
		}
	}
	for (c = sv->children; c != NULL; c = next) {
		next = c->next;
		if (c->wanted || c->retired)
			continue;
		c->retired = gen;
		evtimer_del(c->restart);
		if (c->pid == 0)
			supervise_unlink(sv, c);	/* was waiting to restart */
		else
			log_info("replica %s: retired, draining", c->ep->id);
	}
	return 0;
}

void
supervise_drain(struct supervise *sv, unsigned gen, double drain)
{
	struct timeval tv = { 0, DRAIN_TICK_MS * 1000 };
	struct child *c;
	int any = 0;

	for (c = sv->children; c != NULL; c = c->next) {
		if (c->retired == 0 || c->retired > gen || c->draining)
			continue;
		c->draining = 1;
		c->deadline = monotime_now() + drain;
		any = 1;
	}
	if (any)
		evtimer_add(sv->drain_ev, &tv);
}

/* Retired children: SIGTERM once idle (or late), SIGKILL if it lingers. */
static void
supervise_drain_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct supervise *sv = arg;
	struct child *c;
	double now = monotime_now();
	int left = 0;

	for (c = sv->children; c != NULL; c = c->next) {
		if (!c->draining || c->pid == 0)
			continue;
		left = 1;
		if (c->kill_at == 0 && (registry_in_flight(sv->reg, c->ep) == 0 ||
		    now >= c->deadline)) {
			if (now >= c->deadline)
				log_warnx("replica %s: drain timeout, stopping "
				    "it with %u request(s) in flight", c->ep->id,
				    registry_in_flight(sv->reg, c->ep));
			kill(c->pid, SIGTERM);
			c->kill_at = now + TERM_GRACE_SEC;
		} else if (c->kill_at != 0 && now >= c->kill_at) {
			log_warnx("replica %s: pid %d did not stop, killing",
			    c->ep->id, (int)c->pid);
			kill(c->pid, SIGKILL);
			c->kill_at = now + 3600;
		}
	}
	if (!left)
		evtimer_del(sv->drain_ev);
}

unsigned
supervise_running(const struct supervise *sv)
{
	const struct child *c;
	unsigned n = 0;

	for (c = sv->children; c != NULL; c = c->next)
		n += c->pid != 0 && c->retired == 0;
	return n;
}

static void
supervise_restart_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct child *c = arg;
	struct timeval retry = { 1, 0 };

	if (c->sv->stopping || c->pid != 0 || c->retired)
		return;
	if (supervise_spawn(c) == 0)
		registry_count_restart(c->ep);
	else
		evtimer_add(c->restart, &retry);
}

static struct child *
supervise_find(struct supervise *sv, pid_t pid)
{
	struct child *c;

	for (c = sv->children; c != NULL; c = c->next) {
		if (c->pid == pid)
			return c;
	}
	return NULL;
}

static void
supervise_exited(struct child *c, int status)
{
	struct timeval tv;

	if (c->retired) {
		log_info("replica %s: pid %d stopped (retired)", c->ep->id,
		    (int)c->pid);
		registry_publish_pid(c->ep, 0);
		supervise_unlink(c->sv, c);
		return;
	}
	if (WIFSIGNALED(status))
		log_warnx("replica %s: pid %d killed by signal %d", c->ep->id,
		    (int)c->pid, WTERMSIG(status));
	else if (WEXITSTATUS(status) == 127)
		log_warnx("replica %s: pid %d: could not run %s", c->ep->id,
		    (int)c->pid, c->argv[0]);
	else
		log_warnx("replica %s: pid %d exited with status %d", c->ep->id,
		    (int)c->pid, WEXITSTATUS(status));
	c->pid = 0;
	registry_publish_pid(c->ep, 0);
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
	struct child *c;
	unsigned n = 0;
	int status;

	for (c = sv->children; c != NULL; c = c->next) {
		if (c->pid == 0)
			continue;
		if (waitpid(c->pid, &status, WNOHANG) == c->pid) {
			c->pid = 0;
			registry_publish_pid(c->ep, 0);
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
	unsigned rounds = (unsigned)(grace * 100);
	struct child *c;

	sv->stopping = 1;
	evtimer_del(sv->drain_ev);
	for (c = sv->children; c != NULL; c = c->next) {
		evtimer_del(c->restart);
		if (c->pid != 0)
			kill(c->pid, SIGTERM);
	}
	while (rounds-- > 0 && supervise_alive(sv) > 0)
		nanosleep(&pause, NULL);
	for (c = sv->children; c != NULL; c = c->next) {
		if (c->pid != 0) {
			log_warnx("replica %s: pid %d did not stop, killing",
			    c->ep->id, (int)c->pid);
			kill(c->pid, SIGKILL);
			waitpid(c->pid, NULL, 0);
			c->pid = 0;
		}
		if (*child_sock(c) != '\0')
		unlink(child_sock(c));
	}
}

void
supervise_free(struct supervise *sv)
{
	struct child *c, *next;

	if (sv == NULL)
		return;
	for (c = sv->children; c != NULL; c = next) {
		next = c->next;
		child_free(c);
	}
	if (sv->sigchld != NULL)
		event_free(sv->sigchld);
	if (sv->drain_ev != NULL)
		event_free(sv->drain_ev);
	free(sv);
}
