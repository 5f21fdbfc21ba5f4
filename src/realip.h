/*
 * realip.h -- the client address behind trusted proxies (X-Forwarded-For),
 * as nginx's realip module with real_ip_recursive on.  Pure: text in,
 * text out.
 */
#ifndef INGRESSD_REALIP_H
#define INGRESSD_REALIP_H

#include <stddef.h>
#include <stdint.h>

struct http1_request;

/* One network: an IPv4 address is kept as its IPv4-mapped IPv6 form. */
struct realip_cidr {
	uint8_t		 addr[16];
	unsigned	 bits;		/* 0..128 */
};

/* "10.0.0.0/8", "::1", "fd00::/8"; a bare address is a /32 or /128. */
int	 realip_cidr_parse(const char *, struct realip_cidr *);
/* The address text (IPv4 or IPv6) is in one of the n networks. */
int	 realip_trusted(const struct realip_cidr *, size_t n, const char *addr);
/*
 * The client of a request that came from a trusted peer: the rightmost
 * X-Forwarded-For entry that is not trusted itself (the leftmost when all
 * are).  Writes it to buf and returns 0; -1, buf untouched, when there is
 * no X-Forwarded-For or an entry is not an IP address.
 */
int	 realip_client(const struct realip_cidr *, size_t n,
	    const struct http1_request *, char *buf, size_t len);

#endif
