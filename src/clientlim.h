/*
 * clientlim.h -- open connections per client address, across workers.
 *
 * A client is its IPv4 address or its IPv6 /64 (one host's usual share).
 * Touched only at accept and close, never per request, so one mutex over
 * a small hash table is enough.  With a limit of 0 nothing is counted.
 */
#ifndef INGRESSD_CLIENTLIM_H
#define INGRESSD_CLIENTLIM_H

#include <stdint.h>
#include <sys/socket.h>

/* 0 and *key set (0: not counted), or -1 when the client is at limit. */
int	clientlim_open(const struct sockaddr *, unsigned limit, uint64_t *key);
void	clientlim_close(uint64_t key);

#endif
