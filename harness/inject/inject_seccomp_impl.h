/*
 * inject_seccomp_impl.h -- the insides of the inject_seccomp module, shared
 * by its four files and seen by nobody else:
 *
 *   inject_seccomp.c          plan, rule strings, the syscall table, scope
 *   inject_seccomp_filter.c   the plan compiled into a BPF program
 *   inject_seccomp_session.c  notifications: describe, decide, answer, count
 *   inject_seccomp_perform.c  kill_after: running a call on the route's
 *                             behalf; reading the route's memory
 *
 * Included by the files of harness/inject/inject_seccomp*.c only.
 */
#ifndef FENCECERT_INJECT_SECCOMP_IMPL_H
#define FENCECERT_INJECT_SECCOMP_IMPL_H

#include <stdint.h>

#include <seccomp.h>

#include "harness/inject/inject_seccomp.h"

/* How a syscall names the file it acts on: not at all, through an fd
 * argument, through a path argument (relative to a dirfd argument, or to the
 * cwd when dirfd < 0), or through a string that is not a path to resolve
 * (symlink's target). */
enum inject_arg_kind { ARG_NONE, ARG_FD, ARG_PATH, ARG_RAW };

struct inject_arg {
	signed char kind;  /* enum inject_arg_kind */
	signed char dirfd; /* ARG_PATH: index of the dirfd argument, -1 = cwd */
	signed char index; /* index of the fd / path / string argument */
};

/* One supported syscall.  The table (inject_seccomp.c) is the only list;
 * `perform` names the kill_after implementation (PERFORM_NONE: refused).
 * The write family (PERFORM_WRITE .. PERFORM_PWRITEV2) shares one
 * performer, and so do the calls that name paths (PERFORM_RENAME ..
 * PERFORM_TRUNCATE). */
enum inject_perform {
	PERFORM_NONE, PERFORM_SYNC, PERFORM_SENDTO,
	/* data: bytes from the route's memory, at its offset or at `value` */
	PERFORM_WRITE, PERFORM_PWRITE, PERFORM_WRITEV, PERFORM_PWRITEV,
	PERFORM_PWRITEV2,
	/* a file's size, through the route's fd */
	PERFORM_FTRUNCATE, PERFORM_FALLOCATE,
	/* names: paths resolved against the route's cwd or dirfds */
	PERFORM_RENAME, PERFORM_LINK, PERFORM_SYMLINK, PERFORM_UNLINK,
	PERFORM_RMDIR, PERFORM_MKDIR, PERFORM_TRUNCATE,
};

struct inject_syscall {
	const char *name;
	struct inject_arg subject; /* -> event.path */
	struct inject_arg from;    /* -> event.from */
	enum inject_perform perform;
	signed char flags;         /* index of the flags argument (renameat2,
				      linkat, unlinkat, pwritev2), -1 */
	signed char value;         /* index of the one number the performer
				      needs besides: a position (pwrite64,
				      pwritev, pwritev2), a length (truncate,
				      ftruncate), a mode (mkdir, mkdirat); -1 */
};

#define INJECT_SYSCALLS_MAX 48

extern const struct inject_syscall inject_seccomp__syscalls[];
extern const int inject_seccomp__nsyscalls;

/* Index into the table, or -1. */
int inject_seccomp__syscall_index(const char *name);

struct inject_rule {
	int sys;                   /* index into the syscall table */
	unsigned long occurrence;  /* 0 = every */
	enum inject_action action;
	int error;                 /* INJECT_ERRNO */
	char *glob;                /* NULL = any in-scope path */
};

struct inject_seccomp_plan {
	bool intercept[INJECT_SYSCALLS_MAX]; /* by table index */
	char **watch;
	size_t nwatch;
	char **ignore;
	size_t nignore;
	struct inject_rule *rules;
	size_t nrules;
	char errmsg[256];
};

/* Is the call ev describes (path, peer) in the plan's scope?  has_path is
 * false for calls that name no file (sync), which are always in scope. */
bool inject_seccomp__in_scope(const struct inject_seccomp_plan *p,
			      const struct inject_seccomp_event *ev,
			      bool has_path);

/* Does rule r apply to a call of table entry sys described by ev (its
 * path, from or peer)? */
bool inject_seccomp__rule_matches(const struct inject_rule *r, int sys,
				  const struct inject_seccomp_event *ev);

/* --- inject_seccomp_perform.c ------------------------------------------ */

/* Read len bytes at addr in process pid; returns bytes read (short when
 * the range runs into unmapped memory) or -errno. */
long inject_seccomp__read_mem(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Read a NUL-terminated string at addr; 0, or -errno (-ENAMETOOLONG when it
 * does not fit in len). */
int inject_seccomp__read_string(pid_t pid, uint64_t addr, char *buf,
				size_t len);

/* The path behind `fd` of thread tid (readlink of /proc/TID/fd/FD, or of
 * /proc/TID/cwd when fd == AT_FDCWD); 0 or -errno. */
int inject_seccomp__fd_path(pid_t tid, int fd, char *out, size_t outlen);

/* The peer of socket `fd` of thread tid in the event's `peer` form
 * ("tcp:127.0.0.1:5432"); "" when it is not a connected inet or named
 * unix socket, or cannot be read. */
void inject_seccomp__fd_peer(pid_t tid, int fd, char *out, size_t outlen);

/* The thread group (process) of thread tid; 0 or -errno. */
int inject_seccomp__tgid(pid_t tid, pid_t *tgid);

int inject_seccomp__pidfd_open(pid_t pid);
int inject_seccomp__pidfd_getfd(int pidfd, int fd);
int inject_seccomp__pidfd_kill(int pidfd);

/* One received notification on its way to being acted on. */
struct inject_call {
	const struct seccomp_notif *req;
	const struct inject_syscall *sys;
	int notify_fd;
	int pidfd;        /* the calling process */
	char *err;        /* message buffer for FC_IO */
	size_t errlen;
};

/*
 * Run c's call on the route's behalf (INJECT_KILL_AFTER).  Reads what it
 * needs from the route first, then checks the notification is still pending
 * (*stale = true and nothing done if not), then acts.  Returns 0 with
 * *result = the call's return value or -errno, or FC_IO when the supervisor
 * could not get at the route's fd or memory (nothing done).
 */
int inject_seccomp__perform(const struct inject_call *c, long long *result,
			    bool *stale) FC_MUST_CHECK;

/*
 * An errno that says the connection is gone (ECONNRESET, ECONNABORTED,
 * EPIPE) answered on a socket call must leave it gone, or the route would
 * go on talking over a healthy socket (libpq waits for the server's reply
 * to a send that "failed").  Shut down the route's socket (both ways: the
 * peer sees the end too), after duplicating it and re-checking the
 * notification.  0 (*stale when the route is gone or withdrew the call;
 * nothing done for a call that is not on a socket or another errno), or
 * FC_IO when the supervisor could not get at the fd.
 */
int inject_seccomp__break_connection(const struct inject_call *c, int error,
				     bool *stale) FC_MUST_CHECK;

/* True while notification id is still waiting for our answer. */
bool inject_seccomp__pending(int notify_fd, uint64_t id);

#endif
