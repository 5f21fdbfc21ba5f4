/*
 * inproc_mod.c -- the table of loaded replica modules (see inproc_mod.h).
 */
#include <sys/mman.h>
#include <sys/queue.h>
#include <sys/stat.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inproc_mod.h"
#include "replica_module.h"

struct inproc_mod {
	LIST_ENTRY(inproc_mod) link;
	char		 path[256];
	char		 file[96];
	void		*dl;
	int		 copy_fd;	/* a private copy's memfd, or -1 */
	const struct replica_module *desc;
	unsigned	 refs;
};

static LIST_HEAD(, inproc_mod) inproc_mods = LIST_HEAD_INITIALIZER(inproc_mods);
static pthread_mutex_t inproc_mods_lock = PTHREAD_MUTEX_INITIALIZER;

/* A path dlopen takes as a file, not a name to search for. */
static const char *
inproc_mod_fspath(const char *path, char *buf, size_t len)
{
	if (strchr(path, '/') != NULL)
		return path;
	snprintf(buf, len, "./%s", path);
	return buf;
}

static int
inproc_mod_identity(const char *path, char *file, size_t filelen, char *err,
    size_t errlen)
{
	struct stat st;

	if (stat(path, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		return -1;
	}
	snprintf(file, filelen, "%llu:%llu:%lld.%09ld:%lld",
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
	    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
	    (long long)st.st_size);
	return 0;
}

/* The descriptor of an open module, checked; NULL with err. */
static const struct replica_module *
inproc_mod_check(void *dl, const char *path, char *err, size_t errlen)
{
	const struct replica_module *m;

	if ((m = dlsym(dl, REPLICA_MODULE_SYMBOL)) == NULL) {
		snprintf(err, errlen, "%s: no \"%s\" symbol: not a replica "
		    "module (replica_module.h)", path, REPLICA_MODULE_SYMBOL);
		return NULL;
	}
	if (m->abi != REPLICA_MODULE_ABI) {
		snprintf(err, errlen, "%s: module ABI version %u, ingressd "
		    "speaks %u: rebuild the module against this ingressd's "
		    "replica_module.h", path, (unsigned)m->abi,
		    (unsigned)REPLICA_MODULE_ABI);
		return NULL;
	}
	if (m->handler == NULL || m->handler->on_request == NULL ||
	    m->bind == NULL) {
		snprintf(err, errlen, "%s: module has no on_request handler",
		    path);
		return NULL;
	}
	return m;
}

static void *
inproc_mod_open(const char *path, char *err, size_t errlen)
{
	char buf[300];
	void *dl;

	if ((dl = dlopen(inproc_mod_fspath(path, buf, sizeof(buf)),
	    RTLD_NOW | RTLD_LOCAL)) == NULL)
		snprintf(err, errlen, "%s", dlerror());
	return dl;
}

int
inproc_mod_probe(const char *path, char *file, size_t filelen, char *err,
    size_t errlen)
{
	void *dl;
	int rv;

	if (inproc_mod_identity(path, file, filelen, err, errlen) == -1)
		return -1;
	if ((dl = inproc_mod_open(path, err, errlen)) == NULL)
		return -1;
	rv = inproc_mod_check(dl, path, err, errlen) == NULL ? -1 : 0;
	dlclose(dl);
	return rv;
}

/* The file copied into memory and opened from there: another object to
 * the loader, whatever it has loaded under path already. */
static void *
inproc_mod_open_copy(struct inproc_mod *m, char *err, size_t errlen)
{
	char buf[65536], fdpath[64];
	ssize_t n;
	void *dl = NULL;
	int in, out;

	if ((in = open(m->path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", m->path, strerror(errno));
		return NULL;
	}
	if ((out = memfd_create("ingressd-module", MFD_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: memfd_create: %s", m->path,
		    strerror(errno));
		close(in);
		return NULL;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	}
	close(in);
	if (n == 0) {
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", out);
		dl = inproc_mod_open(fdpath, err, errlen);
	} else
		snprintf(err, errlen, "%s: copying: %s", m->path,
		    strerror(errno));
	if (dl == NULL)
		close(out);
	else
		m->copy_fd = out;
	return dl;
}

static int
inproc_mod_load(struct inproc_mod *m, const struct replica_api *api,
    char *err, size_t errlen)
{
	struct inproc_mod *o;
	char now[96];
	int shadowed = 0;

	LIST_FOREACH(o, &inproc_mods, link)
		shadowed |= strcmp(o->path, m->path) == 0;
	/* The file changed again since the conf was read: what is there
	 * now is what we check and load. */
	if (inproc_mod_identity(m->path, now, sizeof(now), err, errlen) == -1)
		return -1;
	m->dl = shadowed || strcmp(now, m->file) != 0 ?
	    inproc_mod_open_copy(m, err, errlen) :
	    inproc_mod_open(m->path, err, errlen);
	if (m->dl == NULL)
		return -1;
	if ((m->desc = inproc_mod_check(m->dl, m->path, err, errlen)) == NULL) {
		dlclose(m->dl);
		return -1;
	}
	m->desc->bind(api);
	return 0;
}

struct inproc_mod *
inproc_mod_get(const char *path, const char *file,
    const struct replica_api *api, char *err, size_t errlen)
{
	struct inproc_mod *m;

	pthread_mutex_lock(&inproc_mods_lock);
	LIST_FOREACH(m, &inproc_mods, link) {
		if (strcmp(m->path, path) == 0 && strcmp(m->file, file) == 0) {
			m->refs++;
			goto out;
		}
	}
	if ((m = calloc(1, sizeof(*m))) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	snprintf(m->path, sizeof(m->path), "%s", path);
	snprintf(m->file, sizeof(m->file), "%s", file);
	m->copy_fd = -1;
	m->refs = 1;
	if (inproc_mod_load(m, api, err, errlen) == -1) {
		if (m->copy_fd != -1)
			close(m->copy_fd);
		free(m);
		m = NULL;
		goto out;
	}
	LIST_INSERT_HEAD(&inproc_mods, m, link);
out:
	pthread_mutex_unlock(&inproc_mods_lock);
	return m;
}

void
inproc_mod_put(struct inproc_mod *m)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&inproc_mods_lock);
	if (--m->refs > 0) {
		pthread_mutex_unlock(&inproc_mods_lock);
		return;
	}
	LIST_REMOVE(m, link);
	pthread_mutex_unlock(&inproc_mods_lock);
	dlclose(m->dl);
	if (m->copy_fd != -1)
		close(m->copy_fd);
	free(m);
}

const struct replica_module *
inproc_mod_desc(const struct inproc_mod *m)
{
	return m->desc;
}

const char *
inproc_mod_path(const struct inproc_mod *m)
{
	return m->path;
}

unsigned
inproc_mod_loaded(void)
{
	struct inproc_mod *m;
	unsigned n = 0;

	pthread_mutex_lock(&inproc_mods_lock);
	LIST_FOREACH(m, &inproc_mods, link)
		n++;
	pthread_mutex_unlock(&inproc_mods_lock);
	return n;
}
