/*
 * fuzz_h2.c -- libFuzzer target for the HTTP/2 front edge: the preface,
 * then client frames from the input; whatever h2.c, h2_stream.c and
 * nghttp2 do with them.
 *
 * One worker with the real front (whose dispatch point hands the
 * connection to h2.c), route, handle and stream code; its event_base is
 * run here, no thread.  Routes: "/" to deployment "d", whose one endpoint
 * is a unix socket nobody listens on (so requests queue, fail over to
 * 503 / UNAVAILABLE, or are cancelled when the client goes), and the admin
 * paths.  Each input is one client connection (a socketpair): the
 * preface and the input are written in pieces (the first input byte
 * picks the size), the loop runs until nothing moves, the client closes,
 * the loop runs again.
 *
 * Verdict: what the client got is a sequence of well-formed HTTP/2 frames
 * (a 9-byte header, a length within the 16384 default, stream 0 for
 * connection frames), starting with our SETTINGS; never an HTTP/1.1
 * answer.  ASan and UBSan watch the rest (the socketpair closes with
 * every stream freed).
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "conf.h"
#include "front.h"
#include "log.h"
#include "registry.h"
#include "route.h"
#include "wctx.h"
#include "worker.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(x)	do { if (!(x)) { fprintf(stderr, "%s:%d: %s\n", \
			    __FILE__, __LINE__, #x); abort(); } } while (0)
#define MAX_LOOPS	20000
#define OUT_MAX		(4 * 1024 * 1024)

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
static const struct worker_hooks hooks = {
	.drain_all = front_drain_all,
	.free_all = front_free_all,
};
static struct event_base *base;
static struct worker	*w;
static char		 dir[64];
static unsigned		 moved;

static void
write_conf(const char *path)
{
	FILE *fp;

	CHECK((fp = fopen(path, "w")) != NULL);
	fprintf(fp, "{\"listen\": [\"127.0.0.1:1\"], \"runtime_dir\": \"%s\","
	    " \"timeouts\": {\"queue\": 0.05, \"connect\": 0.05},"
	    " \"admin_on_public\": true,"
	    " \"http2\": {\"max_concurrent_streams\": 8,"
	    " \"max_header_list_size\": 4096},"
	    " \"routes\": [{\"prefix\": \"/\", \"deployment\": \"d\"}],"
	    " \"deployments\": {\"d\": {\"endpoints\": [\"unix:%s/none\"],"
	    " \"queue\": 4}}}\n", dir, dir);
	CHECK(fclose(fp) == 0);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct reg_change *changes;
	struct route_table *routes;
	struct worker_snap *snap;
	struct registry *reg;
	struct conf *conf;
	unsigned nchanges;
	char path[192], err[512];

	log_init(getenv("FUZZ_H2_DEBUG") != NULL ? LOG_LEVEL_DEBUG :
	    LOG_LEVEL_WARN);
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof dir, "/tmp/fuzz_h2.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/conf.json", dir);
	write_conf(path);
	if ((conf = conf_load(path, err, sizeof err)) == NULL) {
		fprintf(stderr, "fuzz_h2: %s\n", err);
		abort();
	}
	unlink(path);
	CHECK((reg = registry_new(1, dir)) != NULL);
	CHECK(registry_reload(reg, conf, &changes, &nchanges, err,
	    sizeof err) == 0);
	registry_changes_free(changes, nchanges);
	CHECK((routes = route_table_new(conf)) != NULL);
	CHECK((snap = worker_snap_new(conf, routes)) != NULL);
	CHECK((w = worker_new(0, snap, reg, &hooks)) != NULL);
	base = worker_ctx(w)->base;
	return 0;
}

static int
fd_nonblock(int fd)
{
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Read what the proxy sent (up to OUT_MAX kept); 1 at EOF. */
static int
client_read(int fd, char *out, size_t *len)
{
	char buf[16384];
	ssize_t r;

	for (;;) {
		r = read(fd, buf, sizeof buf);
		if (r > 0) {
			size_t k = *len + (size_t)r > OUT_MAX ?
			    OUT_MAX - *len : (size_t)r;

			memcpy(out + *len, buf, k);
			*len += k;
			moved++;
			continue;
		}
		return r == 0 || (r == -1 && errno != EAGAIN);
	}
}

static void
settle(int cfd, char *out, size_t *len, int *eof, const char *p, size_t n,
    size_t *sent, size_t piece)
{
	unsigned i, idle = 0, last = moved;
	ssize_t r;
	size_t k;

	for (i = 0; i < MAX_LOOPS && idle < 8; i++) {
		if (cfd >= 0 && *sent < n) {
			k = n - *sent < piece ? n - *sent : piece;
			if ((r = write(cfd, p + *sent, k)) > 0) {
				*sent += (size_t)r;
				moved++;
			}
		}
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (cfd >= 0 && !*eof && client_read(cfd, out, len))
			*eof = 1;
		idle = moved == last ? idle + 1 : 0;
		last = moved;
	}
	CHECK(i < MAX_LOOPS);
}

/* The output is HTTP/2 frames from the first byte. */
static void
check(const unsigned char *o, size_t len)
{
	size_t off = 0, flen;
	uint32_t sid;

	if (len == 0)
		return;
	CHECK(len >= 9 && o[3] == 4);		/* our SETTINGS first */
	while (off + 9 <= len) {
		flen = (size_t)o[off] << 16 | (size_t)o[off + 1] << 8 |
		    o[off + 2];
		CHECK(flen <= 16384);
		sid = ((uint32_t)o[off + 5] << 24 | (uint32_t)o[off + 6] << 16 |
		    (uint32_t)o[off + 7] << 8 | o[off + 8]) & 0x7fffffff;
		/* SETTINGS, PING, GOAWAY on stream 0; HEADERS, DATA,
		 * RST_STREAM on a stream. */
		if (o[off + 3] == 4 || o[off + 3] == 6 || o[off + 3] == 7)
			CHECK(sid == 0);
		if (o[off + 3] <= 3)
			CHECK(sid != 0);
		off += 9 + flen;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t pieces[] = { 1 << 20, 1, 7, 64, 1000, 4096 };
	static char out[OUT_MAX];
	struct sockaddr_un sa;
	size_t n, sent = 0, piece, len = 0;
	char *in;
	int fds[2], eof = 0;

	if (size < 1)
		return 0;
	piece = pieces[data[0] % (sizeof pieces / sizeof pieces[0])];
	n = sizeof(preface) - 1 + size - 1;
	if (piece == 1 && n > 2048)
		piece = 64;
	CHECK((in = malloc(n)) != NULL);
	memcpy(in, preface, sizeof(preface) - 1);
	memcpy(in + sizeof(preface) - 1, data + 1, size - 1);

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
	CHECK(fd_nonblock(fds[0]) == 0 && fd_nonblock(fds[1]) == 0);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	front_accept(worker_ctx(w), fds[0], (struct sockaddr *)&sa,
	    sizeof(sa_family_t), 0);
	settle(fds[1], out, &len, &eof, in, n, &sent, piece);
	close(fds[1]);
	settle(-1, out, &len, &eof, in, n, &sent, piece);
	check((const unsigned char *)out, len);
	free(in);
	return 0;
}
