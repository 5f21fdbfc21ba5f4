/*
 * conf_walk.c -- the table walker and typed leaf validators (conf_walk.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "conf_walk.h"

/*
 * Keys and values quoted in a message come from the file: control
 * characters are replaced so the message stays one line in the log.
 */
void
conf_sanitize(char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	}
}

/* Write "FILE: key.path: message" into the caller's buffer; returns -1. */
int
conf_error(struct conf_ctx *ctx, const char *fmt, ...)
{
	char	msg[512];
	va_list	ap;

	if (ctx->errlen == 0)
		return (-1);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (ctx->kplen == 0)
		snprintf(ctx->err, ctx->errlen, "%s: %s", ctx->path, msg);
	else
		snprintf(ctx->err, ctx->errlen, "%s: %s: %s", ctx->path,
		    ctx->kpath, msg);
	conf_sanitize(ctx->err);
	return (-1);
}

/* Key paths longer than the buffer are cut short; conf_pop still works. */
size_t
conf_push(struct conf_ctx *ctx, const char *name)
{
	size_t	old = ctx->kplen;
	int	n;

	n = snprintf(ctx->kpath + old, sizeof ctx->kpath - old, "%s%s",
	    old == 0 ? "" : ".", name);
	if (n > 0)
		ctx->kplen += (size_t)n;
	if (ctx->kplen >= sizeof ctx->kpath)
		ctx->kplen = sizeof ctx->kpath - 1;
	return (old);
}

size_t
conf_push_index(struct conf_ctx *ctx, size_t i)
{
	size_t	old = ctx->kplen;
	int	n;

	n = snprintf(ctx->kpath + old, sizeof ctx->kpath - old, "[%zu]", i);
	if (n > 0)
		ctx->kplen += (size_t)n;
	if (ctx->kplen >= sizeof ctx->kpath)
		ctx->kplen = sizeof ctx->kpath - 1;
	return (old);
}

void
conf_pop(struct conf_ctx *ctx, size_t old)
{
	ctx->kplen = old;
	ctx->kpath[old] = '\0';
}

/*
 * Validate one object against its table and fill base.  Unknown keys are
 * reported first, in the file's order, so a typo is never hidden behind a
 * "missing key" error.
 */
int
conf_walk(struct conf_ctx *ctx, const struct conf_key *keys, json_t *obj,
    void *base)
{
	const struct conf_key	*k;
	const char		*name;
	json_t			*v;
	size_t			 old;
	int			 rc;

	if (!json_is_object(obj))
		return (conf_error(ctx, "must be an object"));
	json_object_foreach(obj, name, v) {
		for (k = keys; k->name != NULL; k++) {
			if (strcmp(k->name, name) == 0)
				break;
		}
		if (k->name == NULL) {
			conf_push(ctx, name);
			return (conf_error(ctx, "unknown key"));
		}
	}
	for (k = keys; k->name != NULL; k++) {
		old = conf_push(ctx, k->name);
		if ((v = json_object_get(obj, k->name)) == NULL) {
			if (k->flags & CONF_REQUIRED)
				return (conf_error(ctx, "required key missing"));
			conf_pop(ctx, old);
			continue;
		}
		rc = k->fn(ctx, k, v, base);
		if (rc == -1)
			return (-1);
		conf_pop(ctx, old);
	}
	return (0);
}

char *
conf_strdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		abort();	/* conf is loaded at start-up: no way on */
	return (p);
}

static int
conf_int_value(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    long long *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < k->min ||
	    json_integer_value(v) > k->max)
		return (conf_error(ctx, "must be an integer in %lld..%lld",
		    k->min, k->max));
	*out = json_integer_value(v);
	return (0);
}

int
conf_uint(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	long long	n = 0;

	if (conf_int_value(ctx, k, v, &n) == -1)
		return (-1);
	*(unsigned *)((char *)base + k->off) = (unsigned)n;
	return (0);
}

int
conf_size(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	long long	n = 0;

	if (conf_int_value(ctx, k, v, &n) == -1)
		return (-1);
	*(size_t *)((char *)base + k->off) = (size_t)n;
	return (0);
}

/* Seconds: an integer or a real; 0 only where it means "the default". */
int
conf_seconds(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	double	d;

	d = json_is_number(v) ? json_number_value(v) : -1;
	if (k->flags & CONF_ZERO_OK) {
		if (!(d >= 0 && d <= CONF_MAX_SECONDS))
			return (conf_error(ctx, "must be a number of seconds "
			    "in 0..%d", CONF_MAX_SECONDS));
	} else if (!(d > 0 && d <= CONF_MAX_SECONDS))
		return (conf_error(ctx, "must be a number of seconds > 0 and "
		    "<= %d", CONF_MAX_SECONDS));
	*(double *)((char *)base + k->off) = d;
	return (0);
}

int
conf_bool(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	if (!json_is_boolean(v))
		return (conf_error(ctx, "must be true or false"));
	*(int *)((char *)base + k->off) = json_is_true(v);
	return (0);
}

int
conf_string(struct conf_ctx *ctx, const struct conf_key *k, json_t *v,
    void *base)
{
	char	**p = (char **)((char *)base + k->off);

	if (!json_is_string(v) || json_string_length(v) == 0)
		return (conf_error(ctx, "must be a non-empty string"));
	free(*p);
	*p = conf_strdup(json_string_value(v));
	return (0);
}

void
conf_free_strv(char **v, size_t n)
{
	size_t	i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
