/*
 * clientlim.c -- open connections per client address (see clientlim.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "clientlim.h"

#define CLIENTLIM_BUCKETS	4096

struct client {
	uint64_t	 key;
	unsigned	 n;
	struct client	*next;
};

static pthread_mutex_t clientlim_lock = PTHREAD_MUTEX_INITIALIZER;
static struct client *clientlim_table[CLIENTLIM_BUCKETS];

/* Non-zero for IP clients: the family in the top bit keeps v4 and v6 apart. */
static uint64_t
clientlim_key(const struct sockaddr *sa)
{
	const struct sockaddr_in *s4;
	const struct sockaddr_in6 *s6;
	uint64_t k;

	switch (sa->sa_family) {
	case AF_INET:
		s4 = (const struct sockaddr_in *)sa;
		return (1ULL << 63) | (1ULL << 40) | ntohl(s4->sin_addr.s_addr);
	case AF_INET6:
		s6 = (const struct sockaddr_in6 *)sa;
		memcpy(&k, s6->sin6_addr.s6_addr, 8);	/* the /64 */
		return k | 1;	/* never 0; collisions only merge counts */
	default:
		return 0;	/* unix sockets: not limited */
	}
}

static struct client **
clientlim_find(uint64_t key)
{
	struct client **pp;

	pp = &clientlim_table[(key ^ (key >> 29)) % CLIENTLIM_BUCKETS];
	while (*pp != NULL && (*pp)->key != key)
		pp = &(*pp)->next;
	return pp;
}

int
clientlim_open(const struct sockaddr *sa, unsigned limit, uint64_t *keyp)
{
	struct client **pp, *c;
	uint64_t key;
	int rv = 0;

	*keyp = 0;
	if (limit == 0 || (key = clientlim_key(sa)) == 0)
		return 0;
	pthread_mutex_lock(&clientlim_lock);
	pp = clientlim_find(key);
	if ((c = *pp) == NULL && (c = calloc(1, sizeof(*c))) != NULL) {
		c->key = key;
		*pp = c;
	}
	if (c == NULL)
		rv = 0;			/* out of memory: do not refuse */
	else if (c->n >= limit)
		rv = -1;
	else {
		c->n++;
		*keyp = key;
	}
	pthread_mutex_unlock(&clientlim_lock);
	return rv;
}

void
clientlim_close(uint64_t key)
{
	struct client **pp, *c;

	if (key == 0)
		return;
	pthread_mutex_lock(&clientlim_lock);
	pp = clientlim_find(key);
	if ((c = *pp) != NULL && --c->n == 0) {
		*pp = c->next;
		free(c);
	}
	pthread_mutex_unlock(&clientlim_lock);
}
