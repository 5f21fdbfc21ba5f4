/*
 * fuzz_http1_scan.c -- libFuzzer target for the raw pre-scanner alone.
 *
 * The first byte picks the limits and whether a trailer section is
 * scanned; the rest is fed whole, then one byte at a time, then cut at a
 * point the input picks.  Besides "no crash", it checks the contract: the
 * clean length never exceeds what was given, a run that neither ends nor
 * fails takes everything, an error comes with a 4xx/5xx and a reason, and
 * the verdict (clean length, end, status) does not depend on the cuts.
 * The clean prefix holds only bytes the scanner's classes allow.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http1_scan.h"
#include "tchar.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct verdict {
	size_t	 clean;
	int	 end;
	int	 status;
};

static struct verdict
feed(const char *p, size_t n, unsigned mode, size_t cut)
{
	struct http1_scan	 sc;
	struct verdict		 v = { 0, 0, 0 };
	size_t			 k, got;

	http1_scan_init(&sc, (mode & 1) ? 64 : 8192, (mode & 2) ? 96 : 32768,
	    (mode & 4) ? 3 : 100);
	if (mode & 8)
		http1_scan_trailer(&sc);
	while (v.clean < n) {
		k = n - v.clean;
		if (cut == 1 || (cut > 1 && v.clean < cut && cut - v.clean < k))
			k = cut == 1 ? 1 : cut - v.clean;
		got = http1_scan_run(&sc, p + v.clean, k, &v.end);
		if (got > k)
			abort();
		v.clean += got;
		if (v.end || http1_scan_status(&sc) != 0)
			break;
		if (got != k)
			abort();
	}
	v.status = http1_scan_status(&sc);
	if (v.status != 0 && (v.status < 400 || v.status > 599 ||
	    http1_scan_reason(&sc) == NULL || v.end))
		abort();
	return v;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct verdict	 a, b, c;
	const char	*p;
	size_t		 n, i;
	unsigned	 mode;

	if (size < 2)
		return 0;
	mode = data[0];
	p = (const char *)data + 2;
	n = size - 2;
	a = feed(p, n, mode, 0);
	b = feed(p, n, mode, 1);
	c = feed(p, n, mode, n != 0 ? data[1] % (n + 1) : 0);
	if (a.clean != b.clean || a.end != b.end || a.status != b.status ||
	    a.clean != c.clean || a.end != c.end || a.status != c.status)
		abort();
	/* No control byte but HTAB, CR and LF gets through. */
	for (i = 0; i < a.clean; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (!(tchar_class[ch] & TCHAR_VALUE) && ch != '\r' &&
		    ch != '\n')
			abort();
	}
	return 0;
}
