/*
 * supervise_spawn.c -- start one process for the supervisor (supervise.h):
 * its environment and channels, the child (cloned here and exec'd, or
 * cloned by a fork server), its namespace, and whether it got as far as
 * running the route.
 *
 * Invariants:
 *  1. Everything that allocates happens before the clone (the environment,
 *     the compiled seccomp filter, the stacks); the child only runs
 *     common/child_setup.c, async-signal-safe, until exec.
 *  2. Every fd the parent opens is close-on-exec and numbered above
 *     PROTO_FAILPOINT_FD (child_setup_fd_high()), so the child's dup2s onto
 *     0-3 clobber nothing it needs; the child holds exactly 0-2 and its
 *     failpoint end as fd 3, as through a fork server.
 *  3. Setup and exec failures come back as the child's errno over a
 *     close-on-exec pipe (struct child_report): EOF (uncontained) or
 *     CHILD_REPORT_RUNNING (contained) means the route runs.  A contained
 *     process's pipe stays open: its init reports there how the route
 *     ended (supervise_proc.c reads it).
 *  4. Uncontained, the child shares our memory until it execs (CLONE_VM |
 *     CLONE_VFORK, as posix_spawn does; fork under the sanitizers).
 *     Contained, the child is the init of a new PID namespace; it shares
 *     our memory for the attempt's life (CLONE_VM without CLONE_VFORK:
 *     child_setup.h, invariant 4) where child_setup_can_share(), and the
 *     route process it starts shares it until it execs.  Either way our
 *     signals are blocked until the child has reset their dispositions
 *     (contained and sharing: until the route process has exec'd), so no
 *     handler of ours ever runs in it, and we touch no errno it may write.
 *  5. With a seccomp plan the child gets memory of its own (fork, or a
 *     private init): loading the filter is the route's last step before
 *     exec, and until exec is confirmed the parent must run, answering
 *     notifications while it waits on the exec pipe (the child's write of
 *     its errno would itself be intercepted).  The listener comes back
 *     over a socketpair.
 *  6. The environment is built from nothing (child_env.h): the request's
 *     entries, the allow-list, the names passed on, the channel's fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/child_setup.h"
#include "common/fds.h"
#include "common/fsutil.h"
#include "common/protocol.h"
#include "common/sandbox.h"
#include "common/sanitizer.h"
#include "harness/proc/child_env.h"
#include "harness/proc/supervise_impl.h"

/* An attempt's stdout or stderr file, in its schedule dir, where a
 * route (an earlier try, a zombie) may have left a FIFO or a symlink
 * under the name: made afresh, never opened through what is there. */
static int open_out(const char *path)
{
	if (!path)
		return child_setup_fd_high(open("/dev/null", O_WRONLY |
						O_CLOEXEC));
	return child_setup_fd_high(fs_create_untrusted(path, 0644));
}

/* --- containment ---------------------------------------------------------- */

static int probed = -1;          /* enum child_contain, once known */
static int probed_base = -1;     /* the same without the sandbox */
static char probe_why[256];

/* A PID namespace (root), else a user and PID namespace, else none. */
static enum child_contain base_containment(void)
{
	if (probed_base < 0) {
		int pid_err = child_contain_probe(CHILD_CONTAIN_PID), user_err = 0;

		if (!pid_err)
			probed_base = CHILD_CONTAIN_PID;
		else if (!(user_err = child_contain_probe(CHILD_CONTAIN_USER)))
			probed_base = CHILD_CONTAIN_USER;
		else {
			probed_base = CHILD_CONTAIN_NONE;
			snprintf(probe_why, sizeof(probe_why), "a new PID "
				 "namespace: %s; a new user and PID namespace: %s",
				 strerror(-pid_err), strerror(-user_err));
		}
	}
	return (enum child_contain)probed_base;
}

enum child_contain supervisor_containment(char *why, size_t whylen)
{
	if (probed < 0) {
		char sb_why[200];

		/* FENCECERT_CONTAINMENT=reaper: no sandbox even where one
		 * can be made (to measure what it costs: bench/); the report
		 * says so, and a gate can refuse it */
		const char *want = getenv("FENCECERT_CONTAINMENT");

		bool weaker = want && strcmp(want, "reaper") == 0;

		if (weaker)
			snprintf(sb_why, sizeof(sb_why), "FENCECERT_CONTAINMENT=%s",
				 want);
		if (!weaker && sandbox_probe(sb_why, sizeof(sb_why)) == 0) {
			probed = CHILD_CONTAIN_SANDBOX;
			snprintf(probe_why, sizeof(probe_why), "%s", "");
		} else {
			probed = base_containment();
			if (probed != CHILD_CONTAIN_NONE)
				snprintf(probe_why, sizeof(probe_why),
					 "no sandbox: %s", sb_why);
			else /* probe_why says why no namespace */
				probed = CHILD_CONTAIN_REAPER;
		}
		/* nothing hides us from the routes' /proc: at least they
		 * cannot read or ptrace us (cli/main.c does it as root) */
		if (probed == CHILD_CONTAIN_REAPER)
			prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	}
	if (why)
		snprintf(why, whylen, "%s", probe_why);
	return (enum child_contain)probed;
}

const char *supervisor_containment_name(enum child_contain how)
{
	switch (how) {
	case CHILD_CONTAIN_SANDBOX:
	case CHILD_CONTAIN_FS:
		return "sandbox";
	case CHILD_CONTAIN_NONE:
		return "none";
	default: /* root runs its attempts under a uid of their own */
		return geteuid() == 0 ? "uid" : "reaper";
	}
}

uid_t supervisor_fallback_uid(void)
{
	return (uid_t)(SV_FALLBACK_UID_BASE + ((unsigned)getpid() & 0xffff));
}

/* --- the `uid` level ------------------------------------------------------ */

/* Whether a uid of no group of ours can reach dir: every directory above
 * it searchable by others (the schedule dir itself is chowned to it). */
static bool reachable_by_others(const char *dir)
{
	char buf[4096];
	size_t len = strlen(dir);

	if (len >= sizeof(buf))
		return false;
	memcpy(buf, dir, len + 1);
	for (char *slash = strrchr(buf, '/'); slash; slash = strrchr(buf, '/')) {
		struct stat st;

		*slash = '\0';
		if (stat(*buf ? buf : "/", &st) < 0 || !(st.st_mode & S_IXOTH))
			return false;
		if (slash == buf)
			break;
	}
	return true;
}

static uid_t chown_to;

static int chown_one(const char *path, const struct stat *st, int flag,
		     struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	/* a hard link a route made to a file elsewhere is left as it is */
	if (S_ISREG(st->st_mode) && st->st_nlink > 1)
		return 0;
	if (lchown(path, chown_to, (gid_t)chown_to) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

/* The attempt's dir, given to the uid it runs as (the harness, root,
 * reads it all the same), with its private TMPDIR and HOME made in it:
 * every attempt, as the harness writes files there between them (a
 * restored crash state, a wiped XCom dir).  Symlinks are not followed.
 * 0, or FC_IO with errno. */
static int give_dir(const char *dir, uid_t uid, char *tmp, char *home,
		    size_t len)
{
	if (tmp) { /* (sandboxed, its /tmp and HOME are its own already) */
		snprintf(tmp, len, "TMPDIR=%s/.tmp", dir);
		snprintf(home, len, "HOME=%s/.home", dir);
		if ((mkdir(tmp + 7, 0700) < 0 && errno != EEXIST) ||
		    (mkdir(home + 5, 0700) < 0 && errno != EEXIST))
			return FC_IO;
	}
	chown_to = uid;
	return nftw(dir, chown_one, 16, FTW_PHYS) == 0 ? 0 : FC_IO;
}

/* --- starting the child --------------------------------------------------- */

#if !FC_SANITIZED
static int child_main(void *arg)
{
	const struct child_plan *cp = arg;

	child_setup_exec(&cp->cs, cp->argv, cp->envp);
}
#endif

/* A fork server, sandboxed (CHILD_CONTAIN_FS): its own memory, as a
 * clone into a new user namespace may not share ours with CLONE_VFORK's
 * wait (the child maps its ids before it execs). */
static int child_fs_main(void *arg)
{
	const struct child_plan *cp = arg;

	child_setup_exec(&cp->cs, cp->argv, cp->envp);
}

static int init_shared_main(void *arg)
{
	const struct child_plan *cp = arg;

	child_setup_init_shared(&cp->cs, cp->argv, cp->envp,
				cp->stacks + SV_CHILD_STACK_SIZE);
}

static int init_private_main(void *arg)
{
	const struct child_plan *cp = arg;

	child_setup_init_private(&cp->cs, cp->argv, cp->envp,
				 cp->stacks + SV_CHILD_STACK_SIZE);
}

/*
 * Start the child, with every signal of ours blocked meanwhile; *old is
 * the mask to restore, which the caller does once the child's report says
 * it runs (invariant 4).  fork() copies the page tables of the whole
 * harness and makes every page it then writes fault once; a certification
 * starts thousands of attempts, so the child borrows our memory instead
 * (sanitized builds and seccomp plans aside).
 */
static pid_t start_child(const struct child_plan *cp, sigset_t *old)
{
	bool init = child_contain_has_init(cp->cs.contain);
	int ns = child_contain_flags(cp->cs.contain);
	sigset_t all;
	pid_t pid;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
	if (cp->cs.contain == CHILD_CONTAIN_FS) /* no init: a copy of us */
		pid = clone(child_fs_main, cp->stacks + 2 * SV_CHILD_STACK_SIZE,
			    /* switch_ids: it unshares once it is run_uid */
			    (cp->cs.switch_ids ? 0 :
			     child_contain_flags(CHILD_CONTAIN_FS)) | SIGCHLD,
			    (void *)cp);
	else if (init && child_setup_can_share() && !cp->cs.filter)
		pid = clone(init_shared_main, cp->stacks + 2 * SV_CHILD_STACK_SIZE,
			    CLONE_VM | ns | SIGCHLD, (void *)cp);
	else if (init)
		pid = clone(init_private_main,
			    cp->stacks + 2 * SV_CHILD_STACK_SIZE, ns | SIGCHLD,
			    (void *)cp);
#if !FC_SANITIZED
	else if (!cp->cs.filter)
		pid = clone(child_main, cp->stacks + 2 * SV_CHILD_STACK_SIZE,
			    CLONE_VM | CLONE_VFORK | SIGCHLD, (void *)cp);
#endif
	else if ((pid = fork()) == 0) /* invariant 5 */
		child_setup_exec(&cp->cs, cp->argv, cp->envp);
	return pid;
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Read the child's report: 0 when the route runs (EOF, RUNNING, or
 * already END: kept for sv__record_end()), else the errno it failed with.
 * With a session, notifications are answered meanwhile (invariant 5). */
static int read_report(sv_proc *p, int fd)
{
	for (;;) {
		struct pollfd pf[2] = { { .fd = fd, .events = POLLIN } };
		struct child_report rec;
		nfds_t n = 1;
		ssize_t r;

		if (p->sess && !p->sess_hup) {
			pf[1].fd = inject_seccomp_session_fd(p->sess);
			pf[1].events = POLLIN;
			n = 2;
		}
		if (poll(pf, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 0; /* its end will tell */
		}
		if (n == 2 && pf[1].revents && sv__handle_syscall(p) < 0)
			continue; /* recorded; the call was answered */
		if (!pf[0].revents)
			continue;
		while ((r = read(fd, &rec, sizeof(rec))) < 0 && errno == EINTR)
			;
		if (r < 0 && errno == EAGAIN)
			continue;
		if (r != (ssize_t)sizeof(rec))
			return 0; /* EOF: exec'd (uncontained) */
		if (rec.what == CHILD_REPORT_ERRNO)
			return rec.value > 0 ? rec.value : EIO;
		if (rec.what == CHILD_REPORT_END) {
			p->end = rec;
			p->have_end = true;
		}
		return 0;
	}
}

/* Receive the child's listener and make the session; on failure the
 * child is left to fail (it _exits before exec). */
static int attach_seccomp(sv_proc *p, const struct sv_spawn *req, int sock,
			  char *err, size_t errlen)
{
	int nfd;

	if (fds_recv_one(sock, 10000, &nfd) < 0) {
		snprintf(err, errlen, "cannot run '%s': the seccomp filter "
			 "was not installed", req->argv[0]);
		return FC_IO;
	}
	if (inject_seccomp_session_new(req->seccomp, nfd, p->pid, &p->sess) < 0) {
		close(nfd);
		snprintf(err, errlen, "cannot run '%s': out of memory for the "
			 "seccomp session", req->argv[0]);
		return FC_NOMEM;
	}
	if (req->seccomp_hook)
		inject_seccomp_session_set_hook(p->sess, req->seccomp_hook,
						req->seccomp_hook_arg);
	return 0;
}

/* Start the child: through the launcher, or clone and exec. */
/* Start the child: through the launcher, or clone and exec; *masked
 * when our signals are blocked until the caller restores *old. */
static int launch(const struct sv_launcher *via, const struct sv_spawn *req,
		  const struct child_plan *cp, pid_t *pid, sigset_t *old,
		  bool *masked, char *err, size_t errlen)
{
	*masked = false;
	if (via)
		return via->launch(via->ctx, req, cp, pid, err, errlen);
	*pid = start_child(cp, old);
	*masked = true;
	if (*pid < 0) {
		snprintf(err, errlen, "cannot start a process: %s",
			 strerror(errno));
		return FC_IO;
	}
	return 0;
}

/* How a spawn is contained: an attempt (req->writable) sandboxed where
 * the supervisor can (a server: CHILD_CONTAIN_FS, its clones are); other
 * spawns as before: servers never (their clones are), the rest in a PID
 * namespace, or not at all where that is allowed.  -1 with err set when
 * it may not run. */
static int containment(supervisor *sv, const struct sv_spawn *req,
		       bool server, char *err, size_t errlen)
{
	enum child_contain how = sv->contain;

	if (how == CHILD_CONTAIN_SANDBOX) {
		if (req->writable)
			return server ? CHILD_CONTAIN_FS : CHILD_CONTAIN_SANDBOX;
		how = base_containment();
		if (how == CHILD_CONTAIN_NONE)
			how = CHILD_CONTAIN_REAPER;
	}
	/* a fork server under the `uid` level holds no capability to make
	 * its attempts' PID namespaces: they run behind a subreaper */
	if (how != CHILD_CONTAIN_NONE && req->writable && req->fork_server &&
	    geteuid() == 0)
		how = CHILD_CONTAIN_REAPER;
	if (server || how != CHILD_CONTAIN_NONE)
		return server ? CHILD_CONTAIN_NONE : (int)how;
	if (sv->uncontained_ok)
		return CHILD_CONTAIN_NONE;
	snprintf(err, errlen, "cannot run '%s' in a PID namespace of its own "
		 "(%s); 'fencecert certify --uncontained' runs routes without "
		 "one", req->argv[0], sv->contain_why);
	return -1;
}

/* What a sandboxed process is told besides the request's entries:
 * TMPDIR, HOME and FENCECERT_WRITABLE (invariant 9); NULL-terminated in
 * set[0..5), the strings in buf.  0, FC_IO with *bad naming a path
 * that is not a directory, or FC_USAGE when the paths do not fit (more
 * than SANDBOX_WRITABLE_MAX, or too long). */
static int sandbox_env(const struct sv_spawn *req, struct sandbox *sb,
		       bool new_proc, char *buf, size_t buflen,
		       const char **set, const char **bad)
{
	size_t used;
	int n = 0;

	sandbox_init(sb, new_proc);
	set[n++] = "TMPDIR=/tmp";
	set[n++] = "HOME=" SANDBOX_HOME;
	used = (size_t)snprintf(buf, buflen, "%s=", PROTO_ENV_WRITABLE);
	for (size_t i = 0; req->writable[i]; i++) {
		const char *w = req->writable[i];
		struct stat st;

		if (stat(w, &st) < 0 || !S_ISDIR(st.st_mode)) {
			*bad = w;
			return FC_IO;
		}
		if (sandbox_add_writable(sb, w) || strchr(w, ':') ||
		    used + strlen(w) + 2 >= buflen)
			return FC_USAGE;
		used += (size_t)snprintf(buf + used, buflen - used, "%s%s",
					 i ? ":" : "", w);
	}
	set[n++] = buf;
	set[n] = NULL;
	return 0;
}

/* req->env followed by extra (NULL-terminated), in one heap vector whose
 * entries are not copied. */
static char **env_join(char *const *env, const char *const *extra)
{
	size_t n = 0, m = 0;
	char **v;

	while (env && env[n])
		n++;
	while (extra && extra[m])
		m++;
	if (!(v = calloc(n + m + 1, sizeof(*v))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = env[i];
	for (size_t i = 0; i < m; i++)
		v[n + i] = (char *)extra[i];
	return v;
}

/* What an attempt's level adds to the environment: the strings, and the
 * request's entries followed by them (lv.joined, the caller frees it). */
struct level_env {
	char writable_var[SANDBOX_WRITABLE_MAX * 256];
	char tmp_var[4200], home_var[4200];
	const char *extra[4];
	char **joined;
};

/*
 * An attempt (req->writable) at its level: sandboxed (CHILD_CONTAIN_SANDBOX
 * or _FS: cp->sb, TMPDIR=/tmp, HOME and FENCECERT_WRITABLE), or, as root
 * without a sandbox, the `uid` level (ids switched to
 * supervisor_fallback_uid(), the attempt's dir given to it with a private
 * TMPDIR and HOME there).  0, or an error with err set.
 */
static int attempt_level(const struct sv_spawn *req, int how, bool server,
			 struct child_plan *cp, struct level_env *lv,
			 char *err, size_t errlen)
{
	if (how == CHILD_CONTAIN_SANDBOX || how == CHILD_CONTAIN_FS) {
		const char *bad = NULL;
		int rc = sandbox_env(req, &cp->sb, how == CHILD_CONTAIN_SANDBOX,
				     lv->writable_var, sizeof(lv->writable_var),
				     lv->extra, &bad);

		if (rc == FC_IO) {
			snprintf(err, errlen, "cannot run '%s': its writable "
				 "directory '%s' is missing or not a directory",
				 req->argv[0], bad);
			return FC_USAGE;
		}
		if (rc) {
			snprintf(err, errlen, "cannot run '%s': more than %d "
				 "writable directories, or one with a ':' in "
				 "its name", req->argv[0], SANDBOX_WRITABLE_MAX);
			return FC_USAGE;
		}
		cp->cs.sandbox = &cp->sb;
		/* a fork server of root's runs as its worker's uid (it stays
		 * in the host's PID namespace: it must not be root there),
		 * and so do the attempts it clones: theirs is the dir */
		if (geteuid() == 0 && (how == CHILD_CONTAIN_FS ||
				       req->fork_server) &&
		    reachable_by_others(req->writable[0])) {
			cp->cs.switch_ids = how == CHILD_CONTAIN_FS;
			cp->cs.run_uid = supervisor_fallback_uid();
			cp->cs.run_gid = (gid_t)cp->cs.run_uid;
			if (how == CHILD_CONTAIN_SANDBOX &&
			    give_dir(req->writable[0], cp->cs.run_uid, NULL, NULL,
				     0)) {
				snprintf(err, errlen, "cannot run '%s': cannot "
					 "give '%s' to uid %u: %s", req->argv[0],
					 req->writable[0],
					 (unsigned)cp->cs.run_uid, strerror(errno));
				return FC_IO;
			}
		}
	} else if (geteuid() == 0) {
		/* no sandbox: a uid of its own (its worker's) keeps the
		 * route off root's files and processes */
		if (!reachable_by_others(req->writable[0])) {
			snprintf(err, errlen, "cannot run '%s' as a uid of its "
				 "own: a directory above '%s' is not searchable "
				 "by others (give --work-dir a traversable "
				 "parent)", req->argv[0], req->writable[0]);
			return FC_USAGE;
		}
		cp->cs.switch_ids = true;
		cp->cs.run_uid = supervisor_fallback_uid();
		cp->cs.run_gid = (gid_t)cp->cs.run_uid;
		if (server) /* its attempts' dirs are given to them */
			return 0;
		if (give_dir(req->writable[0], cp->cs.run_uid, lv->tmp_var,
			     lv->home_var, sizeof(lv->tmp_var))) {
			snprintf(err, errlen, "cannot run '%s': cannot give "
				 "'%s' to uid %u: %s", req->argv[0],
				 req->writable[0], (unsigned)cp->cs.run_uid,
				 strerror(errno));
			return FC_IO;
		}
		lv->extra[0] = lv->tmp_var;
		lv->extra[1] = lv->home_var;
		lv->extra[2] = NULL;
	} else {
		return 0;
	}
	if (!(lv->joined = env_join(req->env, lv->extra))) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	return 0;
}

/* The report pipe: close-on-exec and above fd 3; our end non-blocking. */
static int report_pipe(int *fds, char *err, size_t errlen)
{
	int rp[2];

	if (pipe2(rp, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "cannot create exec pipe: %s",
			 strerror(errno));
		return FC_IO;
	}
	fds[5] = child_setup_fd_high(rp[0]);
	fds[6] = child_setup_fd_high(rp[1]);
	if (fds[5] < 0 || fds[6] < 0) {
		snprintf(err, errlen, "cannot set up exec pipe");
		return FC_IO;
	}
	return 0;
}

int sv__spawn(supervisor *sv, const struct sv_spawn *req,
	      const struct sv_launcher *via, bool server, sv_proc **out,
	      char *err, size_t errlen)
{
	/* (in: sv->null_fd), out, err, fp parent, fp child, report read,
	 * report write, seccomp parent, seccomp child */
	int fds[9] = { -1, -1, -1, -1, -1, -1, -1, -1, -1 };
	char fpvar[48];
	struct level_env lv = { 0 };
	struct child_plan cp = { 0 };
	sigset_t old;
	void *bpf = NULL;
	size_t bpf_len = 0;
	sv_proc *p;
	pid_t pid;
	int child_errno = 0, attach_rc = 0, rc, how;
	bool masked;

	*out = NULL;
	if (!req->argv || !req->argv[0]) {
		snprintf(err, errlen, "empty command");
		return FC_USAGE;
	}
	how = containment(sv, req, server, err, errlen);
	if (how < 0)
		return FC_IO;
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	p->report_fd = -1;
	/* every child's stdin: one /dev/null the supervisor keeps open */
	if (sv->null_fd < 0)
		sv->null_fd = child_setup_fd_high(open("/dev/null",
						       O_RDONLY | O_CLOEXEC));
	fds[1] = open_out(req->stdout_path);
	fds[2] = open_out(req->stderr_path);
	if (sv->null_fd < 0 || fds[1] < 0 || fds[2] < 0) {
		snprintf(err, errlen, "cannot open output file '%s': %s",
			 fds[1] < 0 ? req->stdout_path : req->stderr_path,
			 strerror(errno));
		goto fail;
	}
	if (req->failpoints || server) {
		int sp[2];
		if (socketpair(AF_UNIX, (server ? SOCK_SEQPACKET : SOCK_STREAM) |
			       SOCK_CLOEXEC, 0, sp) < 0) {
			snprintf(err, errlen, "cannot create failpoint channel: %s",
				 strerror(errno));
			goto fail;
		}
		fds[3] = child_setup_fd_high(sp[0]);
		fds[4] = child_setup_fd_high(sp[1]);
		if (fds[3] < 0 || fds[4] < 0 ||
		    fcntl(fds[3], F_SETFL, O_NONBLOCK) < 0) {
			snprintf(err, errlen, "cannot set up failpoint channel");
			goto fail;
		}
		snprintf(fpvar, sizeof(fpvar), "%s=%d", server ?
			 PROTO_ENV_FORK_SERVER_FD : PROTO_ENV_FAILPOINT_FD,
			 PROTO_FAILPOINT_FD);
	}
	if (report_pipe(fds, err, errlen))
		goto fail;
	if (req->seccomp) {
		int sp[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
			snprintf(err, errlen, "cannot create seccomp channel: %s",
				 strerror(errno));
			goto fail;
		}
		fds[7] = child_setup_fd_high(sp[0]);
		fds[8] = child_setup_fd_high(sp[1]);
		if (fds[7] < 0 || fds[8] < 0) {
			snprintf(err, errlen, "cannot set up seccomp channel");
			goto fail;
		}
		/* compiled here, loaded by the child (invariants 1, 5) */
		attach_rc = inject_seccomp_plan_bpf(req->seccomp, &bpf,
						    &bpf_len);
		if (attach_rc) {
			snprintf(err, errlen, "cannot compile the seccomp "
				 "filter for '%s'", req->argv[0]);
			goto fail;
		}
	}
	cp = (struct child_plan){
		.cs = {
			.parent = getpid(), .parent_pidfd = sv->self_pidfd,
			.contain = (enum child_contain)how,
			.in_fd = sv->null_fd,
			.out_fd = fds[1], .err_fd = fds[2], .fp_fd = fds[4],
			.report_fd = fds[6], .cwd = req->cwd,
			.filter = bpf,
			.filter_len = bpf_len / sizeof(struct sock_filter),
			.seccomp_sock = fds[8],
		},
		.argv = req->argv,
	};
	if (req->writable && (rc = attempt_level(req, how, server, &cp, &lv,
						 err, errlen)) != 0) {
		attach_rc = rc;
		goto fail;
	}
	if (child_contain_flags(cp.cs.contain) & CLONE_NEWUSER)
		child_setup_id_maps(&cp.cs);
	if (cp.cs.switch_ids && how == CHILD_CONTAIN_FS) { /* run_uid itself */
		snprintf(cp.cs.uid_map, sizeof(cp.cs.uid_map), "%u %u 1\n",
			 (unsigned)cp.cs.run_uid, (unsigned)cp.cs.run_uid);
		snprintf(cp.cs.gid_map, sizeof(cp.cs.gid_map), "%u %u 1\n",
			 (unsigned)cp.cs.run_gid, (unsigned)cp.cs.run_gid);
	}
	cp.envp = child_env_build(lv.joined ? lv.joined : req->env, sv->pass_env,
				  req->failpoints || server ? fpvar : NULL);
	if (!via)
		cp.stacks = malloc(2 * SV_CHILD_STACK_SIZE);
	if (!cp.envp || (!via && !cp.stacks)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	rc = launch(via, req, &cp, &pid, &old, &masked, err, errlen);
	if (rc) {
		attach_rc = rc;
		if (masked)
			pthread_sigmask(SIG_SETMASK, &old, NULL);
		goto fail;
	}
	setpgid(pid, pid); /* also done by the child; whoever runs first wins */
	watchdog_register(&sv->wd, pid);
	p->registered = true;
	p->pid = pid;
	p->sv = sv;
	p->st.start_ms = clock_mono_ms();
	p->st.contained = child_contain_has_init((enum child_contain)how);
	p->reaper = how == CHILD_CONTAIN_REAPER;
	p->st.descendants_killed = -1;
	close(fds[6]);
	fds[6] = -1;
	if (req->seccomp) {
		close(fds[8]);
		fds[8] = -1;
		attach_rc = attach_seccomp(p, req, fds[7], err, errlen);
	}
	child_errno = read_report(p, fds[5]);
	if (masked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(cp.envp);
	cp.envp = NULL;
	free(lv.joined);
	lv.joined = NULL;
	free(bpf);
	bpf = NULL;
	if (child_errno || attach_rc) {
		kill(-pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		watchdog_unregister(&sv->wd, pid);
		if (!attach_rc)
			snprintf(err, errlen, "cannot run '%s': %s", req->argv[0],
				 strerror(child_errno));
		goto fail;
	}
	if (p->st.contained) {
		/* its init reports the route's end there (invariant 3) */
		p->report_fd = fds[5];
		fds[5] = -1;
		p->stacks = cp.stacks; /* the init may run on them */
		cp.stacks = NULL;
	}
	free(cp.stacks);
	p->fp_fd = fds[3];
	fds[3] = -1;
	if (p->fp_fd < 0)
		p->fp_eof = true;
	if (req->timeout_ms > 0)
		p->deadline_ms = p->st.start_ms + req->timeout_ms;
	close_fds(fds, 9);
	*out = p;
	return 0;
fail:
	close_fds(fds, 9);
	free(cp.envp);
	free(lv.joined);
	free(cp.stacks); /* the child, if any, is reaped */
	free(bpf);
	inject_seccomp_session_free(p->sess);
	free(p->sysfaults);
	free(p);
	return attach_rc ? attach_rc : FC_IO;
}
