/*
 * inject_seccomp_perform.c -- kill_after: the supervisor runs the route's
 * pending call itself, on the route's own open file descriptions, so the
 * effect lands exactly as if the route had made it; the session then kills
 * the route, which never sees the result.  Also what else needs the
 * route's fds: a socket's peer (for scope and globs) and ending a
 * connection an injected ECONNRESET says is gone.
 *
 * Invariants:
 *  1. Everything is read from the route (fds through pidfd_getfd, bytes and
 *     paths through process_vm_readv) before the notification is checked
 *     with SECCOMP_IOCTL_NOTIF_ID_VALID, and nothing is done after a failed
 *     check: a route that died meanwhile (or a recycled pid) is never acted
 *     for.
 *  2. A duplicated fd shares the route's open file description, so write()
 *     and writev() advance the route's own offset and honour its O_APPEND;
 *     pwrite64, pwritev and pwritev2 use the route's position argument.
 *     Paths are resolved where the route's call resolves them: against a
 *     duplicate of its dirfd argument, or its cwd (/proc/PID/cwd), never
 *     the supervisor's.
 *  3. The supervisor never blocks on the route's peers: sockets are written
 *     with MSG_DONTWAIT, pipes through a fresh non-blocking open of the same
 *     pipe, and SIGPIPE is neither delivered to the supervisor nor left
 *     pending.  Regular files may still block on the disk.
 *  4. Copies go through one buffer of at most PERFORM_CHUNK bytes.
 *  5. When the route's call itself would fail (a bad fd, a bad pointer, a
 *     missing file), the same failure is the result; only failures of the
 *     supervisor's own access (pidfd_getfd or process_vm_readv denied) are
 *     FC_IO.
 *  6. The call is the route's call, made once: one write-family call may
 *     take several chunks, every other call is exactly one system call on
 *     the same objects with the same arguments (mkdir: the route's umask
 *     applied; truncate: through /proc/self/fd/DIR/PATH, there being no
 *     truncateat).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "harness/inject/inject_seccomp_impl.h"

#define PERFORM_CHUNK (1u << 20)

int inject_seccomp__pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

int inject_seccomp__pidfd_getfd(int pidfd, int fd)
{
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

int inject_seccomp__pidfd_kill(int pidfd)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
}

bool inject_seccomp__pending(int notify_fd, uint64_t id)
{
	return seccomp_notify_id_valid(notify_fd, id) == 0;
}

long inject_seccomp__read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr,
				.iov_len = len };
	ssize_t n;

	if (len == 0)
		return 0;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n < 0 ? -errno : (long)n;
}

int inject_seccomp__read_string(pid_t pid, uint64_t addr, char *buf,
				size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t got = 0;

	/* Page by page: the string may end just before an unmapped page. */
	while (got < len) {
		size_t room = (size_t)page - (size_t)((addr + got) % (size_t)page);
		size_t want = room < len - got ? room : len - got;
		long n = inject_seccomp__read_mem(pid, addr + got, buf + got,
						  want);
		char *nul;

		if (n <= 0)
			return n < 0 ? (int)n : -EFAULT;
		nul = memchr(buf + got, '\0', (size_t)n);
		if (nul)
			return 0;
		got += (size_t)n;
	}
	return -ENAMETOOLONG;
}

int inject_seccomp__fd_path(pid_t tid, int fd, char *out, size_t outlen)
{
	char link[64];
	ssize_t n;

	if (fd == AT_FDCWD)
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)tid);
	else
		snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)tid, fd);
	n = readlink(link, out, outlen);
	if (n < 0)
		return -errno;
	if ((size_t)n >= outlen)
		return -ENAMETOOLONG;
	out[n] = '\0';
	return 0;
}

/* "ADDR:PORT" of an inet address, IPv6 in brackets; false if not inet. */
static bool inet_form(const struct sockaddr_storage *a, char *out,
		      size_t outlen)
{
	char host[INET6_ADDRSTRLEN];

	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)a;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(out, outlen, "%s:%u", host, ntohs(in->sin_port));
		return true;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)a;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(out, outlen, "[%s]:%u", host, ntohs(in6->sin6_port));
		return true;
	}
	return false;
}

/* The peer of a socket we hold a copy of, in the event's form. */
static void socket_peer(int fd, char *out, size_t outlen)
{
	struct sockaddr_storage a;
	socklen_t alen = sizeof(a);
	int type = 0;
	socklen_t tlen = sizeof(type);
	char addr[INJECT_PEER_MAX];

	memset(&a, 0, sizeof(a));
	if (getpeername(fd, (struct sockaddr *)&a, &alen) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) < 0)
		return;
	if (inet_form(&a, addr, sizeof(addr))) {
		snprintf(out, outlen, "%s:%s",
			 type == SOCK_STREAM ? "tcp" :
			 type == SOCK_DGRAM ? "udp" : "inet", addr);
	} else if (a.ss_family == AF_UNIX &&
		   alen > offsetof(struct sockaddr_un, sun_path)) {
		const struct sockaddr_un *un = (const void *)&a;
		size_t n = alen - offsetof(struct sockaddr_un, sun_path);

		if (un->sun_path[0])
			snprintf(out, outlen, "unix:%.*s", (int)n, un->sun_path);
		else /* abstract: a leading NUL, not terminated */
			snprintf(out, outlen, "unix:@%.*s", (int)(n - 1),
				 un->sun_path + 1);
	}
}

void inject_seccomp__fd_peer(pid_t tid, int fd, char *out, size_t outlen)
{
	pid_t tgid = tid;
	int pidfd, copy;

	out[0] = '\0';
	/* A pidfd names a process: the thread's own works only for the
	 * thread group's leader. */
	pidfd = inject_seccomp__pidfd_open(tid);
	if (pidfd < 0 && errno == EINVAL && inject_seccomp__tgid(tid, &tgid) == 0)
		pidfd = inject_seccomp__pidfd_open(tgid);
	if (pidfd < 0)
		return;
	copy = inject_seccomp__pidfd_getfd(pidfd, fd);
	close(pidfd);
	if (copy < 0)
		return;
	socket_peer(copy, out, outlen);
	close(copy);
}

int inject_seccomp__tgid(pid_t tid, pid_t *tgid)
{
	char path[64], line[256];
	FILE *f;
	int found = 0, v;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &v) == 1)
			found = 1;
	fclose(f);
	if (!found)
		return -ESRCH;
	*tgid = v;
	return 0;
}

static int io_fail(const struct inject_call *c, const char *what, int err)
{
	snprintf(c->err, c->errlen, "cannot %s of pid %u for '%s': %s", what,
		 c->req->pid, c->sys->name, strerror(err));
	return FC_IO;
}

/* Duplicate the route's fd.  Returns 0 with *out >= 0; 0 with *out = -1 and
 * *result = -EBADF when the route's fd is not open (its call would fail the
 * same way); 0 with *stale when the route is gone; FC_IO otherwise. */
static int grab_fd(const struct inject_call *c, int fd, int *out,
		   long long *result, bool *stale)
{
	*out = inject_seccomp__pidfd_getfd(c->pidfd, fd);
	if (*out >= 0)
		return 0;
	if (errno == EBADF) {
		*result = -EBADF;
		return 0;
	}
	if (errno == ESRCH) {
		*stale = true;
		return 0;
	}
	return io_fail(c, "duplicate an fd", errno);
}

/* A call on the route's fd alone: fsync, fdatasync, ftruncate, fallocate. */
static int perform_on_fd(const struct inject_call *c, long long *result,
			 bool *stale)
{
	const __u64 *a = c->req->data.args;
	int fd, rc, r = 0;

	rc = grab_fd(c, (int)a[0], &fd, result, stale);
	if (rc || *stale)
		return rc;
	if (!inject_seccomp__pending(c->notify_fd, c->req->id)) {
		*stale = true;
	} else if (fd >= 0) {
		switch (c->sys->perform) {
		case PERFORM_FTRUNCATE:
			r = ftruncate(fd, (off_t)a[(int)c->sys->value]);
			break;
		case PERFORM_FALLOCATE:
			r = fallocate(fd, (int)a[1], (off_t)a[2], (off_t)a[3]);
			break;
		default:
			r = strcmp(c->sys->name, "fdatasync") == 0 ? fdatasync(fd)
								     : fsync(fd);
			break;
		}
		*result = r < 0 ? -errno : 0;
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

/* write(2) to a pipe with SIGPIPE blocked, and any SIGPIPE it raised
 * consumed (invariant 3). */
static ssize_t write_nosigpipe(int fd, const void *buf, size_t len)
{
	sigset_t pipe_set, old, pending;
	struct timespec zero = { 0, 0 };
	bool was_pending;
	ssize_t n;
	int err;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	n = write(fd, buf, len);
	err = errno;
	if (n < 0 && err == EPIPE && !was_pending)
		sigtimedwait(&pipe_set, NULL, &zero);
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = err;
	return n;
}

/*
 * What a call of the write family writes: ranges of the route's memory
 * (one for write and pwrite64, its iovec array for the vectored calls),
 * where (pos >= 0: at that position; -1: at the file offset) and with
 * which RWF_* flags (pwritev2).  Positions are one argument: 64-bit ABIs
 * only (on them pwritev's pos_h is always 0).
 */
struct write_call {
	struct iovec *ranges; /* the route's addresses */
	size_t nranges;
	size_t len;           /* their total */
	long long pos;
	int rwf;
	struct iovec one;     /* ranges of write and pwrite64 */
};

/* Fill w from the call's arguments; 0, or -errno the route's own call
 * would have failed with (w then unusable), or 1 when the route's memory
 * could not be read for another reason than a bad address (errno set). */
static int write_call_init(const struct inject_call *c, struct write_call *w)
{
	const __u64 *a = c->req->data.args;
	enum inject_perform kind = c->sys->perform;
	long n;

	memset(w, 0, sizeof(*w));
	w->pos = c->sys->value >= 0 ? (long long)a[(int)c->sys->value] : -1;
	w->rwf = c->sys->flags >= 0 ? (int)a[(int)c->sys->flags] : 0;
	if (kind == PERFORM_PWRITEV2 ? w->pos < -1 : c->sys->value >= 0 && w->pos < 0)
		return -EINVAL;
	if (kind == PERFORM_WRITE || kind == PERFORM_PWRITE) {
		w->one = (struct iovec){ (void *)(uintptr_t)a[1], (size_t)a[2] };
		w->ranges = &w->one;
		w->nranges = 1;
		w->len = (size_t)a[2];
		return 0;
	}
	if (a[2] > UIO_MAXIOV)
		return -EINVAL;
	w->nranges = (size_t)a[2];
	w->ranges = calloc(w->nranges ? w->nranges : 1, sizeof(*w->ranges));
	if (!w->ranges)
		return -ENOMEM;
	n = inject_seccomp__read_mem(c->req->pid, a[1], w->ranges,
				     w->nranges * sizeof(*w->ranges));
	if (n < 0 && n != -EFAULT) {
		errno = (int)-n;
		return 1;
	}
	if (n != (long)(w->nranges * sizeof(*w->ranges)))
		return -EFAULT;
	for (size_t i = 0; i < w->nranges; i++) {
		if (w->ranges[i].iov_len > (size_t)SSIZE_MAX - w->len)
			return -EINVAL;
		w->len += w->ranges[i].iov_len;
	}
	return 0;
}

static void write_call_release(struct write_call *w)
{
	if (w->ranges != &w->one)
		free(w->ranges);
	w->ranges = NULL;
}

/* Copy bytes [off, off + want) of w's ranges into buf: how many (short
 * where the route's memory ends), or -errno when not even the first. */
static long read_ranges(pid_t pid, const struct write_call *w, size_t off,
			char *buf, size_t want)
{
	size_t got = 0, base = 0;

	for (size_t i = 0; i < w->nranges && got < want; i++) {
		size_t len = w->ranges[i].iov_len, in, n;
		long k;

		if (off + got >= base + len) {
			base += len;
			continue;
		}
		in = off + got - base;
		n = len - in < want - got ? len - in : want - got;
		k = inject_seccomp__read_mem(pid,
			(uint64_t)(uintptr_t)w->ranges[i].iov_base + in,
			buf + got, n);
		if (k < 0)
			return got ? (long)got : k;
		got += (size_t)k;
		if ((size_t)k < n)
			break;
		base += len;
	}
	return (long)got;
}

/* One write of the route's bytes to dup, at w's position plus done,
 * without blocking on a peer. */
static ssize_t write_once(int fd, mode_t mode, const char *buf, size_t n,
			  const struct write_call *w, size_t done)
{
	struct iovec v = { (void *)buf, n };
	char self[64];
	ssize_t r;
	int nb;

	if (w->pos >= 0)
		return pwritev2(fd, &v, 1, (off_t)(w->pos + (long long)done),
				w->rwf);
	if (S_ISSOCK(mode))
		return send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (S_ISFIFO(mode)) {
		/* O_NONBLOCK on the shared description would change the
		 * route's peers; a new description of the same pipe changes
		 * nobody. */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		nb = open(self, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (nb < 0)
			return -1;
		r = write_nosigpipe(nb, buf, n);
		close(nb);
		return r;
	}
	if (w->rwf)
		return pwritev2(fd, &v, 1, -1, w->rwf);
	return write(fd, buf, n);
}

/* write, pwrite64, writev, pwritev, pwritev2: the route's bytes, copied
 * chunk by chunk (invariant 4), through its own open file description. */
static int perform_write(const struct inject_call *c, long long *result,
			 bool *stale)
{
	struct write_call w;
	size_t done = 0, cap;
	struct stat st;
	char *buf = NULL;
	int fd, rc, e;

	rc = grab_fd(c, (int)c->req->data.args[0], &fd, result, stale);
	if (rc || *stale)
		return rc;
	if (fd < 0) {
		*stale = !inject_seccomp__pending(c->notify_fd, c->req->id);
		return 0;
	}
	e = write_call_init(c, &w);
	if (e == -ENOMEM) {
		rc = FC_NOMEM;
		goto out;
	}
	if (e == 1) {
		e = errno;
		*stale = e == ESRCH;
		rc = *stale ? 0 : io_fail(c, "read memory", e);
		goto out;
	}
	if (e < 0) {
		*stale = !inject_seccomp__pending(c->notify_fd, c->req->id);
		*result = e;
		goto out;
	}
	cap = w.len < PERFORM_CHUNK ? w.len : PERFORM_CHUNK;
	buf = malloc(cap ? cap : 1);
	if (!buf || fstat(fd, &st) < 0) {
		rc = buf ? io_fail(c, "stat a duplicated fd", errno) : FC_NOMEM;
		goto out;
	}
	*result = 0;
	do {
		size_t want = w.len - done < cap ? w.len - done : cap;
		long got = read_ranges(c->req->pid, &w, done, buf, want);
		ssize_t n;

		if (got == -ESRCH) {
			*stale = true;
			goto out;
		}
		if (got < 0 && got != -EFAULT && done == 0) {
			rc = io_fail(c, "read memory", (int)-got);
			goto out;
		}
		if (done == 0 && !inject_seccomp__pending(c->notify_fd,
							  c->req->id)) {
			*stale = true;
			goto out;
		}
		if (got <= 0 && want > 0) {
			if (done == 0)
				*result = -EFAULT;
			break;
		}
		n = write_once(fd, st.st_mode, buf, (size_t)got, &w, done);
		if (n < 0) {
			if (done == 0)
				*result = -errno;
			break;
		}
		done += (size_t)n;
		*result = (long long)done;
		/* Short: the route's own call would have stopped here too.
		 * Peers get one non-blocking attempt (invariant 3). */
		if ((size_t)n < want || S_ISSOCK(st.st_mode) ||
		    S_ISFIFO(st.st_mode))
			break;
	} while (done < w.len);
out:
	free(buf);
	write_call_release(&w);
	close(fd);
	return rc;
}

static int perform_sendto(const struct inject_call *c, long long *result,
			  bool *stale)
{
	const __u64 *a = c->req->data.args;
	size_t len = (size_t)a[2] < PERFORM_CHUNK ? (size_t)a[2] : PERFORM_CHUNK;
	struct sockaddr_storage addr;
	socklen_t addrlen = (socklen_t)a[5];
	long got = 0, agot = 0;
	char *buf;
	int fd, rc;

	rc = grab_fd(c, (int)a[0], &fd, result, stale);
	if (rc || *stale)
		return rc;
	buf = malloc(len ? len : 1);
	if (!buf) {
		rc = FC_NOMEM;
		goto out;
	}
	got = inject_seccomp__read_mem(c->req->pid, a[1], buf, len);
	if (a[4] && addrlen <= sizeof(addr))
		agot = inject_seccomp__read_mem(c->req->pid, a[4], &addr,
						addrlen);
	if (got == -ESRCH || agot == -ESRCH) {
		*stale = true;
		goto out;
	}
	if ((got < 0 && got != -EFAULT) || (agot < 0 && agot != -EFAULT)) {
		rc = io_fail(c, "read memory", (int)-(got < 0 ? got : agot));
		goto out;
	}
	if (!inject_seccomp__pending(c->notify_fd, c->req->id)) {
		*stale = true;
		goto out;
	}
	if (fd < 0)
		goto out; /* *result = -EBADF from grab_fd */
	if (a[4] && addrlen > sizeof(addr))
		*result = -EINVAL;
	else if ((len && got <= 0) || (a[4] && agot != (long)addrlen))
		*result = -EFAULT;
	else if (sendto(fd, buf, (size_t)got,
			(int)a[3] | MSG_DONTWAIT | MSG_NOSIGNAL,
			a[4] ? (struct sockaddr *)&addr : NULL,
			a[4] ? addrlen : 0) < 0)
		*result = -errno;
	else
		*result = got;
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* A directory fd for resolving `path` as the route would: its cwd, its
 * dirfd, or none needed for an absolute path. */
static int grab_dir(const struct inject_call *c, const struct inject_arg *arg,
		    const char *path, int *out, long long *result, bool *stale)
{
	int dirfd = arg->dirfd < 0 ? AT_FDCWD
				   : (int)c->req->data.args[(int)arg->dirfd];
	char cwd[64];

	*out = AT_FDCWD;
	if (path[0] == '/')
		return 0;
	if (dirfd != AT_FDCWD)
		return grab_fd(c, dirfd, out, result, stale);
	snprintf(cwd, sizeof(cwd), "/proc/%u/cwd", c->req->pid);
	*out = open(cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*out >= 0)
		return 0;
	if (errno == ENOENT || errno == ESRCH) {
		*stale = true;
		return 0;
	}
	return io_fail(c, "open the cwd", errno);
}

static void close_dir(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* The umask of process pid (/proc/PID/status); 0 or -errno. */
static int umask_of(pid_t pid, mode_t *out)
{
	char path[64], line[128];
	unsigned v;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "Umask: %o", &v) == 1;
	fclose(f);
	if (!found)
		return -ENOTSUP;
	*out = (mode_t)v;
	return 0;
}

/*
 * mkdir as the route would have: its mode argument less the route's umask
 * (read before the notification was validated).  The supervisor's own
 * umask applies to its mkdirat too; bits it took that the route's did not
 * are put back (keeping what the kernel set, a setgid inherited from the
 * parent).  A parent with a default ACL is not special-cased.
 */
static int make_dir(int dir, const char *path, mode_t mode, mode_t route_mask)
{
	mode_t want = mode & 07777 & ~route_mask, own = 0;
	struct stat st;

	if (mkdirat(dir, path, want) < 0)
		return -errno;
	if (umask_of(getpid(), &own) == 0 && (want & own & 0777) &&
	    fstatat(dir, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		fchmodat(dir, path, (st.st_mode & 07777) | (want & 0777), 0);
	return 0;
}

/* truncate(2) of a path relative to dir, through /proc/self/fd/DIR, since
 * there is no truncateat. */
static int truncate_at(int dir, const char *path, off_t len)
{
	char via[PATH_MAX + 32];

	if (dir == AT_FDCWD || !*path)
		return truncate(path, len) < 0 ? -errno : 0;
	if (snprintf(via, sizeof(via), "/proc/self/fd/%d/%s", dir, path) >=
	    (int)sizeof(via))
		return -ENAMETOOLONG;
	return truncate(via, len) < 0 ? -errno : 0;
}

/* The call of c, its paths resolved in todir / fromdir (AT_FDCWD for an
 * absolute path): 0 or -errno. */
static int path_call(const struct inject_call *c, int todir, const char *to,
		     int fromdir, const char *from, mode_t route_mask)
{
	const __u64 *a = c->req->data.args;
	unsigned flags = c->sys->flags >= 0 ? (unsigned)a[(int)c->sys->flags] : 0;
	__u64 value = c->sys->value >= 0 ? a[(int)c->sys->value] : 0;
	int r;

	switch (c->sys->perform) {
	case PERFORM_RENAME:
		r = renameat2(fromdir, from, todir, to, flags);
		break;
	case PERFORM_LINK:
		r = linkat(fromdir, from, todir, to, (int)flags);
		break;
	case PERFORM_SYMLINK:
		r = symlinkat(from, todir, to);
		break;
	case PERFORM_UNLINK:
		r = unlinkat(todir, to, (int)flags);
		break;
	case PERFORM_RMDIR:
		r = unlinkat(todir, to, AT_REMOVEDIR);
		break;
	case PERFORM_MKDIR:
		return make_dir(todir, to, (mode_t)value, route_mask);
	case PERFORM_TRUNCATE:
		return truncate_at(todir, to, (off_t)value);
	default:
		return -ENOSYS;
	}
	return r < 0 ? -errno : 0;
}

/*
 * The calls that name paths: rename*, link*, symlink*, unlink*, rmdir,
 * mkdir*, truncate.  Each path is read from the route and resolved the way
 * its call resolves it: against the route's cwd, or a duplicate of its
 * dirfd argument (symlink's target is a string, not resolved).
 */
static int perform_path(const struct inject_call *c, long long *result,
			bool *stale)
{
	const struct inject_syscall *sys = c->sys;
	const __u64 *a = c->req->data.args;
	char to[PATH_MAX], from[PATH_MAX] = "";
	int todir = -1, fromdir = AT_FDCWD, rc, e;
	mode_t route_mask = 0;

	e = inject_seccomp__read_string(c->req->pid, a[(int)sys->subject.index],
					to, sizeof(to));
	if (!e && sys->from.kind != ARG_NONE)
		e = inject_seccomp__read_string(c->req->pid,
						a[(int)sys->from.index],
						from, sizeof(from));
	if (!e && sys->perform == PERFORM_MKDIR)
		e = umask_of(c->req->pid, &route_mask);
	if (e == -ESRCH || e == -ENOENT) {
		*stale = true;
		return 0;
	}
	if (e && e != -EFAULT && e != -ENAMETOOLONG)
		return io_fail(c, "read memory", -e);
	if (e) {
		*stale = !inject_seccomp__pending(c->notify_fd, c->req->id);
		*result = e;
		return 0;
	}
	rc = grab_dir(c, &sys->subject, to, &todir, result, stale);
	if (!rc && !*stale && *result == 0 && sys->from.kind == ARG_PATH)
		rc = grab_dir(c, &sys->from, from, &fromdir, result, stale);
	if (rc || *stale)
		goto out;
	if (!inject_seccomp__pending(c->notify_fd, c->req->id))
		*stale = true;
	else if (*result == 0)
		*result = path_call(c, todir, to, fromdir, from, route_mask);
out:
	close_dir(todir);
	close_dir(fromdir);
	return rc;
}

int inject_seccomp__break_connection(const struct inject_call *c, int error,
				     bool *stale)
{
	struct stat st;
	long long unused = 0;
	int fd, rc;

	*stale = false;
	if (error != ECONNRESET && error != ECONNABORTED && error != EPIPE)
		return 0;
	rc = grab_fd(c, (int)c->req->data.args[0], &fd, &unused, stale);
	if (rc || *stale || fd < 0)
		return rc;
	if (!inject_seccomp__pending(c->notify_fd, c->req->id))
		*stale = true;
	else if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
		shutdown(fd, SHUT_RDWR);
	close(fd);
	return 0;
}

int inject_seccomp__perform(const struct inject_call *c, long long *result,
			    bool *stale)
{
	*result = 0;
	*stale = false;
	switch (c->sys->perform) {
	case PERFORM_SYNC:
	case PERFORM_FTRUNCATE:
	case PERFORM_FALLOCATE:
		return perform_on_fd(c, result, stale);
	case PERFORM_WRITE:
	case PERFORM_PWRITE:
	case PERFORM_WRITEV:
	case PERFORM_PWRITEV:
	case PERFORM_PWRITEV2:
		return perform_write(c, result, stale);
	case PERFORM_SENDTO:
		return perform_sendto(c, result, stale);
	case PERFORM_RENAME:
	case PERFORM_LINK:
	case PERFORM_SYMLINK:
	case PERFORM_UNLINK:
	case PERFORM_RMDIR:
	case PERFORM_MKDIR:
	case PERFORM_TRUNCATE:
		return perform_path(c, result, stale);
	case PERFORM_NONE:
		break;
	}
	snprintf(c->err, c->errlen, "kill_after is not supported for '%s'",
		 c->sys->name);
	return FC_USAGE;
}
