/*
 * daemon.h -- the running daemon: start, status, signals, stop.
 *
 * Private to the daemon's own files (main.c, daemon.c, reload.c): the
 * struct is the main thread's state.
 */
#ifndef INGRESSD_DAEMON_H
#define INGRESSD_DAEMON_H

#include <stddef.h>

#include "conf.h"

#define INGRESSD_VERSION	"0.1.0"
#define NSIGNALS		5

struct reload_job;
struct tls_slot;

struct daemon {
	const char	*path;
	int		 debug;
	struct worker_snap *snap;	/* the running conf */
	const struct conf *conf;	/* snap's */
	struct worker_snap *boot;	/* the conf we started with: what runs
					 * of what a reload cannot change */
	struct event_base *base;
	struct registry	*reg;
	struct supervise *sv;
	struct dns	*dns;		/* dns deployments' lookups */
	struct dnssrv	*dnssrv;	/* dns_srv deployments' lookups */
	struct etcd	*etcd;		/* registry.etcd's watch, or NULL */
	struct worker	*workers[CONF_MAX_WORKERS];
	struct tls_slot	**tls;		/* per boot listen[i]; NULL: plain */
	unsigned	 ntls;
	struct tls_slot	*admin_tls;	/* boot admin's; NULL: plain */
	unsigned	 nworkers;
	unsigned	 started;	/* worker threads running */
	char		 runtime_dir[256];
	int		 made_runtime_dir;
	unsigned	 gen;		/* reloads applied */
	struct reload_job *jobs;	/* reloads not yet seen by every worker */
	int		 stopping;
	double		 drain_deadline;
	struct event	*sigs[NSIGNALS];
	struct event	*drain_ev;
	struct event	*watchdog_ev;
	struct event	*status_ev;
	unsigned	 beats[CONF_MAX_WORKERS];
	/* The stall watchdog (timeouts.worker_stall): per worker, the beats
	 * seen last, since when they have not moved, and whether said. */
	struct event	*stall_ev;
	unsigned	 stall_beats[CONF_MAX_WORKERS];
	double		 stall_since[CONF_MAX_WORKERS];
	int		 stall_told[CONF_MAX_WORKERS];
	/* Called when every reload has reached every worker: reload.c
	 * tells the daemon through this hook rather than calling up. */
	void		(*ready)(struct daemon *);
};

int	daemon_init(struct daemon *);
int	daemon_start(struct daemon *, char *, size_t);
void	daemon_status(struct daemon *);
void	daemon_timers(struct daemon *);
void	daemon_stop(struct daemon *);
void	daemon_free(struct daemon *);

#endif
