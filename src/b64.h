/*
 * b64.h -- standard base64 (RFC 4648, with padding), as etcd's JSON
 * gateway encodes keys and values.
 */
#ifndef INGRESSD_B64_H
#define INGRESSD_B64_H

#include <stddef.h>

/* A NUL-terminated encoding of len bytes (free()), or NULL: no memory. */
char	*b64_encode(const void *, size_t len);
/*
 * The decoded bytes, NUL-terminated (free()), their count in *outlen; NULL
 * when s is not base64 or no memory.
 */
char	*b64_decode(const char *s, size_t *outlen);

#endif
