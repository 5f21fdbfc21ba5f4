/*
 * grpc.h -- the gRPC rules the HTTP/2 edge applies; pure, no I/O.
 *
 * Status codes (grpc/doc/statuscodes.md), the grpc-timeout header, the
 * HTTP to gRPC status mapping (grpc/doc/http-grpc-status-mapping.md) and
 * grpc-message's percent-encoding (grpc/doc/PROTOCOL-HTTP2.md).
 */
#ifndef INGRESSD_GRPC_H
#define INGRESSD_GRPC_H

#include <stddef.h>

#include "reqlog.h"

enum grpc_code {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
	GRPC_UNAUTHENTICATED = 16,
};

/* content-type application/grpc, application/grpc+proto, +json... */
int	grpc_is_grpc(const char *ctype, size_t len);
/* "100m" -> 0.1 s.  0, or -1 if malformed (1-8 digits and one of
 * H M S m u n). */
int	grpc_timeout_parse(const char *v, size_t len, double *seconds);
/* The status for an HTTP status ingressd or a replica answered with. */
int	grpc_from_http(int status);
/* The status for an error ingressd itself produced: its HTTP status and
 * the reason it counted (queue full, deadline...); started: response
 * bytes had gone to the client already. */
int	grpc_from_local(int status, enum reqlog_reject, int started);
/* Percent-encode msg for grpc-message into out (cap bytes, NUL ends it);
 * returns the length, cut short on a whole escape if it does not fit. */
size_t	grpc_message_encode(const char *msg, char *out, size_t cap);

#endif
