/*
 * inject_seccomp_child.c -- loading the filter in the route's child and
 * handing the listener fd to the supervisor over a unix socket.
 *
 * Invariants:
 *  1. After seccomp_load() the child makes only sendmsg, close and the
 *     memory calls of free(); none of them is in the syscall table, so the
 *     child can never wait on a notification nobody is listening to yet.
 *  2. The child's copy of the listener is closed before exec: the route must
 *     not be able to answer its own notifications, and when the supervisor
 *     closes its copy the filtered calls fail with ENOSYS instead of hanging.
 *  3. Only the native architecture is filtered; calls from other ABIs (i386,
 *     x32) are allowed untouched rather than killed by the bad-arch default.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/fds.h"
#include "harness/inject/inject_seccomp_impl.h"

static bool intercepts_any(const struct inject_seccomp_plan *p)
{
	for (int i = 0; i < inject_seccomp__nsyscalls; i++)
		if (p->intercept[i])
			return true;
	return false;
}

static int build_filter(const struct inject_seccomp_plan *p,
			scmp_filter_ctx *out)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

	if (!ctx)
		return FC_NOMEM;
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW) < 0)
		goto fail;
	for (int i = 0; i < inject_seccomp__nsyscalls; i++) {
		int nr;

		if (!p->intercept[i])
			continue;
		nr = seccomp_syscall_resolve_name(inject_seccomp__syscalls[i].name);
		if (nr < 0 || seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 0) < 0)
			goto fail;
	}
	*out = ctx;
	return 0;
fail:
	seccomp_release(ctx);
	return FC_IO;
}

int inject_seccomp_child_install(const struct inject_seccomp_plan *p, int sock)
{
	scmp_filter_ctx ctx;
	int rc, fd;

	if (!intercepts_any(p)) /* no listener would be created */
		return FC_USAGE;
	/* libseccomp would set it too (SCMP_FLTATR_CTL_NNP); doing it first
	 * makes a kernel without seccomp fail here, before anything else. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return FC_IO;
	rc = build_filter(p, &ctx);
	if (rc)
		return rc;
	if (seccomp_load(ctx) < 0) {
		seccomp_release(ctx);
		return FC_IO;
	}
	fd = seccomp_notify_fd(ctx);
	if (fd < 0) {
		seccomp_release(ctx);
		return FC_IO;
	}
	rc = fds_send_one(sock, fd);
	/* seccomp_release() leaves the listener open (libseccomp 2.5): close
	 * it ourselves (invariant 2). */
	close(fd);
	seccomp_release(ctx);
	return rc;
}

int inject_seccomp_plan_bpf(const struct inject_seccomp_plan *p, void **prog,
			    size_t *len)
{
	scmp_filter_ctx ctx;
	struct stat st;
	char *buf = NULL;
	int rc, fd;

	*prog = NULL;
	*len = 0;
	if (!intercepts_any(p))
		return FC_USAGE;
	rc = build_filter(p, &ctx);
	if (rc)
		return rc;
	/* libseccomp 2.5 exports to an fd only */
	fd = memfd_create("fencecert-bpf", MFD_CLOEXEC);
	rc = fd < 0 || seccomp_export_bpf(ctx, fd) < 0 || fstat(fd, &st) < 0 ?
		FC_IO : 0;
	seccomp_release(ctx);
	if (!rc && !(buf = malloc((size_t)st.st_size + 1)))
		rc = FC_NOMEM;
	if (!rc && pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		rc = FC_IO;
	if (fd >= 0)
		close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	*prog = buf;
	*len = (size_t)st.st_size;
	return 0;
}
