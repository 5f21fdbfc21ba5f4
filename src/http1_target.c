/*
 * http1_target.c -- the request target's forms and the Host syntax.
 *
 * Absolute-form (RFC 9112 3.2.2) is what a client sends to a proxy; a
 * server MUST accept it too.  Its authority then stands for Host: the
 * caller routes on it and forwards the path and query in origin-form.
 */

#include <string.h>
#include <strings.h>

#include "http1_target.h"

static int
is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/*
 * RFC 3986 reg-name, IP-literal or IPv4, with an optional port.  Lenient
 * on the shape (":" may repeat) as Host always was here; strict on the
 * characters, so "/", "@", spaces and controls never pass.
 */
int
http1_host_valid(const char *s, size_t len)
{
	unsigned char	 c;
	size_t		 i;

	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (is_alpha(c) || is_digit(c))
			continue;
		if (c == '\0' || strchr("-._~!$&'()*+,;=%:[]", c) == NULL)
			return 0;
	}
	return 1;
}

/* "http" or "https", any case, followed by "://"; the length or 0. */
static size_t
scheme_len(const char *t, size_t len, const char **why)
{
	size_t	 i = 0;

	while (i < len && (is_alpha((unsigned char)t[i]) ||
	    (i > 0 && (is_digit((unsigned char)t[i]) || t[i] == '+' ||
	    t[i] == '-' || t[i] == '.'))))
		i++;
	if (i == 0 || i == len || t[i] != ':') {
		*why = "request target not in origin-form";
		return 0;
	}
	if (!((i == 4 && strncasecmp(t, "http", 4) == 0) ||
	    (i == 5 && strncasecmp(t, "https", 5) == 0))) {
		*why = "request target scheme not http";
		return 0;
	}
	if (len - i < 3 || strncmp(t + i, "://", 3) != 0) {
		*why = "request target without authority";
		return 0;
	}
	return i + 3;
}

int
http1_target_absolute(const char *t, size_t len, struct http1_absolute *a,
    const char **why)
{
	size_t	 i, start;

	if ((start = scheme_len(t, len, why)) == 0)
		return -1;
	for (i = start; i < len && t[i] != '/' && t[i] != '?'; i++)
		;
	a->authority = t + start;
	a->authority_len = i - start;
	a->rest = t + i;
	a->rest_len = len - i;
	if (memchr(a->authority, '@', a->authority_len) != NULL) {
		*why = "userinfo in request target";
		return -1;
	}
	/* RFC 9110 4.2.1: an http URI with an empty host is invalid. */
	if (a->authority_len == 0 || a->authority[0] == ':' ||
	    !http1_host_valid(a->authority, a->authority_len)) {
		*why = "invalid authority in request target";
		return -1;
	}
	return 0;
}
