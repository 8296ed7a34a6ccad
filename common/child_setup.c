/*
 * child_setup.c -- an attempt's process sets itself up (child_setup.h).
 *
 * Each step is one static function, called in the header's order by every
 * entry; the entries differ only where an exec'd attempt and a clone of a
 * warm server must (signals, rlimits, environment, the report fd, exec),
 * and where a contained attempt's init starts the route instead of being
 * it.
 *
 * The init's own steps (init_attach(), init_serve()) make raw system
 * calls only (raw_call()): an exec'd attempt's init shares the
 * supervisor's memory, errno included, for the attempt's whole life
 * (child_setup.h, invariant 4), and a libc wrapper that fails writes
 * errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/child_setup.h"
#include "common/fds.h"
#include "common/protocol.h"
#include "common/sanitizer.h"

extern char **environ;

/* The classic signals (the realtime ones start at their default). */
#define CLASSIC_SIGNALS 32

/* --- raw system calls: -errno on failure, errno untouched ---------------- */

#if defined(__x86_64__)
#define RAW_CALLS 1
static long raw_call(long n, long a, long b, long c, long d, long e)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
#define RAW_CALLS 1
static long raw_call(long n, long a, long b, long c, long d, long e)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4)
			 : "memory");
	return x0;
}
#else
/* No inline system calls here: the init never shares the supervisor's
 * memory (child_setup_can_share() is false), so errno is its own. */
#define RAW_CALLS 0
static long raw_call(long n, long a, long b, long c, long d, long e)
{
	long r = syscall(n, a, b, c, d, e);

	return r < 0 ? -errno : r;
}
#endif

bool child_setup_can_share(void)
{
	return RAW_CALLS && !FC_SANITIZED;
}

static void raw_exit(int code) __attribute__((noreturn));
static void raw_exit(int code)
{
	for (;;)
		raw_call(SYS_exit_group, code, 0, 0, 0, 0);
}

static void raw_report(int fd, int what, int value, int killed)
{
	struct child_report r = { .what = what, .value = value,
				  .killed = killed };

	/* a short or failed write: the parent sees EOF, or no END */
	raw_call(SYS_write, fd, (long)&r, sizeof(r), 0, 0);
}

/* A failed step: its errno to the parent, then out. */
static void fail(int report_fd) __attribute__((noreturn));
static void fail(int report_fd)
{
	raw_report(report_fd, CHILD_REPORT_ERRNO, errno, 0);
	_exit(127);
}

int child_contain_flags(enum child_contain how)
{
	switch (how) {
	case CHILD_CONTAIN_PID:
		return CLONE_NEWPID;
	case CHILD_CONTAIN_USER:
		return CLONE_NEWUSER | CLONE_NEWPID;
	case CHILD_CONTAIN_SANDBOX:
		return CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS;
	case CHILD_CONTAIN_FS:
		return CLONE_NEWUSER | CLONE_NEWNS;
	default:
		return 0;
	}
}

bool child_contain_has_init(enum child_contain how)
{
	return (child_contain_flags(how) & CLONE_NEWPID) != 0 ||
	       how == CHILD_CONTAIN_REAPER;
}

/* Whether the namespaces of `how` include a user namespace whose ids the
 * child maps to themselves. */
static bool maps_own_ids(enum child_contain how)
{
	return (child_contain_flags(how) & CLONE_NEWUSER) != 0;
}

void child_setup_id_maps(struct child_setup *cs)
{
	unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();

	/* root maps to SANDBOX_ROOT_ID: a namespace's uid 0 gets every
	 * capability back at exec (common/sandbox.h) */
	snprintf(cs->uid_map, sizeof(cs->uid_map), "%u %u 1\n",
		 uid ? uid : SANDBOX_ROOT_ID, uid);
	snprintf(cs->gid_map, sizeof(cs->gid_map), "%u %u 1\n",
		 gid ? gid : SANDBOX_ROOT_ID, gid);
}

/* --- step 1 --------------------------------------------------------------- */

/* Uncontained. */
static void attach(pid_t parent)
{
	setpgid(0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    getppid() != parent)
		_exit(127); /* the harness died before we could attach */
}


static long raw_strlen(const char *s)
{
	long n = 0;

	while (s[n])
		n++;
	return n;
}

/* Write text to /proc/self/<name>; 0 or -errno. */
static long write_proc_self(const char *path, const char *text)
{
	long fd = raw_call(SYS_openat, AT_FDCWD, (long)path,
			   O_WRONLY | O_CLOEXEC, 0, 0);
	long len = raw_strlen(text), r;

	if (fd < 0)
		return fd;
	r = raw_call(SYS_write, fd, (long)text, len, 0, 0);
	raw_call(SYS_close, fd, 0, 0, 0, 0);
	return r < 0 ? r : r == len ? 0 : -EIO;
}

/* The user namespace's id maps written (setgroups denied first): 0 or
 * -errno. */
static long write_id_maps(const char *uid_map, const char *gid_map)
{
	long r;

	if ((r = write_proc_self("/proc/self/setgroups", "deny")) < 0 ||
	    (r = write_proc_self("/proc/self/uid_map", uid_map)) < 0 ||
	    (r = write_proc_self("/proc/self/gid_map", gid_map)) < 0)
		return r;
	return 0;
}

/*
 * CHILD_CONTAIN_FS (no init): the process's own ids mapped, as an init
 * maps them (init_attach()).  With switch_ids (certify root), it was
 * cloned into no namespace: it becomes run_uid first, then makes its user
 * and mount namespaces as that uid, so that outside them it holds a uid
 * that is not root's (a fork server in the host's PID namespace can
 * signal no process of the harness's); cs->uid_map maps run_uid to
 * itself.
 */
static void attach_maps(const struct child_setup *cs)
{
	long r;

	if (cs->contain != CHILD_CONTAIN_FS)
		return;
	if (cs->switch_ids &&
	    (setgroups(0, NULL) < 0 || setresgid(cs->run_gid, cs->run_gid,
						  cs->run_gid) < 0 ||
	     setresuid(cs->run_uid, cs->run_uid, cs->run_uid) < 0 ||
	     unshare(child_contain_flags(CHILD_CONTAIN_FS)) < 0))
		fail(cs->report_fd);
	/* run_uid may write its maps only while it owns its /proc files:
	 * dumpable for those three writes (its memory is a copy of the
	 * worker's, so not a moment longer), the exec sets it anew */
	if (cs->switch_ids)
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	r = write_id_maps(cs->uid_map, cs->gid_map);
	if (cs->switch_ids)
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		fail(cs->report_fd);
	}
}

/* Contained, in the init: its group (the route joins it), the harness's
 * death noticed, and the user namespace's ids mapped. */
static void init_attach(const struct child_setup *cs)
{
	long r;

	raw_call(SYS_setpgid, 0, 0, 0, 0, 0);
	if (raw_call(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    (cs->contain == CHILD_CONTAIN_REAPER &&
	     raw_call(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0))
		raw_exit(127);
	if (cs->parent_pidfd >= 0) {
		/* getppid() is 0 from here: a pidfd is readable once its
		 * process ended */
		struct pollfd pf = { .fd = cs->parent_pidfd, .events = POLLIN };
		struct timespec now = { 0, 0 };

		if (raw_call(SYS_ppoll, (long)&pf, 1, (long)&now, 0, 0) != 0)
			raw_exit(127);
	}
	if (!maps_own_ids(cs->contain))
		return;
	if ((r = write_id_maps(cs->uid_map, cs->gid_map)) < 0) {
		raw_report(cs->report_fd, CHILD_REPORT_ERRNO, (int)-r, 0);
		raw_exit(127);
	}
}

int child_contain_probe(enum child_contain how)
{
	struct child_setup cs = { .contain = how };
	int status;
	long pid, r = 0;

	child_setup_id_maps(&cs);
	/* fork()'s semantics with the namespace flags */
	pid = syscall(SYS_clone, child_contain_flags(how) | SIGCHLD, 0, 0, 0, 0);
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (maps_own_ids(how) &&
		    (r = write_id_maps(cs.uid_map, cs.gid_map)) < 0)
			raw_exit((int)(-r & 0x7f));
		raw_exit(0);
	}
	while (waitpid((pid_t)pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status))
		return -EINTR;
	return -WEXITSTATUS(status);
}

/* --- steps 2-7 ------------------------------------------------------------ */

/* Step 2, the dispositions. */
static void reset_signals(const struct child_setup *cs)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	if (cs->signals) {
		for (int i = 0; i < cs->nsignals; i++)
			sigaction(cs->signals[i], &cs->actions[cs->signals[i]],
				  NULL);
		return;
	}
	for (int s = 1; s < CLASSIC_SIGNALS; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &dfl, NULL);
}

/* Step 3. */
static int place_fds(const struct child_setup *cs)
{
	if (dup2(cs->in_fd, 0) < 0 || dup2(cs->out_fd, 1) < 0 ||
	    dup2(cs->err_fd, 2) < 0)
		return -1;
	if (cs->fp_fd >= 0 && dup2(cs->fp_fd, PROTO_FAILPOINT_FD) < 0)
		return -1;
	return 0;
}

static void set_limit(int res, rlim_t v)
{
	struct rlimit rl;

	if (getrlimit(res, &rl) < 0)
		return;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < v)
		v = rl.rlim_max;
	rl.rlim_cur = v;
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > v)
		rl.rlim_max = v;
	setrlimit(res, &rl);
}

/* Step 4: what one attempt may use. */
static void set_limits(void)
{
	set_limit(RLIMIT_CORE, 0);
	set_limit(RLIMIT_NOFILE, 4096);
	set_limit(RLIMIT_CPU, 600);
	set_limit(RLIMIT_FSIZE, (rlim_t)1 << 30);
#if !FC_SANITIZED
	set_limit(RLIMIT_AS, (rlim_t)8 << 30);
#endif
}

/* Step 6: what our own parent left open, the fds we were handed, and
 * PROTO_FAILPOINT_FD without a channel; the report fd and the seccomp
 * socket stay for step 7. */
static void close_rest(const struct child_setup *cs)
{
	fds_close_from_except(cs->fp_fd >= 0 ? PROTO_FAILPOINT_FD + 1 :
			      PROTO_FAILPOINT_FD, cs->report_fd,
			      cs->filter ? cs->seccomp_sock : -1);
}

int child_setup_filter(const struct sock_filter *filter, size_t len, int sock)
{
	struct sock_fprog prog = { .len = (unsigned short)len,
				   .filter = (struct sock_filter *)filter };
	int lfd, rc;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return FC_IO;
	lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			   SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (lfd < 0)
		return FC_IO;
	rc = fds_send_one(sock, lfd);
	close(lfd); /* invariant 3 */
	return rc;
}

/* Step 1a. */
static void enter_sandbox(const struct child_setup *cs)
{
	int r;

	if (cs->sandbox && (r = sandbox_enter(cs->sandbox)) < 0) {
		errno = -r;
		fail(cs->report_fd);
	}
}

/* Step 6a. */
static void drop_caps(const struct child_setup *cs)
{
	int r;

	bool ids = cs->switch_ids && getuid() != cs->run_uid;

	if ((cs->sandbox || ids) &&
	    (r = sandbox_drop_caps(ids ? cs->run_uid : (uid_t)-1,
				   ids ? cs->run_gid : (gid_t)-1)) < 0) {
		errno = -r;
		fail(cs->report_fd);
	}
}

/* Steps 2-7 of an exec'd route process, then exec. */
static void route_exec(const struct child_setup *cs, char *const argv[],
		       char *const envp[]) __attribute__((noreturn));
static void route_exec(const struct child_setup *cs, char *const argv[],
		       char *const envp[])
{
	sigset_t none;

	enter_sandbox(cs);
	reset_signals(cs);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (place_fds(cs) < 0)
		fail(cs->report_fd);
	set_limits();
	if (cs->cwd && chdir(cs->cwd) < 0)
		fail(cs->report_fd);
	close_rest(cs);
	drop_caps(cs);
	if (cs->filter && child_setup_filter(cs->filter, cs->filter_len,
					     cs->seccomp_sock) < 0)
		fail(cs->report_fd);
	execvpe(argv[0], argv, envp);
	fail(cs->report_fd);
}

void child_setup_exec(const struct child_setup *cs, char *const argv[],
		      char *const envp[])
{
	attach(cs->parent);
	attach_maps(cs);
	route_exec(cs, argv, envp);
}

/* --- the init of a contained attempt -------------------------------------- */

/* Every fd but keep closed. */
static void init_close_all_but(int keep)
{
	if (keep > 0 && raw_call(SYS_close_range, 0, keep - 1, 0, 0, 0) < 0)
		for (int fd = 0; fd < keep; fd++)
			raw_call(SYS_close, fd, 0, 0, 0, 0);
	if (raw_call(SYS_close_range, keep + 1, ~0U, 0, 0, 0) < 0)
		for (int fd = keep + 1; fd < 65536; fd++)
			raw_call(SYS_close, fd, 0, 0, 0, 0);
}

/* Whether we are the init of a PID namespace: only there does kill(-1)
 * reach no process but the attempt's own.  Anywhere else it would reach
 * every process the harness's user may signal, so an init step that is not
 * pid 1 (the namespace was not made) stops at once. */
static void init_check(int report_fd, enum child_contain how)
{
	if (how != CHILD_CONTAIN_REAPER &&
	    raw_call(SYS_getpid, 0, 0, 0, 0, 0) != 1) {
		raw_report(report_fd, CHILD_REPORT_ERRNO, EINVAL, 0);
		raw_exit(127);
	}
}

/* "/proc/self/task/<tid>/children" of the calling thread into buf. */
static void children_path(char *buf)
{
	static const char head[] = "/proc/self/task/", tail[] = "/children";
	long tid = raw_call(SYS_gettid, 0, 0, 0, 0, 0);
	char digits[24];
	int n = 0, at = 0;

	do
		digits[n++] = (char)('0' + tid % 10);
	while ((tid /= 10) > 0);
	for (size_t i = 0; i < sizeof(head) - 1; i++)
		buf[at++] = head[i];
	while (n > 0)
		buf[at++] = digits[--n];
	for (size_t i = 0; i < sizeof(tail); i++)
		buf[at++] = tail[i];
}

/*
 * CHILD_CONTAIN_REAPER: no namespace to tear down, so the init kills
 * what the route left by hand.  It is a child subreaper: a descendant
 * whose parent dies comes to it, so its children are, in the end, every
 * descendant.  Until it has none: SIGKILL each child it lists, reap
 * whatever died (a killed child's own children are ours next round).
 * The count of processes that died of our SIGKILL.
 */
static int reap_descendants(void)
{
	char path[64], buf[4096];
	int killed = 0, st;
	long r;

	children_path(path);
	for (;;) {
		long fd = raw_call(SYS_openat, AT_FDCWD, (long)path,
				   O_RDONLY | O_CLOEXEC, 0, 0);
		long n = fd < 0 ? 0 : raw_call(SYS_read, fd, (long)buf,
					       sizeof(buf) - 1, 0, 0);
		long pid = 0;

		if (fd >= 0)
			raw_call(SYS_close, fd, 0, 0, 0, 0);
		for (long i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				pid = pid * 10 + (buf[i] - '0');
				continue;
			}
			if (pid > 0)
				raw_call(SYS_kill, pid, SIGKILL, 0, 0, 0);
			pid = 0;
		}
		if (pid > 0)
			raw_call(SYS_kill, pid, SIGKILL, 0, 0, 0);
		/* one blocking reap, then whatever else is ready */
		r = raw_call(SYS_wait4, -1, (long)&st, __WALL, 0, 0);
		if (r == -ECHILD)
			break;
		do
			if (r > 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
				killed++;
		while ((r = raw_call(SYS_wait4, -1, (long)&st, __WALL | WNOHANG,
				     0, 0)) > 0);
	}
	return killed;
}

/*
 * Serve as the namespace's init until the route (pid `route`) ends:
 * reap every orphan that comes to us meanwhile; then SIGKILL what is left
 * (kill(-1) in a namespace reaches all of it but us), reap it, count the
 * processes that died of that kill, and report the route's own wait
 * status with the count.  Every signal is blocked (SIGKILL, SIGSTOP and
 * the supervisor's SIGCONT act regardless), so no handler ever runs here.
 */
static void init_serve(int report_fd, long route, enum child_contain how)
	__attribute__((noreturn));
static void init_serve(int report_fd, long route, enum child_contain how)
{
	int status = 0, st = 0, killed = 0;
	long r;

	init_check(report_fd, how); /* again, right before the kill(-1) it guards */
	init_close_all_but(report_fd);
	for (;;) {
		r = raw_call(SYS_wait4, -1, (long)&st, __WALL, 0, 0);
		if (r == route) {
			status = st;
			break;
		}
		if (r == -ECHILD) { /* not reached: the route is our child */
			status = 127 << 8;
			break;
		}
	}
	if (how == CHILD_CONTAIN_REAPER)
		killed = reap_descendants();
	else if (raw_call(SYS_kill, -1, SIGKILL, 0, 0, 0) == 0) {
		while ((r = raw_call(SYS_wait4, -1, (long)&st, __WALL, 0, 0)) !=
		       -ECHILD)
			if (r > 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
				killed++;
	}
	raw_report(report_fd, CHILD_REPORT_END, status, killed);
	raw_exit(0);
}

/* Every signal blocked, by a raw call (the kernel's sigset is 8 bytes). */
static void init_block_signals(void)
{
	unsigned long all = ~0UL;

	raw_call(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof(all),
		 0);
}

struct route_start {
	const struct child_setup *cs;
	char *const *argv;
	char *const *envp;
};

/* The route process of an exec'd attempt, on its own stack. */
static int route_main(void *arg)
{
	const struct route_start *rs = arg;

	route_exec(rs->cs, rs->argv, rs->envp);
}

#define ROUTE_FLAGS (CLONE_VM | CLONE_VFORK | SIGCHLD)

void child_setup_init_shared(const struct child_setup *cs, char *const argv[],
			     char *const envp[], char *route_stack)
{
	struct route_start rs = { cs, argv, envp };
	/* cs is the supervisor's, valid only until it reads RUNNING */
	int report_fd = cs->report_fd;
	enum child_contain how = cs->contain;
	long route;

	init_block_signals();
	init_check(report_fd, cs->contain);
	init_attach(cs);
	/* until RUNNING is reported the supervisor only waits for it, its
	 * signals blocked: glibc's clone() may write errno, and so may the
	 * route process until it execs (invariant 4) */
	route = clone(route_main, route_stack, ROUTE_FLAGS, &rs);
	if (route < 0) {
		raw_report(cs->report_fd, CHILD_REPORT_ERRNO, errno, 0);
		raw_exit(127);
	}
	/* the route exec'd, or reported why not: either way after it */
	raw_report(report_fd, CHILD_REPORT_RUNNING, 0, 0);
	init_serve(report_fd, route, how);
}

#if FC_SANITIZED
/* The route forked, not sharing our memory (sanitizer runtimes do not
 * expect that); its report comes through a pipe of ours, which it holds
 * until it execs, and is passed on. */
static long start_route_forked(const struct child_setup *cs,
			       char *const argv[], char *const envp[])
{
	struct child_setup rcs = *cs;
	struct child_report rec;
	int p[2];
	long route;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	/* above the fds the route dup2s onto (invariant 2) */
	p[0] = child_setup_fd_high(p[0]);
	p[1] = child_setup_fd_high(p[1]);
	if (p[0] < 0 || p[1] < 0)
		return -EMFILE;
	route = fork();
	if (route == 0) {
		close(p[0]);
		rcs.report_fd = p[1];
		route_exec(&rcs, argv, envp);
	}
	close(p[1]);
	while ((n = read(p[0], &rec, sizeof(rec))) < 0 && errno == EINTR)
		;
	close(p[0]);
	if (n == (ssize_t)sizeof(rec))
		raw_call(SYS_write, cs->report_fd, (long)&rec, sizeof(rec), 0, 0);
	return route < 0 ? -errno : route;
}
#endif

void child_setup_init_private(const struct child_setup *cs, char *const argv[],
			      char *const envp[], char *route_stack)
{
	long route;

	init_block_signals();
	init_check(cs->report_fd, cs->contain);
	init_attach(cs);
#if FC_SANITIZED
	(void)route_stack;
	route = start_route_forked(cs, argv, envp);
#else
	{
		struct route_start rs = { cs, argv, envp };

		route = clone(route_main, route_stack, ROUTE_FLAGS, &rs);
		if (route < 0)
			route = -errno;
	}
#endif
	if (route < 0) {
		raw_report(cs->report_fd, CHILD_REPORT_ERRNO, (int)-route, 0);
		raw_exit(127);
	}
	raw_report(cs->report_fd, CHILD_REPORT_RUNNING, 0, 0);
	init_serve(cs->report_fd, route, cs->contain);
}

/* --- a fork server's clone ------------------------------------------------ */

/* *word = v, and wake whoever waits on it (a shared futex: the kernel's
 * CLONE_CHILD_CLEARTID wake is one too). */
static void raw_store_wake(int *word, int v)
{
	__atomic_store_n(word, v, __ATOMIC_RELEASE);
	raw_call(SYS_futex, (long)word, FUTEX_WAKE, 1, 0, 0);
}

void child_setup_wait_started(int *word)
{
	/* bounded: the kernel's write of the route's pid (below) wakes
	 * nobody, and the init may be stopped before its own wake */
	static const struct timespec poll = { 0, 1000000 };

	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == CHILD_INIT_STARTING)
		raw_call(SYS_futex, (long)word, FUTEX_WAIT, CHILD_INIT_STARTING,
			 (long)&poll, 0);
}

void child_setup_init_clone(const struct child_setup *cs,
			    int (*route_fn)(void *), char *route_stack,
			    void *arg, int *started)
{
	int report_fd = cs->report_fd;
	long route;

	init_block_signals();
	init_check(report_fd, cs->contain);
	init_attach(cs);
	/* the server waits (started) until the route process has its copy
	 * of the request; a libc call may write errno until then.  On a
	 * stack, the kernel itself writes the route's pid (2: never
	 * CHILD_INIT_STARTING) into *started as the clone returns, so a
	 * SIGSTOP to the group between the clone and our wake below (a pause
	 * at the route's first failpoint) cannot hold the server */
	route = route_stack ? clone(route_fn, route_stack,
				    SIGCHLD | (started ? CLONE_PARENT_SETTID : 0),
				    arg, started) :
		_Fork();
	if (route == 0) { /* _Fork()'s child */
		route_fn(arg);
		_exit(127);
	}
	if (route < 0)
		raw_report(report_fd, CHILD_REPORT_ERRNO, errno, 0);
	if (started)
		raw_store_wake(started, CHILD_INIT_STARTED);
	if (route < 0)
		raw_exit(127);
	init_serve(report_fd, route, cs->contain);
}

void child_setup_clone(const struct child_setup *cs, char **envp)
{
	/* contained, we are the route process: the init attached */
	if (!child_contain_has_init(cs->contain))
		attach(cs->parent);
	enter_sandbox(cs);
	reset_signals(cs);
	if (place_fds(cs) < 0 || (cs->cwd && chdir(cs->cwd) < 0))
		fail(cs->report_fd);
	environ = envp;
	close_rest(cs);
	drop_caps(cs);
	if (child_contain_has_init(cs->contain))
		raw_report(cs->report_fd, CHILD_REPORT_RUNNING, 0, 0);
	close(cs->report_fd); /* uncontained, EOF: set up */
	if (cs->filter) {
		if (child_setup_filter(cs->filter, cs->filter_len,
				       cs->seccomp_sock) < 0)
			_exit(127); /* the harness sees no listener */
		close(cs->seccomp_sock);
	}
}

int child_setup_fd_high(int fd)
{
	int nfd;

	if (fd < 0 || fd > PROTO_FAILPOINT_FD)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, PROTO_FAILPOINT_FD + 1);
	close(fd);
	return nfd;
}
