/*
 * fuzz_hup.c -- libFuzzer target for the HTTP upstream edge's response
 * parser (src/hup_parse.c).
 *
 * The first byte says whether the request was HEAD and where to cut the
 * input; the rest is fed whole, then in two pieces at the cut, then one
 * byte at a time, ending with an EOF.  Besides "no crash", it checks the
 * contract: a feed never uses more than it was given; the body handed out
 * never exceeds what was fed; fields point inside the parser's own copy
 * of the head and are tokens; the verdict (head seen, done, error) and the
 * body do not depend on how the bytes were split.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hup_parse.h"
#include "tchar.h"
#include "wire.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct run {
	size_t		 body;		/* bytes handed out */
	uint32_t	 sum;		/* of them, order-sensitive */
	int		 head, done, error, status;
};

static void
on_body(void *arg, const char *p, size_t n)
{
	struct run *r = arg;
	size_t i;

	r->body += n;
	for (i = 0; i < n; i++)
		r->sum = r->sum * 31 + (unsigned char)p[i];
}

static void
check_head(const struct hup_resp *resp)
{
	unsigned i;
	size_t k;

	if (resp->status < 200 || resp->status > 999 || resp->minor > 1)
		abort();
	for (i = 0; i < resp->nfields; i++) {
		const struct wire_field *f = &resp->fields[i];

		if (f->name.len == 0)
			abort();
		for (k = 0; k < f->name.len; k++)
			if (!tchar_is((unsigned char)f->name.p[k]))
				abort();
	}
}

static struct run
feed_all(const char *p, size_t n, int is_head, size_t step)
{
	struct hup_parse *hp;
	struct run r;
	enum hup_parse_rc rc = HUP_MORE;
	size_t off = 0, k, used;

	memset(&r, 0, sizeof(r));
	if ((hp = hup_parse_new(on_body, &r)) == NULL)
		abort();
	hup_parse_start(hp, is_head);
	while (off < n && rc != HUP_ERROR) {
		k = step == 0 || n - off < step ? n - off : step;
		rc = hup_parse_feed(hp, p + off, k, &used);
		if (used > k)
			abort();
		off += used;
		if (rc == HUP_HEAD) {
			r.head = 1;
			r.status = hup_parse_resp(hp)->status;
			check_head(hup_parse_resp(hp));
		} else if (rc == HUP_DONE)
			r.done = 1;
		else if (rc == HUP_MORE && used != k)
			abort();
		if (rc == HUP_DONE && off < n) {
			/* Anything after the end is a fault. */
			if (hup_parse_feed(hp, p + off, n - off, &used) !=
			    HUP_ERROR)
				abort();
			rc = HUP_ERROR;
		}
	}
	if (rc == HUP_ERROR)
		r.error = 1;
	else if (!r.done && hup_parse_eof(hp) == HUP_DONE)
		r.done = 1;
	if (r.body > n)
		abort();
	hup_parse_free(hp);
	return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run a, b, c;
	const char *p;
	size_t n, cut;
	int is_head;

	if (size < 1)
		return 0;
	is_head = data[0] & 1;
	p = (const char *)data + 1;
	n = size - 1;
	cut = n > 0 ? (data[0] >> 1) % (n + 1) : 0;
	a = feed_all(p, n, is_head, 0);
	b = feed_all(p, n, is_head, cut > 0 ? cut : 1);
	c = feed_all(p, n, is_head, 1);
	if (a.error != c.error || a.done != c.done || a.head != c.head ||
	    a.status != c.status || (!a.error && (a.body != c.body ||
	    a.sum != c.sum)))
		abort();
	if (a.error != b.error || a.done != b.done || a.head != b.head)
		abort();
	return 0;
}
