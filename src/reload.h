/*
 * reload.h -- SIGHUP: load, check and switch to a new conf.
 */
#ifndef INGRESSD_RELOAD_H
#define INGRESSD_RELOAD_H

struct daemon;
struct reload_job;

void	reload_run(struct daemon *);
void	reload_job_free(struct reload_job *);

#endif
