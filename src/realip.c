/*
 * realip.c -- the client address behind trusted proxies.
 *
 * X-Forwarded-For is a list each proxy appends its peer to, so only the
 * entries added by proxies we trust are facts; the first one from the
 * right that is not a trusted proxy is the client.  Anything unparsable on
 * the way means the chain cannot be followed: the peer stays the client.
 */

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hfield.h"
#include "http1.h"
#include "realip.h"

#define REALIP_TEXT	64

/* An IPv4 or IPv6 address as 16 bytes (IPv4 mapped), 0; -1 if neither. */
static int
realip_addr(const char *s, uint8_t out[16])
{
	struct in_addr	 in;

	if (inet_pton(AF_INET6, s, out) == 1)
		return 0;
	if (inet_pton(AF_INET, s, &in) != 1)
		return -1;
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, &in, 4);
	return 0;
}

static int
realip_is_v4(const char *s)
{
	return strchr(s, ':') == NULL;
}

int
realip_cidr_parse(const char *s, struct realip_cidr *c)
{
	char		 addr[REALIP_TEXT], *end;
	const char	*slash = strchr(s, '/');
	size_t		 n = slash != NULL ? (size_t)(slash - s) : strlen(s);
	unsigned long	 bits;
	unsigned	 max, i;

	if (n == 0 || n >= sizeof addr)
		return -1;
	memcpy(addr, s, n);
	addr[n] = '\0';
	if (realip_addr(addr, c->addr) == -1)
		return -1;
	max = realip_is_v4(addr) ? 32 : 128;
	bits = max;
	if (slash != NULL) {
		if (slash[1] < '0' || slash[1] > '9')
			return -1;
		bits = strtoul(slash + 1, &end, 10);
		if (*end != '\0' || bits > max)
			return -1;
	}
	c->bits = (unsigned)bits + (128 - max);
	/* Host bits must be zero, as nginx insists: "10.1.2.3/8" is a typo. */
	for (i = c->bits; i < 128; i++) {
		if (c->addr[i / 8] & (0x80 >> (i % 8)))
			return -1;
	}
	return 0;
}

static int
realip_in(const struct realip_cidr *c, const uint8_t a[16])
{
	unsigned	 full = c->bits / 8, rest = c->bits % 8;

	if (memcmp(c->addr, a, full) != 0)
		return 0;
	return rest == 0 ||
	    ((c->addr[full] ^ a[full]) & (0xff00 >> rest) & 0xff) == 0;
}

static int
realip_match(const struct realip_cidr *list, size_t n, const uint8_t a[16])
{
	size_t	 i;

	for (i = 0; i < n; i++) {
		if (realip_in(&list[i], a))
			return 1;
	}
	return 0;
}

int
realip_trusted(const struct realip_cidr *list, size_t n, const char *addr)
{
	uint8_t	 a[16];

	return realip_addr(addr, a) == 0 && realip_match(list, n, a);
}

/*
 * The entry of one field value that ends at *end, walking left: copied to
 * out (trimmed) and *end moved before it.  -1 when it is empty or too long.
 */
static int
realip_prev(const char *v, size_t *end, char *out, size_t len)
{
	size_t	 e = *end, b;

	while (e > 0 && (v[e - 1] == ' ' || v[e - 1] == '\t'))
		e--;
	b = e;
	while (b > 0 && v[b - 1] != ',' && v[b - 1] != ' ' && v[b - 1] != '\t')
		b--;
	if (b == e || e - b >= len)
		return -1;
	memcpy(out, v + b, e - b);
	out[e - b] = '\0';
	while (b > 0 && (v[b - 1] == ' ' || v[b - 1] == '\t'))
		b--;
	*end = b > 0 && v[b - 1] == ',' ? b - 1 : b;
	return 0;
}

int
realip_client(const struct realip_cidr *list, size_t n,
    const struct http1_request *r, char *buf, size_t len)
{
	char		 ent[REALIP_TEXT], last[REALIP_TEXT] = "";
	uint8_t		 a[16];
	unsigned	 i;
	size_t		 end;

	/* Repeated fields are one list, in order (RFC 9110 5.3). */
	for (i = r->nfields; i-- > 0; ) {
		if (!hfield_name_is(r->fields[i].name, r->fields[i].name_len,
		    "x-forwarded-for"))
			continue;
		end = r->fields[i].value_len;
		while (end > 0) {
			if (realip_prev(r->fields[i].value, &end, ent,
			    sizeof ent) == -1 || realip_addr(ent, a) == -1)
				return -1;
			memcpy(last, ent, sizeof ent);
			if (!realip_match(list, n, a))
				goto found;
		}
	}
	if (last[0] == '\0')
		return -1;
found:
	snprintf(buf, len, "%s", last);
	return 0;
}
