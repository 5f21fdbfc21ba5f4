/*
 * fuzz_http1.c -- libFuzzer target for the request parser.
 *
 * The first two bytes pick the limits, which callbacks refuse (each at a
 * point fixed by the bytes, not by how they were fed) and a split point;
 * the rest is what a client sends.  It is fed three ways (whole, cut in two, one byte at a
 * time), as a caller would: after HTTP1_DONE, http1_next() and go on from
 * *consumed.  Besides "no crash", it checks the contract: consumed never
 * exceeds what was given, MORE takes everything, body pieces point into the
 * fed bytes and add up to Content-Length, heads hold only what the checks
 * allow, and the verdict (events, message ends, final status and reason)
 * is the same however the bytes were split.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http1.h"
#include "tchar.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* One run's events, folded into a hash so runs can be compared. */
struct run {
	uint64_t	 hash;
	int		 in_body;
	const char	*lo, *hi;	/* the bytes of the current feed */
	unsigned	 refuse;	/* REFUSE_* */
	int64_t		 want_body;	/* Content-Length of this message */
	uint64_t	 got_body;
	unsigned	 heads, ends, dones;
	enum http1_state state;
	int		 status;
	const char	*reason;
};

#define REFUSE_HEAD	0x02	/* on_head: 404 on the second message */
#define REFUSE_BODY	0x04	/* on_body: 500 once 16 bytes came */
#define REFUSE_END	0x08	/* on_end: 503 on the third message */

static void
mix(struct run *r, const void *p, size_t n)
{
	const unsigned char	*b = p;
	size_t			 i;

	for (i = 0; i < n; i++) {
		r->hash ^= b[i];
		r->hash *= 0x100000001b3ULL;
	}
}

static void
mix_str(struct run *r, const char *s)
{
	mix(r, s, strlen(s) + 1);
}

static void
mix_int(struct run *r, int64_t v)
{
	mix(r, &v, sizeof v);
}

static void
check_head(const struct http1_request *q)
{
	unsigned	 i;
	size_t		 j;

	if (strlen(q->method) != q->method_len ||
	    strlen(q->target) != q->target_len || q->path_len > q->target_len)
		abort();
	if (q->target[0] != '/' && strcmp(q->target, "*") != 0)
		abort();
	if (q->major != 1 || (q->minor != 0 && q->minor != 1))
		abort();
	if (q->minor == 1 && q->host == NULL)
		abort();
	if (q->chunked && q->content_length != -1)
		abort();
	if (q->has_body != (q->chunked || q->content_length > 0))
		abort();
	for (i = 0; i < q->nfields; i++) {
		const struct http1_field *f = &q->fields[i];

		if (f->name_len == 0 || strlen(f->name) != f->name_len ||
		    strlen(f->value) != f->value_len)
			abort();
		for (j = 0; j < f->name_len; j++)
			if (!tchar_is((unsigned char)f->name[j]))
				abort();
		for (j = 0; j < f->value_len; j++) {
			unsigned char c = f->value[j];

			if ((c < 0x20 && c != '\t') || c == 0x7f)
				abort();
		}
		if (f->value_len != 0 && (strchr(" \t", f->value[0]) ||
		    strchr(" \t", f->value[f->value_len - 1])))
			abort();
	}
}

static int
on_head(void *arg, struct http1_request *q)
{
	struct run	*r = arg;
	unsigned	 i;

	check_head(q);
	r->heads++;
	r->in_body = 0;
	r->want_body = q->content_length;
	r->got_body = 0;
	mix_str(r, "H");
	mix_str(r, q->method);
	mix_str(r, q->target);
	mix_int(r, q->content_length);
	mix_int(r, q->chunked << 4 | q->keep_alive << 3 |
	    q->expect_continue << 2 | q->is_head << 1 | q->minor);
	for (i = 0; i < q->nfields; i++) {
		mix_str(r, q->fields[i].name);
		mix_str(r, q->fields[i].value);
	}
	return (r->refuse & REFUSE_HEAD) && r->heads == 2 ? 404 : 0;
}

static int
on_body(void *arg, const char *p, size_t n)
{
	struct run	*r = arg;

	if (p < r->lo || p > r->hi || n > (size_t)(r->hi - p))
		abort();
	if (!r->in_body)
		mix_str(r, "B");
	r->in_body = 1;
	if ((r->refuse & REFUSE_BODY) && r->got_body + n >= 16) {
		/* Refuse at byte 16 of the body, wherever the piece ends. */
		mix(r, p, 16 - r->got_body);
		return 500;
	}
	mix(r, p, n);
	r->got_body += n;
	return 0;
}

static int
on_end(void *arg)
{
	struct run	*r = arg;

	if (r->want_body >= 0 && r->got_body != (uint64_t)r->want_body)
		abort();
	r->ends++;
	r->in_body = 0;
	mix_str(r, "E");
	return (r->refuse & REFUSE_END) && r->ends == 3 ? 503 : 0;
}

static const struct http1_callbacks cbs = { on_head, on_body, on_end };

/* Feed like a client connection: pieces of `step`, or two cut at `split`. */
static void
drive(const struct http1_limits *lim, unsigned refuse, struct run *r,
    const char *s, size_t n, size_t step, size_t split)
{
	struct http1	*h;
	size_t		 start = 0, avail, c;
	unsigned	 guard;

	memset(r, 0, sizeof *r);
	r->hash = 0xcbf29ce484222325ULL;
	r->refuse = refuse;
	if ((h = http1_new(lim, &cbs, r)) == NULL)
		abort();
	avail = split != 0 ? split : (step < n ? step : n);
	for (guard = 0; guard <= 2 * n + 2; guard++) {
		r->lo = s + start;
		r->hi = s + avail;
		r->state = http1_feed(h, s + start, avail - start, &c);
		if (c > avail - start)
			abort();
		if (r->state == HTTP1_ERROR)
			break;
		if (r->state == HTTP1_DONE) {
			start += c;
			r->dones++;
			if (r->dones != r->ends || !http1_idle(h))
				abort();
			mix_str(r, "D");
			mix_int(r, (int64_t)start);
			/* Stopped: nothing more until http1_next(). */
			if (http1_feed(h, s + start, avail - start, &c) !=
			    HTTP1_DONE || c != 0)
				abort();
			http1_next(h);
			if (http1_request(h) != NULL)
				abort();
			if (start < avail)
				continue;
		} else {
			if (c != avail - start)
				abort();
			start = avail;
		}
		if (avail == n)
			break;
		avail = split != 0 ? n : (avail + step < n ? avail + step : n);
	}
	if (r->state != HTTP1_ERROR) {
		/* EOF now: fine when idle, an error mid-message. */
		if ((http1_finish(h) == HTTP1_MORE) != http1_idle(h))
			abort();
		mix_int(r, http1_idle(h));
	} else {
		if (http1_error_status(h) < 400 || http1_error_status(h) > 599)
			abort();
		if (http1_error_reason(h)[0] == '\0')
			abort();
		if (http1_idle(h) || http1_feed(h, s, n, &c) != HTTP1_ERROR)
			abort();
	}
	r->status = http1_error_status(h);
	r->reason = http1_error_reason(h);
	mix_int(r, r->status);
	mix_str(r, r->reason);
	http1_free(h);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct http1_limits small = { 64, 256, 6, 100 };
	static const struct http1_limits big = { 8192, 32768, 100, 1 << 20 };
	const struct http1_limits *lim;
	struct run	 whole, cut, bytes;
	const char	*s;
	size_t		 n, split;
	unsigned	 refuse;

	if (size < 2)
		return 0;
	lim = (data[0] & 1) ? &small : &big;
	refuse = data[0] & (REFUSE_HEAD | REFUSE_BODY | REFUSE_END);
	s = (const char *)data + 2;
	n = size - 2;
	split = n != 0 ? ((size_t)(data[0] >> 4) << 8 | data[1]) % n : 0;

	drive(lim, refuse, &whole, s, n, n, 0);
	drive(lim, refuse, &cut, s, n, n, split);
	if (whole.hash != cut.hash || whole.status != cut.status)
		abort();
	if (n <= 4096) {
		drive(lim, refuse, &bytes, s, n, 1, 0);
		if (whole.hash != bytes.hash)
			abort();
	}
	return 0;
}
