/*
 * b64.c -- base64 encode and decode (see b64.h).
 */
#include <stdlib.h>
#include <string.h>

#include "b64.h"

static const char b64_alpha[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *
b64_encode(const void *in, size_t len)
{
	const unsigned char *p = in;
	char *out, *o;
	size_t i;
	unsigned v;

	if ((out = malloc((len + 2) / 3 * 4 + 1)) == NULL)
		return NULL;
	for (i = 0, o = out; i + 2 < len; i += 3) {
		v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		*o++ = b64_alpha[v >> 18];
		*o++ = b64_alpha[(v >> 12) & 63];
		*o++ = b64_alpha[(v >> 6) & 63];
		*o++ = b64_alpha[v & 63];
	}
	if (i < len) {
		v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 :
		    0);
		*o++ = b64_alpha[v >> 18];
		*o++ = b64_alpha[(v >> 12) & 63];
		*o++ = i + 1 < len ? b64_alpha[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

static int
b64_val(char c)
{
	const char *p;

	if (c == '\0' || (p = strchr(b64_alpha, c)) == NULL)
		return -1;
	return (int)(p - b64_alpha);
}

char *
b64_decode(const char *s, size_t *outlen)
{
	size_t len = strlen(s), i, n = 0;
	unsigned v;
	char *out;
	int a, b, c, d;

	if (len % 4 != 0 || (out = malloc(len / 4 * 3 + 1)) == NULL)
		return NULL;
	for (i = 0; i < len; i += 4) {
		a = b64_val(s[i]);
		b = b64_val(s[i + 1]);
		c = s[i + 2] == '=' && i + 4 == len ? 0 : b64_val(s[i + 2]);
		d = s[i + 3] == '=' && i + 4 == len ? 0 : b64_val(s[i + 3]);
		if (a < 0 || b < 0 || c < 0 || d < 0 ||
		    (s[i + 2] == '=' && s[i + 3] != '=')) {
			free(out);
			return NULL;
		}
		v = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)c << 6 |
		    (unsigned)d;
		out[n++] = (char)(v >> 16);
		if (s[i + 2] != '=')
			out[n++] = (char)(v >> 8 & 0xff);
		if (s[i + 3] != '=')
			out[n++] = (char)(v & 0xff);
	}
	out[n] = '\0';
	*outlen = n;
	return out;
}
