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
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "inject_seccomp_impl.h"

static int send_fd(int sock, int fd)
{
	char byte = 'S';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *cm;
	ssize_t n;

	memset(&ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : FC_IO;
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
	bool any = false;
	int rc, fd;

	for (int i = 0; i < inject_seccomp__nsyscalls; i++)
		any |= p->intercept[i];
	if (!any) /* no listener would be created */
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
	rc = send_fd(sock, fd);
	/* seccomp_release() leaves the listener open (libseccomp 2.5): close
	 * it ourselves (invariant 2). */
	close(fd);
	seccomp_release(ctx);
	return rc;
}

int inject_seccomp_recv_fd(int sock, int timeout_ms, int *notify_fd)
{
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	struct cmsghdr *cm;
	ssize_t n;
	int fd, r;

	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return FC_IO;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		return FC_IO;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int)))
		return FC_IO;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	*notify_fd = fd;
	return 0;
}
