/*
 * sandbox.c -- an attempt's mounts and privileges (sandbox.h).
 *
 * The writable directories are cloned off the tree (open_tree) before
 * anything is made read-only or covered, and attached again (move_mount)
 * once the private /tmp and /dev/shm are there: a schedule dir under
 * /dev/shm, where certify makes them, would otherwise be hidden by the
 * tmpfs, and one on the root file system would be read-only by then.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include "common/sandbox.h"

void sandbox_init(struct sandbox *sb, bool new_proc)
{
	memset(sb, 0, sizeof(*sb));
	sb->new_proc = new_proc;
	snprintf(sb->tmp_opts, sizeof(sb->tmp_opts), "size=%llu,mode=1777",
		 (unsigned long long)SANDBOX_TMP_BYTES);
}

int sandbox_add_writable(struct sandbox *sb, const char *path)
{
	size_t n = 0;

	while (sb->writable[n])
		n++;
	if (n >= SANDBOX_WRITABLE_MAX)
		return FC_USAGE;
	sb->writable[n] = path;
	return 0;
}

/* mkdir -p in a stack buffer; 0 or -errno (EEXIST is fine). */
static int make_path(const char *path)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		buf[i] = path[i];
	}
	return 0;
}

static int tmpfs_at(const char *dir, const char *opts)
{
	struct stat st;

	if (stat(dir, &st) < 0)
		return errno == ENOENT ? 0 : -errno; /* no /dev/shm: none */
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return -errno;
	return 0;
}

/*
 * /tmp: the host's files show through read-only (a suite's scripts and
 * fixtures often live there), what the attempt writes goes to an upper
 * layer of its own on the private /dev/shm (an overlay), so nothing it
 * writes reaches the host's /tmp or another attempt's.  Where overlayfs
 * cannot be mounted in a user namespace (Linux < 5.11, or a tmpfs
 * without user xattrs) /tmp is an empty tmpfs of its own instead.
 */
static int private_tmp(const struct sandbox *sb)
{
	static const char upper[] = "/dev/shm/.sandbox-tmp/upper",
			  work[] = "/dev/shm/.sandbox-tmp/work",
			  opts[] = "lowerdir=/tmp,upperdir=/dev/shm/"
				   ".sandbox-tmp/upper,workdir=/dev/shm/"
				   ".sandbox-tmp/work,userxattr";
	int rc;

	if ((rc = make_path(upper)) < 0 || (rc = make_path(work)) < 0)
		return rc;
	if (chmod(upper, 01777) == 0 &&
	    mount("overlay", "/tmp", "overlay", MS_NOSUID | MS_NODEV,
		  opts) == 0)
		return 0;
	return tmpfs_at("/tmp", sb->tmp_opts);
}

int sandbox_enter(const struct sandbox *sb)
{
	int fds[SANDBOX_WRITABLE_MAX];
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY |
					     MOUNT_ATTR_NOSUID };
	/* the host's /proc kept (no PID namespace of our own): writable, as
	 * a nested attempt's init writes its id maps there and mounts a
	 * proc of its own, which a locked read-only one would forbid */
	struct mount_attr rw = { .attr_clr = MOUNT_ATTR_RDONLY };
	size_t n = 0;
	int rc = 0;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	for (; sb->writable[n]; n++) {
		fds[n] = open_tree(AT_FDCWD, sb->writable[n], OPEN_TREE_CLONE |
				   OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (fds[n] < 0) {
			rc = -errno;
			goto out;
		}
	}
	if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof(ro)) < 0 ||
	    (sb->new_proc ? mount("proc", "/proc", "proc", MS_NOSUID |
				  MS_NODEV | MS_NOEXEC, NULL) :
	     mount_setattr(AT_FDCWD, "/proc", 0, &rw, sizeof(rw))) < 0) {
		rc = -errno;
		goto out;
	}
	if ((rc = tmpfs_at("/dev/shm", sb->tmp_opts)) < 0 ||
	    (rc = private_tmp(sb)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if ((rc = make_path(sb->writable[i])) < 0)
			goto out;
		if (move_mount(fds[i], "", AT_FDCWD, sb->writable[i],
			       MOVE_MOUNT_F_EMPTY_PATH) < 0) {
			rc = -errno;
			goto out;
		}
	}
	if (mkdir(SANDBOX_HOME, 0700) < 0 && errno != EEXIST)
		rc = -errno;
out:
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}

int sandbox_drop_caps(uid_t uid, gid_t gid)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct none[2] = { { 0 } };

	for (int c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return -errno;
	if (uid != (uid_t)-1 &&
	    (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
	     setresuid(uid, uid, uid) < 0))
		return -errno;
	if (syscall(SYS_capset, &hdr, none) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

/* --- the probe ------------------------------------------------------------ */

struct probe_result {
	int step;
	int err;
};

static const char *const probe_steps[] = {
	"new user, PID and mount namespaces", "the id maps",
	"the mounts (read-only root, /proc, /tmp, a writable directory)",
	"dropping capabilities",
};

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -errno;
	close(fd);
	return r;
}

/* uid_map and gid_map: computed before the clone (inside, before the
 * maps, getuid() is the overflow id). */
static int probe_child(int report, const char *dir, const char *uid_map,
		       const char *gid_map)
{
	struct probe_result res = { 1, 0 };
	struct sandbox sb;

	if ((res.err = write_file("/proc/self/setgroups", "deny")) == 0 &&
	    (res.err = write_file("/proc/self/uid_map", uid_map)) == 0)
		res.err = write_file("/proc/self/gid_map", gid_map);
	if (!res.err) {
		res.step = 2;
		sandbox_init(&sb, true);
		if (sandbox_add_writable(&sb, dir) == 0)
			res.err = sandbox_enter(&sb);
	}
	if (!res.err) {
		res.step = 3;
		res.err = sandbox_drop_caps((uid_t)-1, (gid_t)-1);
	}
	if (write(report, &res, sizeof(res)) < 0) {
		/* the parent sees no result: refused */
	}
	_exit(0);
}

int sandbox_probe(char *why, size_t whylen)
{
	char dir[] = "/tmp/fencecert-probe-XXXXXX", uid_map[32], gid_map[32];
	struct probe_result res = { 0, -EIO };
	int p[2], status;
	long pid;

	if (!mkdtemp(dir))
		return snprintf(why, whylen, "cannot make a scratch directory: "
				"%s", strerror(errno)), -EIO;
	if (pipe2(p, O_CLOEXEC) < 0) {
		rmdir(dir);
		return snprintf(why, whylen, "cannot make a pipe: %s",
				strerror(errno)), -EIO;
	}
	snprintf(uid_map, sizeof(uid_map), "%u %u 1\n",
		 getuid() ? (unsigned)getuid() : SANDBOX_ROOT_ID,
		 (unsigned)getuid());
	snprintf(gid_map, sizeof(gid_map), "%u %u 1\n",
		 getgid() ? (unsigned)getgid() : SANDBOX_ROOT_ID,
		 (unsigned)getgid());
	pid = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS |
		      SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		close(p[0]);
		probe_child(p[1], dir, uid_map, gid_map);
	}
	close(p[1]);
	if (pid < 0) {
		res.err = -errno;
	} else {
		if (read(p[0], &res, sizeof(res)) != (ssize_t)sizeof(res))
			res = (struct probe_result){ 0, -EIO };
		while (waitpid((pid_t)pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	close(p[0]);
	rmdir(dir);
	if (res.err)
		snprintf(why, whylen, "%s: %s", probe_steps[res.step],
			 strerror(-res.err));
	return res.err;
}
