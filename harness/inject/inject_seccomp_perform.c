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
 *     advances the route's own offset and honours its O_APPEND; pwrite64
 *     uses the route's offset argument.
 *  3. The supervisor never blocks on the route's peers: sockets are written
 *     with MSG_DONTWAIT, pipes through a fresh non-blocking open of the same
 *     pipe, and SIGPIPE is neither delivered to the supervisor nor left
 *     pending.  Regular files may still block on the disk.
 *  4. Copies go through one buffer of at most PERFORM_CHUNK bytes.
 *  5. When the route's call itself would fail (a bad fd, a bad pointer, a
 *     missing file), the same failure is the result; only failures of the
 *     supervisor's own access (pidfd_getfd or process_vm_readv denied) are
 *     FC_IO.
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

static int perform_sync(const struct inject_call *c, long long *result,
			bool *stale)
{
	int fd, rc;

	rc = grab_fd(c, (int)c->req->data.args[0], &fd, result, stale);
	if (rc || *stale)
		return rc;
	if (!inject_seccomp__pending(c->notify_fd, c->req->id))
		*stale = true;
	else if (fd >= 0 && strcmp(c->sys->name, "fdatasync") == 0)
		*result = fdatasync(fd) < 0 ? -errno : 0;
	else if (fd >= 0)
		*result = fsync(fd) < 0 ? -errno : 0;
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

/* One write of the route's bytes to dup, without blocking on a peer. */
static ssize_t write_once(int fd, mode_t mode, const char *buf, size_t n,
			  bool positional, long long pos)
{
	char self[64];
	ssize_t w;
	int nb;

	if (positional)
		return pwrite(fd, buf, n, (off_t)pos);
	if (S_ISSOCK(mode))
		return send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (!S_ISFIFO(mode))
		return write(fd, buf, n);
	/* O_NONBLOCK on the shared description would change the route's
	 * peers; a new description of the same pipe changes nobody. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	nb = open(self, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (nb < 0)
		return -1;
	w = write_nosigpipe(nb, buf, n);
	close(nb);
	return w;
}

static int perform_write(const struct inject_call *c, long long *result,
			 bool *stale, bool positional)
{
	const __u64 *a = c->req->data.args;
	size_t len = (size_t)a[2], done = 0;
	long long pos = (long long)a[3];
	size_t cap = len < PERFORM_CHUNK ? len : PERFORM_CHUNK;
	struct stat st;
	char *buf;
	int fd, rc;

	rc = grab_fd(c, (int)a[0], &fd, result, stale);
	if (rc || *stale)
		return rc;
	if (fd < 0) {
		*stale = !inject_seccomp__pending(c->notify_fd, c->req->id);
		return 0;
	}
	buf = malloc(cap ? cap : 1);
	if (!buf || fstat(fd, &st) < 0) {
		rc = buf ? io_fail(c, "stat a duplicated fd", errno) : FC_NOMEM;
		goto out;
	}
	*result = 0;
	do {
		size_t want = len - done < cap ? len - done : cap;
		long got = inject_seccomp__read_mem(c->req->pid, a[1] + done,
						    buf, want);
		ssize_t w;

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
		w = write_once(fd, st.st_mode, buf, (size_t)got, positional,
			       pos + (long long)done);
		if (w < 0) {
			if (done == 0)
				*result = -errno;
			break;
		}
		done += (size_t)w;
		*result = (long long)done;
		/* Short: the route's own call would have stopped here too.
		 * Peers get one non-blocking attempt (invariant 3). */
		if ((size_t)w < want || S_ISSOCK(st.st_mode) ||
		    S_ISFIFO(st.st_mode))
			break;
	} while (done < len);
out:
	free(buf);
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

static int perform_namespace(const struct inject_call *c, long long *result,
			     bool *stale)
{
	const __u64 *a = c->req->data.args;
	char to[PATH_MAX], from[PATH_MAX];
	unsigned flags = c->sys->flags >= 0 ? (unsigned)a[(int)c->sys->flags] : 0;
	int todir = -1, fromdir = -1, rc, e;

	e = inject_seccomp__read_string(c->req->pid, a[(int)c->sys->subject.index],
					to, sizeof(to));
	if (!e)
		e = inject_seccomp__read_string(c->req->pid,
						a[(int)c->sys->from.index],
						from, sizeof(from));
	if (e == -ESRCH) {
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
	rc = grab_dir(c, &c->sys->subject, to, &todir, result, stale);
	if (!rc && !*stale && *result == 0)
		rc = grab_dir(c, &c->sys->from, from, &fromdir, result, stale);
	if (rc || *stale || *result)
		goto out;
	if (!inject_seccomp__pending(c->notify_fd, c->req->id))
		*stale = true;
	else if (c->sys->perform == PERFORM_RENAME)
		*result = renameat2(fromdir, from, todir, to, flags) < 0 ? -errno : 0;
	else
		*result = linkat(fromdir, from, todir, to, (int)flags) < 0 ? -errno : 0;
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
		return perform_sync(c, result, stale);
	case PERFORM_WRITE:
		return perform_write(c, result, stale, false);
	case PERFORM_PWRITE:
		return perform_write(c, result, stale, true);
	case PERFORM_SENDTO:
		return perform_sendto(c, result, stale);
	case PERFORM_RENAME:
	case PERFORM_LINK:
		return perform_namespace(c, result, stale);
	case PERFORM_NONE:
		break;
	}
	snprintf(c->err, c->errlen, "kill_after is not supported for '%s'",
		 c->sys->name);
	return FC_USAGE;
}
