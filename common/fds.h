/*
 * fds.h -- file descriptors handed from one process to another: passed
 * over a unix socket (SCM_RIGHTS), and closed before a new process runs
 * something else, so that it holds exactly the ones it was given.
 *
 * Owns: the one sendmsg/recvmsg pair of the project (the fork server's
 * requests, a seccomp listener going back to the supervisor) and the one
 * "close every fd from N up" (a child before exec, the watchdog, helper
 * processes).
 *
 * Who includes it: anything (common/).  The supervisor and the fork server
 * (harness/proc/, routes/fork_server.c) speak to each other through it, and
 * neither includes the other.
 *
 * Invariants:
 *  1. Every function here is async-signal-safe and allocates nothing: they
 *     run in a child between clone() and exec, and in the fork server's
 *     loop, which writes no page its children share (docs/fork-server.md);
 *     fds_send() and fds_recv() leave errno alone when they succeed.
 *  2. Received descriptors are close-on-exec (MSG_CMSG_CLOEXEC), and a
 *     descriptor that does not fit is closed, never leaked.
 *  3. Failures are FC_IO with errno saying why; a send is whole or fails.
 */
#ifndef FENCECERT_FDS_H
#define FENCECERT_FDS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

/* Most descriptors one message carries. */
#define FDS_MAX 8

/* Send msg[0..len) (len >= 1) and fds[0..nfds) (0 <= nfds <= FDS_MAX) as
 * one message on the unix socket sock, without SIGPIPE, again after EINTR.
 * 0 when all of it was sent; FC_IO otherwise (EMSGSIZE: only part of it,
 * EINVAL: nfds out of range). */
int fds_send(int sock, const void *msg, size_t len, const int *fds, int nfds)
	FC_MUST_CHECK;

/*
 * Receive one message into buf[0..cap) and at most maxfds (<= FDS_MAX)
 * descriptors into fds[0..*nfds), again after EINTR.  Returns the number
 * of bytes (0: the peer closed its end), or FC_IO (errno says why).
 * *whole is false when the message or its descriptors did not fit: what
 * did not fit is gone (descriptors closed), what did is in buf and fds.
 */
ssize_t fds_recv(int sock, void *buf, size_t cap, int *fds, int maxfds,
		 int *nfds, bool *whole) FC_MUST_CHECK;

/* One descriptor with one byte of data: fds_send(sock, "S", 1, &fd, 1). */
int fds_send_one(int sock, int fd) FC_MUST_CHECK;

/* Wait at most timeout_ms for a message of one byte and exactly one
 * descriptor (fds_send_one()), and take it into *fd.  FC_IO on timeout,
 * when the peer closed its end without sending, or when the message is
 * anything else (its descriptors are closed); *fd is untouched then. */
int fds_recv_one(int sock, int timeout_ms, int *fd) FC_MUST_CHECK;

/* Close every descriptor from lowfd up (close_range(), or one by one). */
void fds_close_from(int lowfd);

/* The same, but keep1 and keep2 (either may be -1: none) stay open. */
void fds_close_from_except(int lowfd, int keep1, int keep2);

#endif
