/*
 * http1_target.h -- the request target's forms and the Host syntax
 * (RFC 9112 3.2, 3.2.2), as pure functions over bytes.
 */
#ifndef INGRESSD_HTTP1_TARGET_H
#define INGRESSD_HTTP1_TARGET_H

#include <stddef.h>

/* The parts of an absolute-form target, pointing into it. */
struct http1_absolute {
	const char	*authority;	/* "host[:port]" */
	size_t		 authority_len;
	const char	*rest;		/* path and query, may be "" or "?q" */
	size_t		 rest_len;
};

/*
 * An absolute-form target with scheme http or https (any case), an
 * authority without userinfo that passes http1_host_valid, and an optional
 * path and query.  Returns 0, or -1 with *why set for a 400.
 */
int	 http1_target_absolute(const char *t, size_t len,
	    struct http1_absolute *, const char **why);
/* RFC 3986 reg-name, IP-literal or IPv4, with an optional port. */
int	 http1_host_valid(const char *s, size_t len);

#endif
