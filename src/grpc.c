/*
 * grpc.c -- gRPC status rules for the HTTP/2 edge (see grpc.h).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "grpc.h"

int
grpc_is_grpc(const char *ct, size_t len)
{
	if (len < 16 || strncasecmp(ct, "application/grpc", 16) != 0)
		return 0;
	/* Exactly that, or a subtype ("+proto"), or parameters (";"). */
	return len == 16 || ct[16] == '+' || ct[16] == ';';
}

int
grpc_timeout_parse(const char *v, size_t len, double *seconds)
{
	double n = 0, unit;
	size_t i;

	if (len < 2 || len > 9)
		return -1;
	for (i = 0; i < len - 1; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		n = n * 10 + (v[i] - '0');
	}
	switch (v[len - 1]) {
	case 'H': unit = 3600; break;
	case 'M': unit = 60; break;
	case 'S': unit = 1; break;
	case 'm': unit = 1e-3; break;
	case 'u': unit = 1e-6; break;
	case 'n': unit = 1e-9; break;
	default: return -1;
	}
	*seconds = n * unit;
	return 0;
}

/* http-grpc-status-mapping.md: what a gRPC client makes of an HTTP
 * status when no grpc-status came. */
int
grpc_from_http(int status)
{
	switch (status) {
	case 200: return GRPC_OK;
	case 400: return GRPC_INTERNAL;
	case 401: return GRPC_UNAUTHENTICATED;
	case 403: return GRPC_PERMISSION_DENIED;
	case 404: return GRPC_UNIMPLEMENTED;
	case 429: case 502: case 503: case 504: return GRPC_UNAVAILABLE;
	default: return GRPC_UNKNOWN;
	}
}

/*
 * Our own errors: the reason is more precise than the HTTP status.  A
 * replica lost before it answered is UNAVAILABLE (the call may be
 * retried); lost after response bytes went out the message stream is cut,
 * INTERNAL.  Size limits (413, 431) are RESOURCE_EXHAUSTED.
 */
int
grpc_from_local(int status, enum reqlog_reject why, int started)
{
	switch (why) {
	case REJECT_QUEUE_FULL:
	case REJECT_QUEUE_TIMEOUT:
	case REJECT_NO_REPLICA:
		return GRPC_UNAVAILABLE;
	case REJECT_DEADLINE:
		return GRPC_DEADLINE_EXCEEDED;
	case REJECT_REPLICA_FAILED:
		return started ? GRPC_INTERNAL : GRPC_UNAVAILABLE;
	default:
		break;
	}
	switch (status) {
	case 404: return GRPC_UNIMPLEMENTED;
	case 408: case 504: return GRPC_DEADLINE_EXCEEDED;
	case 413: case 431: return GRPC_RESOURCE_EXHAUSTED;
	case 502: return started ? GRPC_INTERNAL : GRPC_UNAVAILABLE;
	case 503: return GRPC_UNAVAILABLE;
	default: return grpc_from_http(status);
	}
}

/* PROTOCOL-HTTP2.md: bytes outside 0x20..0x7e, and '%', as %XX. */
size_t
grpc_message_encode(const char *msg, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)msg;
	size_t n = 0;

	if (cap == 0)
		return 0;
	for (; *p != '\0'; p++) {
		if (*p >= 0x20 && *p <= 0x7e && *p != '%') {
			if (n + 1 >= cap)
				break;
			out[n++] = (char)*p;
		} else {
			if (n + 3 >= cap)
				break;
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		}
	}
	out[n] = '\0';
	return n;
}
