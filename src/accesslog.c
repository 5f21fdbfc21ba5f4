/*
 * accesslog.c -- per-worker buffered access log (see accesslog.h).
 *
 * Everything in a line that came from a client (target, User-Agent,
 * Referer, request id) is escaped: in the combined format bytes outside
 * printable ASCII and '"' and '\' become \xHH (as nginx does); in JSON
 * they become \u00HH, so every line is valid JSON whatever the client sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accesslog.h"
#include "conf.h"
#include "reqlog.h"

#define AL_BUF		(64 * 1024)
#define AL_LINE_MAX	(12 * 1024)	/* flush first when less is left */
#define AL_TARGET_MAX	2048		/* bytes of the target logged */

struct accesslog_slot {
	char		 buf[AL_BUF];
	size_t		 len;
	time_t		 sec;		/* the second stamp[] was made for */
	char		 stamp[64];	/* combined: [10/Oct/2000:13:55:36 +0000] */
	char		 iso[32];	/* json: 2000-10-10T13:55:36 */
};

/* A bounded writer over the free part of a worker's buffer. */
struct al_out {
	char		*p;
	size_t		 left;
};

static struct accesslog_slot *al_workers;
static unsigned	 al_nworkers;
static _Atomic int al_fd = -1;		/* ours for life once set */
static _Atomic int al_format = -1;	/* -1: off */
static char	*al_path;		/* NULL: stderr */
static int	 al_stderr = -1;

int
accesslog_init(unsigned nworkers)
{
	if ((al_workers = calloc(nworkers, sizeof(*al_workers))) == NULL)
		return -1;
	al_nworkers = nworkers;
	al_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	return 0;
}

void
accesslog_free(void)
{
	free(al_workers);
	al_workers = NULL;
	al_nworkers = 0;
	free(al_path);
	al_path = NULL;
	if (al_fd != -1)
		close(al_fd);
	al_fd = -1;
	if (al_stderr != -1)
		close(al_stderr);
	al_stderr = -1;
}

int
accesslog_stderr(void)
{
	return al_stderr != -1 ? al_stderr : STDERR_FILENO;
}

int
accesslog_open_file(const char *path, char *err, size_t errlen)
{
	int fd;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd == -1)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return fd;
}

/* Point our descriptor at what src is open on. */
static void
accesslog_point(int src)
{
	if (al_fd == -1)
		al_fd = fcntl(src, F_DUPFD_CLOEXEC, 3);
	else
		dup3(src, al_fd, O_CLOEXEC);
}

void
accesslog_set(const char *path, int fd, int format)
{
	if (path == NULL) {
		atomic_store(&al_format, -1);
		if (fd != -1)
			close(fd);
		return;
	}
	if (strcmp(path, "stderr") == 0) {
		accesslog_point(accesslog_stderr());
		free(al_path);
		al_path = NULL;
	} else {
		if (fd != -1)
			accesslog_point(fd);
		if (al_path == NULL || strcmp(al_path, path) != 0) {
			free(al_path);
			al_path = strdup(path);
		}
	}
	if (fd != -1)
		close(fd);
	atomic_store(&al_format, format);
}

int
accesslog_reopen(char *err, size_t errlen)
{
	int fd;

	if (atomic_load(&al_format) == -1 || al_path == NULL)
		return 0;
	if ((fd = accesslog_open_file(al_path, err, errlen)) == -1)
		return -1;
	accesslog_point(fd);
	close(fd);
	return 0;
}

/* Writing -------------------------------------------------------------- */

static void
al_write_all(int fd, const char *p, size_t n)
{
	ssize_t k;

	while (n > 0) {
		if ((k = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return;		/* a full disk loses lines, not us */
		}
		p += k;
		n -= (size_t)k;
	}
}

struct accesslog_slot *
accesslog_slot(unsigned id)
{
	return al_workers != NULL && id < al_nworkers ? &al_workers[id] : NULL;
}

void
accesslog_flush(struct accesslog_slot *aw)
{
	int fd = atomic_load(&al_fd);

	if (aw == NULL || aw->len == 0)
		return;
	if (fd != -1)
		al_write_all(fd, aw->buf, aw->len);
	aw->len = 0;
}

static void
al_puts(struct al_out *o, const char *s, size_t n)
{
	if (n >= o->left)
		n = o->left > 0 ? o->left - 1 : 0;
	memcpy(o->p, s, n);
	o->p += n;
	o->left -= n;
}

static void
al_printf(struct al_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
al_printf(struct al_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->p, o->left, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= o->left)
		n = o->left > 0 ? (int)o->left - 1 : 0;
	o->p += n;
	o->left -= (size_t)n;
}

/* Client bytes, escaped for the combined format. */
static void
al_escape(struct al_out *o, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	unsigned char c;
	size_t i;

	for (i = 0; i < n && o->left > 5; i++) {
		c = (unsigned char)s[i];
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
			*o->p++ = '\\';
			*o->p++ = 'x';
			*o->p++ = hex[c >> 4];
			*o->p++ = hex[c & 15];
			o->left -= 4;
		} else {
			*o->p++ = (char)c;
			o->left--;
		}
	}
}

/* A JSON string value (quotes included), or null. */
static void
al_json_str(struct al_out *o, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char c;
	size_t i;

	if (s == NULL) {
		al_puts(o, "null", 4);
		return;
	}
	al_puts(o, "\"", 1);
	for (i = 0; i < n && o->left > 8; i++) {
		c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			*o->p++ = '\\';
			*o->p++ = (char)c;
			o->left -= 2;
		} else if (c < 0x20 || c >= 0x7f) {
			memcpy(o->p, "\\u00", 4);
			o->p[4] = hex[c >> 4];
			o->p[5] = hex[c & 15];
			o->p += 6;
			o->left -= 6;
		} else {
			*o->p++ = (char)c;
			o->left--;
		}
	}
	al_puts(o, "\"", 1);
}

static void
al_json_cstr(struct al_out *o, const char *s)
{
	al_json_str(o, s, s != NULL ? strlen(s) : 0);
}

/* The second's stamps are made once per second per worker. */
static void
al_stamps(struct accesslog_slot *aw, time_t sec)
{
	struct tm tm;

	if (aw->sec == sec && aw->stamp[0] != '\0')
		return;
	aw->sec = sec;
	localtime_r(&sec, &tm);
	strftime(aw->stamp, sizeof(aw->stamp), "[%d/%b/%Y:%H:%M:%S %z]", &tm);
	gmtime_r(&sec, &tm);
	strftime(aw->iso, sizeof(aw->iso), "%Y-%m-%dT%H:%M:%S", &tm);
}

static int
al_status(const struct reqlog *r)
{
	return r->status != 0 ? r->status : 499;	/* as nginx: gone */
}

static size_t
al_target_len(const struct reqlog *r)
{
	return r->target_len > AL_TARGET_MAX ? AL_TARGET_MAX : r->target_len;
}

static void
al_combined(struct al_out *o, struct accesslog_slot *aw, const struct reqlog *r)
{
	al_printf(o, "%s - - %s \"", r->peer, aw->stamp);
	if (r->method != NULL) {
		al_escape(o, r->method, strlen(r->method));
		al_puts(o, " ", 1);
		al_escape(o, r->target, al_target_len(r));
		if (r->major == 2)
			al_puts(o, " HTTP/2.0\" ", 11);
		else
			al_printf(o, " HTTP/1.%d\" ", r->minor);
	} else
		al_puts(o, "-\" ", 3);
	al_printf(o, "%d %llu \"", al_status(r),
	    (unsigned long long)r->bytes_out);
	if (r->referer != NULL)
		al_escape(o, r->referer, strlen(r->referer));
	else
		al_puts(o, "-", 1);
	al_puts(o, "\" \"", 3);
	if (r->user_agent != NULL)
		al_escape(o, r->user_agent, strlen(r->user_agent));
	else
		al_puts(o, "-", 1);
	al_puts(o, "\" rid=", 6);
	al_escape(o, r->request_id != NULL && r->request_id[0] != '\0' ?
	    r->request_id : "-", r->request_id != NULL &&
	    r->request_id[0] != '\0' ? strlen(r->request_id) : 1);
	al_printf(o, " deployment=%s replica=%s", r->deployment != NULL ?
	    r->deployment : "-", r->replica != NULL ? r->replica : "-");
	if (r->upstream_s >= 0)
		al_printf(o, " upstream_time=%.3f", r->upstream_s);
	else
		al_puts(o, " upstream_time=-", 16);
	if (r->grpc)
		al_printf(o, " grpc_status=%d", r->grpc_status);
	al_printf(o, " request_time=%.3f", r->total_s);
	if (r->tls_version != NULL) {
		al_printf(o, " tls=%s cipher=%s sni=", r->tls_version,
		    r->tls_cipher);
		al_escape(o, r->tls_sni != NULL ? r->tls_sni : "-",
		    r->tls_sni != NULL ? strlen(r->tls_sni) : 1);
		al_puts(o, " client_cert=\"", 14);
		al_escape(o, r->client_subject != NULL ? r->client_subject :
		    "-", r->client_subject != NULL ? strlen(r->client_subject) :
		    1);
		al_puts(o, "\"", 1);
	}
	al_puts(o, "\n", 1);
}

static void
al_json(struct al_out *o, struct accesslog_slot *aw, const struct reqlog *r)
{
	int ms = (int)((r->t_start - (double)aw->sec) * 1000);

	al_printf(o, "{\"time\":\"%s.%03dZ\",\"remote_addr\":", aw->iso,
	    ms < 0 ? 0 : ms > 999 ? 999 : ms);
	al_json_cstr(o, r->peer);
	al_puts(o, ",\"request_id\":", 14);
	al_json_cstr(o, r->request_id != NULL && r->request_id[0] != '\0' ?
	    r->request_id : NULL);
	al_puts(o, ",\"method\":", 10);
	al_json_cstr(o, r->method);
	al_puts(o, ",\"target\":", 10);
	al_json_str(o, r->method != NULL ? r->target : NULL, al_target_len(r));
	al_printf(o, ",\"protocol\":\"HTTP/%d.%d\",\"status\":%d,"
	    "\"bytes_in\":%llu,\"bytes_out\":%llu,\"route\":",
	    r->major == 2 ? 2 : 1, r->major == 2 ? 0 : r->minor, al_status(r), (unsigned long long)r->bytes_in,
	    (unsigned long long)r->bytes_out);
	al_json_cstr(o, r->route);
	al_puts(o, ",\"deployment\":", 14);
	al_json_cstr(o, r->deployment);
	al_puts(o, ",\"replica\":", 11);
	al_json_cstr(o, r->replica);
	if (r->upstream_s >= 0)
		al_printf(o, ",\"upstream_time\":%.6f", r->upstream_s);
	else
		al_puts(o, ",\"upstream_time\":null", 21);
	al_printf(o, ",\"request_time\":%.6f,\"user_agent\":", r->total_s);
	al_json_cstr(o, r->user_agent);
	al_puts(o, ",\"referer\":", 11);
	al_json_cstr(o, r->referer);
	if (r->grpc)
		al_printf(o, ",\"grpc_status\":%d", r->grpc_status);
	al_puts(o, ",\"tls_version\":", 15);
	al_json_cstr(o, r->tls_version);
	al_puts(o, ",\"tls_cipher\":", 14);
	al_json_cstr(o, r->tls_cipher);
	al_puts(o, ",\"tls_sni\":", 11);
	al_json_cstr(o, r->tls_sni);
	al_puts(o, ",\"client_cert_subject\":", 23);
	al_json_cstr(o, r->client_subject);
	al_printf(o, ",\"aborted\":%s}\n", r->aborted ? "true" : "false");
}

void
accesslog_write(struct accesslog_slot *aw, const struct reqlog *r)
{
	struct al_out o;
	int format = atomic_load_explicit(&al_format, memory_order_relaxed);

	if (format == -1 || aw == NULL)
		return;
	if (AL_BUF - aw->len < AL_LINE_MAX)
		accesslog_flush(aw);
	al_stamps(aw, (time_t)r->t_start);
	o.p = aw->buf + aw->len;
	o.left = AL_LINE_MAX;
	if (format == CONF_ACCESS_JSON)
		al_json(&o, aw, r);
	else
		al_combined(&o, aw, r);
	/* A line cut short still ends with a newline. */
	if (o.p > aw->buf + aw->len && o.p[-1] != '\n')
		o.p[-1] = '\n';
	aw->len = (size_t)(o.p - aw->buf);
}
