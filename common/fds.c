/*
 * fds.c -- descriptors over unix sockets, and closing the rest (fds.h).
 *
 * Nothing here allocates or touches a global (fds.h, invariant 1): the
 * control buffers are on the caller's stack.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fds.h"

/* A control message with room for FDS_MAX descriptors, aligned for it. */
union fds_ctl {
	char buf[CMSG_SPACE(sizeof(int) * FDS_MAX)];
	struct cmsghdr align;
};

int fds_send(int sock, const void *msg, size_t len, const int *fds, int nfds)
{
	union fds_ctl ctl;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds < 0 || nfds > FDS_MAX) {
		errno = EINVAL;
		return FC_IO;
	}
	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return FC_IO;
	if ((size_t)n != len) {
		errno = EMSGSIZE;
		return FC_IO;
	}
	return 0;
}

ssize_t fds_recv(int sock, void *buf, size_t cap, int *fds, int maxfds,
		 int *nfds, bool *whole)
{
	union fds_ctl ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	*nfds = 0;
	*whole = true;
	if (maxfds < 0 || maxfds > FDS_MAX) {
		errno = EINVAL;
		return FC_IO;
	}
	/* room for maxfds exactly: the kernel drops the others (MSG_CTRUNC) */
	if (maxfds > 0) {
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)maxfds);
	}
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return FC_IO;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
	     cm = CMSG_NXTHDR(&mh, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
			if (*nfds < maxfds && n > 0) {
				fds[(*nfds)++] = fd;
			} else {
				close(fd);
				*whole = false;
			}
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		*whole = false;
	return n;
}

int fds_send_one(int sock, int fd)
{
	return fds_send(sock, "S", 1, &fd, 1);
}

int fds_recv_one(int sock, int timeout_ms, int *fd)
{
	struct pollfd pf = { .fd = sock, .events = POLLIN };
	int got[1], n, r;
	bool whole;
	char byte;

	do
		r = poll(&pf, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return FC_IO;
	if (fds_recv(sock, &byte, 1, got, 1, &n, &whole) != 1 || n != 1 ||
	    !whole) {
		if (n == 1)
			close(got[0]);
		return FC_IO;
	}
	*fd = got[0];
	return 0;
}

void fds_close_from(int lowfd)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)lowfd, ~0u, 0) == 0)
		return;
#endif
	for (int fd = lowfd; fd < 65536; fd++)
		close(fd);
}

void fds_close_from_except(int lowfd, int keep1, int keep2)
{
	int keep[2] = { keep1 < keep2 ? keep1 : keep2,
			keep1 < keep2 ? keep2 : keep1 };

	for (int i = 0; i < 2; i++) {
		if (keep[i] < lowfd)
			continue;
		for (int fd = lowfd; fd < keep[i]; fd++) {
#ifdef SYS_close_range
			if (syscall(SYS_close_range, (unsigned)fd,
				    (unsigned)keep[i] - 1, 0) == 0)
				break;
#endif
			close(fd);
		}
		lowfd = keep[i] + 1;
	}
	fds_close_from(lowfd);
}
