/*
 * inject_seccomp_script.h -- test support for test_inject_seccomp.c: a
 * child "route" that runs a file-operation script, and the supervisor side
 * that starts it under a plan and drives the seccomp session to the end.
 *
 * The test binary re-executes itself (/proc/self/exe) as
 * "--child OP..." and its main() hands that to sct_child_main().  The
 * script runs in the test's temp dir; after every operation that returned
 * it appends "ok N" to the file "progress", on a failure "fail N ERRNO" and
 * exits with ERRNO.  So a test sees what the route saw (progress), what
 * landed (the files), and how it ended (wait status).
 *
 * Script operations (NAME is a file in the temp dir, opened on first use):
 *   w:NAME:TEXT  write          p:NAME:OFF:TEXT  pwrite at OFF
 *   f:NAME       fsync          d:NAME           fdatasync
 *   r:OLD:NEW    rename         l:OLD:NEW        link
 *   s:TEXT       sendto on fd 3 P:TEXT           write to a pipe of its own
 *   F:x          fsync a pipe   H:x              SIGUSR1 handler, SA_RESTART
 *   Q:TEXT       write to a pipe with no reader (SIGPIPE ignored)
 *
 * Ops named after their system call, made with syscall(2) (so exactly
 * that call is made); DIR is a directory of the temp dir, opened as the
 * dirfd of an *at call, MODE is octal:
 *   writev:NAME:A:B           pwritev:NAME:OFF:A:B   pwritev2:NAME:OFF:A:B
 *   pwritev2a:NAME:OFF:A:B    (pwritev2 with RWF_APPEND)
 *   ftruncate:NAME:LEN        fallocate:NAME:OFF:LEN truncate:NAME:LEN
 *   unlink:NAME               unlinkat:DIR:NAME      rmdir:NAME
 *   mkdir:NAME:MODE           mkdirat:DIR:NAME:MODE  umask:MODE
 *   symlink:TARGET:LINK       symlinkat:TARGET:DIR:LINK
 *   renameat:DIR:OLD:NEW      renameat2:DIR:OLD:NEW (RENAME_NOREPLACE)
 *   linkat:DIR:OLD:NEW
 */
#ifndef FENCECERT_TESTS_INJECT_SECCOMP_SCRIPT_H
#define FENCECERT_TESTS_INJECT_SECCOMP_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "harness/inject/inject_seccomp.h"

#define SCT_MAX_EVENTS 64

/* One route process under a session. */
struct sct_child {
	pid_t pid;
	struct inject_seccomp_session *s;
	int status;                      /* wait status */
	struct inject_seccomp_event *ev; /* kept: everything but ignored/none */
	size_t nev;
	int errors;                      /* nonzero returns of handle() */
	int stale;                       /* STALE outcomes */
};

/* Per-test fixture: a temp dir and an empty plan. */
struct sct_fx {
	char dir[256];                   /* canonical, as /proc/PID/fd shows it */
	struct inject_seccomp_plan *plan;
};

/* The child side: run the script argv[0..argc-1]; never returns. */
int sct_child_main(int argc, char **argv);

/* Fork, install the plan, exec argv in dir with sock3 (if >= 0) as fd 3,
 * and open a session on the listener. */
void sct_start(struct sct_child *c, const struct inject_seccomp_plan *p,
	       const char *dir, int sock3, char *const argv[]);
/* The supervisor's poll loop until the filter has no users; then reap. */
void sct_drive(struct sct_child *c);
void sct_finish(struct sct_child *c);
/* sct_start + sct_drive of this binary's script mode (ops NULL-terminated). */
void sct_run_script(struct sct_child *c, const struct inject_seccomp_plan *p,
		    const char *dir, int sock3, const char *const ops[]);

int sct_setup(void **state);
int sct_teardown(void **state);

double sct_now(void);
const char *sct_slurp(const struct sct_fx *fx, const char *name); /* static buffer */
bool sct_exists(const struct sct_fx *fx, const char *name);
const char *sct_in_dir(const struct sct_fx *fx, const char *name); /* static buffer */
void sct_add(struct sct_fx *fx, const char *rule);
unsigned long sct_stat_count(const struct sct_child *c, const char *syscall,
			     const char *path);
size_t sct_count_outcome(const struct sct_child *c, enum inject_outcome o);
const struct inject_seccomp_event *sct_find_outcome(const struct sct_child *c,
						     enum inject_outcome o);
void sct_assert_killed(const struct sct_child *c, int sig);
void sct_assert_exit(const struct sct_child *c, int code);

#endif
