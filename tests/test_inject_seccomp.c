/*
 * test_inject_seccomp.c -- syscall fault injection against real processes.
 *
 * Each test forks a child that installs a plan and re-executes this binary
 * as a scripted route (tests/inject_seccomp_script.h describes the script
 * and what it leaves behind), or execs python3, then drives the session as
 * the supervisor would and checks files, progress, wait status, events and
 * discovery counts.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness/inject/inject_seccomp.h"
#include "tests/inject_seccomp_script.h"

/* --- plan ------------------------------------------------------------- */

static void test_plan_rules(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const good[] = {
		"fsync#2:kill_before@/tmp/x/*.db", "write:errno:ENOSPC",
		"pwrite64#3:kill_after", "rename#1:kill_after@*/final",
		"sendto#4:errno:ECONNRESET@socket:*", "fdatasync#1:count",
		"linkat#7:errno:EIO@*/a:b@c", "unlink#2:kill_after@*/t.db-journal",
	};
	static const char *const bad[] = {
		"fsyncx#1:count", "read#1:kill_after", "close:count",
		"fsync#x:count", "fsync#-1:count", "fsync#1", "fsync#1:explode",
		"fsync#1:errno:EBOGUS", "fsync#1:errno:0", "fsync:count@",
		"execve:kill_before", "openat#1:kill_after",
	};
	char out[256];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		sct_add(fx, good[i]);
		assert_int_equal(inject_seccomp_plan_format_rule(fx->plan, i, out,
								 sizeof(out)), 0);
		assert_string_equal(out, good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(inject_seccomp_plan_add_rule(fx->plan, bad[i]),
				 FC_USAGE);
		assert_true(inject_seccomp_plan_errmsg(fx->plan)[0] != '\0');
	}
	/* failing calls added nothing */
	assert_int_equal(inject_seccomp_plan_rules(fx->plan),
			 sizeof(good) / sizeof(good[0]));
	sct_add(fx, "read#1:errno:5");
	assert_int_equal(inject_seccomp_plan_format_rule(fx->plan,
			 sizeof(good) / sizeof(good[0]), out, sizeof(out)), 0);
	assert_string_equal(out, "read#1:errno:EIO");
	assert_int_equal(inject_seccomp_plan_format_rule(fx->plan, 99, out,
							 sizeof(out)), FC_USAGE);
	assert_int_equal(inject_seccomp_plan_format_rule(fx->plan, 0, out, 8),
			 FC_USAGE);
	assert_int_equal(inject_seccomp_plan_add_rule(fx->plan, "read#1:kill_after"),
			 FC_USAGE);
	assert_non_null(strstr(inject_seccomp_plan_errmsg(fx->plan),
			       "kill_after is not supported for 'read'"));
	assert_int_equal(inject_seccomp_plan_watch(fx->plan, ""), FC_USAGE);
	/* a plan intercepting nothing is refused before anything changes */
	{
		struct inject_seccomp_plan *empty;
		void *bpf = (void *)1;
		size_t len = 1;

		assert_int_equal(inject_seccomp_plan_new(&empty), 0);
		assert_int_equal(inject_seccomp_plan_watch(empty, "/x/*"), 0);

		assert_int_equal(inject_seccomp_plan_bpf(empty, &bpf, &len),
				 FC_USAGE);
		assert_null(bpf);
		assert_int_equal(len, 0);
		inject_seccomp_plan_free(empty);
	}
	assert_int_equal(inject_seccomp_plan_intercept(fx->plan, "sendmsg"),
			 FC_USAGE);
}

static void test_syscall_info_and_glob(void **state)
{
	char esc[64], why[128];
	bool ka = false;

	(void)state;
	assert_int_equal(inject_seccomp_syscall_info("write", &ka), 1);
	assert_true(ka);
	assert_int_equal(inject_seccomp_syscall_info("read", &ka), 1);
	assert_false(ka);
	assert_int_equal(inject_seccomp_syscall_info("unlink", &ka), 1);
	assert_true(ka);
	assert_int_equal(inject_seccomp_syscall_info("openat", &ka), 1);
	assert_false(ka); /* the route would need the fd */
	assert_int_equal(inject_seccomp_syscall_info("execve", &ka), 0);
	/* exists in the table, not on x86_64 */
	assert_int_equal(inject_seccomp_syscall_info("send", &ka), 0);

	assert_int_equal(inject_seccomp_glob_escape("/t/a*b[1]?", esc,
						    sizeof(esc)), 0);
	assert_string_equal(esc, "/t/a\\*b\\[1\\]\\?");
	assert_int_equal(fnmatch(esc, "/t/a*b[1]?", 0), 0);
	assert_int_not_equal(fnmatch(esc, "/t/aXb1Z", 0), 0);
	assert_int_equal(inject_seccomp_glob_escape("/t/a*b", esc, 6), FC_USAGE);

	if (!inject_seccomp_available(why, sizeof(why)))
		fail_msg("not available: %s", why);
}

/* --- discovery -------------------------------------------------------- */

static void test_count_discovery(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = {
		"w:data:r1", "w:other:x", "f:other", "f:data", "P:pipe",
		"w:data:r2", "w:other:x", "f:other", "f:data", "P:pipe",
		"w:data:r3", "w:other:x", "f:other", "f:data", "P:pipe", NULL,
	};
	struct sct_child c;
	json_t *j;

	assert_int_equal(inject_seccomp_plan_intercept(fx->plan, "fsync"), 0);
	assert_int_equal(inject_seccomp_plan_intercept(fx->plan, "write"), 0);
	assert_int_equal(inject_seccomp_plan_watch(fx->plan, "*/data"), 0);
	sct_run_script(&c, fx->plan, fx->dir, -1, ops);

	sct_assert_exit(&c, 0);
	assert_int_equal(c.errors, 0);
	assert_string_equal(sct_slurp(fx, "data"), "r1r2r3");
	assert_int_equal(sct_stat_count(&c, "fsync", sct_in_dir(fx, "data")), 3);
	assert_int_equal(sct_stat_count(&c, "write", sct_in_dir(fx, "data")), 3);
	/* other, progress and the pipe are out of scope: not counted */
	assert_int_equal(inject_seccomp_stats_len(c.s), 2);
	assert_int_equal(sct_count_outcome(&c, INJECT_OUT_CONTINUED), 6);
	assert_int_equal(c.nev, 6);
	assert_string_equal(c.ev[5].syscall, "fsync");
	assert_int_equal(c.ev[5].occurrence, 3);
	assert_int_equal(c.ev[5].syscall_occurrence, 3);

	j = inject_seccomp_stats_json(c.s);
	assert_non_null(j);
	assert_int_equal(json_array_size(j), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(j, 0),
							    "count")), 3);
	json_decref(j);
	j = inject_seccomp_event_json(c.s, &c.ev[5]);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "outcome")),
			    "continued");
	assert_string_equal(json_string_value(json_object_get(j, "path")),
			    sct_in_dir(fx, "data"));
	json_decref(j);
	sct_finish(&c);
}

/* Without watch globs every absolute path outside /dev, /proc, /sys is in
 * scope, so the script's own progress writes count; pipes never do. */
static void test_count_default_scope(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = {
		"w:data:a", "f:data", "w:other:b", "f:other", "P:pipe", NULL,
	};
	struct sct_child c;
	char progress[PATH_MAX];

	assert_int_equal(inject_seccomp_plan_intercept(fx->plan, "fsync"), 0);
	assert_int_equal(inject_seccomp_plan_intercept(fx->plan, "write"), 0);
	sct_run_script(&c, fx->plan, fx->dir, -1, ops);

	sct_assert_exit(&c, 0);
	snprintf(progress, sizeof(progress), "%s", sct_in_dir(fx, "progress"));
	assert_int_equal(sct_stat_count(&c, "write", sct_in_dir(fx, "data")), 1);
	assert_int_equal(sct_stat_count(&c, "fsync", sct_in_dir(fx, "other")), 1);
	assert_int_equal(sct_stat_count(&c, "write", progress), 5);
	assert_int_equal(inject_seccomp_stats_len(c.s), 5);
	for (size_t i = 0; i < inject_seccomp_stats_len(c.s); i++) {
		const char *sc, *pa;
		unsigned long n;

		assert_int_equal(inject_seccomp_stats_get(c.s, i, &sc, &pa, &n), 0);
		assert_true(pa[0] == '/');
	}
	sct_finish(&c);
}

/* --- actions ---------------------------------------------------------- */

static void test_kill_before_fsync2(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = {
		"w:data:A", "f:data", "w:data:B", "f:data", "w:data:C", "f:data",
		NULL,
	};
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	sct_add(fx, "fsync#2:kill_before@*/data");
	sct_run_script(&c, fx->plan, fx->dir, -1, ops);

	sct_assert_killed(&c, SIGKILL);
	assert_string_equal(sct_slurp(fx, "data"), "AB");
	assert_string_equal(sct_slurp(fx, "progress"), "ok 0\nok 1\nok 2\n");
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_BEFORE);
	assert_non_null(ev);
	assert_string_equal(ev->syscall, "fsync");
	assert_string_equal(ev->path, sct_in_dir(fx, "data"));
	assert_int_equal(ev->occurrence, 2);
	assert_int_equal(ev->rule, 0);
	assert_int_equal(c.errors, 0);
	sct_finish(&c);
}

/* The hook sees each in-scope call decided: the power-loss model must
 * know which syncs will not run. */
struct seen {
	int n;
	enum inject_action action[8];
	int rule[8];
};

static void note_decision(void *arg, const struct inject_seccomp_event *ev)
{
	struct seen *s = arg;

	if (strcmp(ev->syscall, "fsync") == 0 && s->n < 8) {
		s->action[s->n] = ev->action;
		s->rule[s->n++] = ev->rule;
	}
}

/* power_loss acts as kill_before (the call never runs; the harness's
 * model then puts the files back), and the hook sees it coming. */
static void test_power_loss_fsync2(void **state)
{
	struct sct_fx *fx = *state;
	char *argv[] = { "/proc/self/exe", "--child", "w:data:A", "f:data",
			 "w:data:B", "f:data", "w:data:C", NULL };
	struct seen seen = { 0 };
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	sct_add(fx, "fsync#2:power_loss@*/data");
	sct_start(&c, fx->plan, fx->dir, -1, argv);
	inject_seccomp_session_set_hook(c.s, note_decision, &seen);
	sct_drive(&c);

	sct_assert_killed(&c, SIGKILL);
	assert_string_equal(sct_slurp(fx, "data"), "AB");
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_BEFORE);
	assert_non_null(ev);
	assert_int_equal(ev->action, INJECT_POWER_LOSS);
	assert_int_equal(ev->occurrence, 2);
	assert_int_equal(seen.n, 2);
	assert_int_equal(seen.action[0], INJECT_COUNT);
	assert_int_equal(seen.rule[0], -1);
	assert_int_equal(seen.action[1], INJECT_POWER_LOSS);
	assert_int_equal(seen.rule[1], 0);
	assert_string_equal(inject_action_name(INJECT_POWER_LOSS), "power_loss");
	assert_int_equal(c.errors, 0);
	sct_finish(&c);
}

static void test_kill_after_write3(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = {
		"w:data:r1;", "w:data:r2;", "w:data:r3;", "w:data:r4;",
		"w:data:r5;", NULL,
	};
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	sct_add(fx, "write#3:kill_after@*/data");
	sct_run_script(&c, fx->plan, fx->dir, -1, ops);

	sct_assert_killed(&c, SIGKILL);
	/* write 3 landed, the route never saw it return */
	assert_string_equal(sct_slurp(fx, "data"), "r1;r2;r3;");
	assert_string_equal(sct_slurp(fx, "progress"), "ok 0\nok 1\n");
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	assert_int_equal(ev->result, 3);
	assert_int_equal(ev->occurrence, 3);
	assert_int_equal(c.errors, 0);
	sct_finish(&c);
}

static void test_kill_after_pwrite(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = {
		"w:data:XXXXXXXX", "p:data:2:ab", "w:data:tail", NULL,
	};
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	sct_add(fx, "pwrite64#1:kill_after");
	sct_run_script(&c, fx->plan, fx->dir, -1, ops);

	sct_assert_killed(&c, SIGKILL);
	assert_string_equal(sct_slurp(fx, "data"), "XXabXXXX");
	assert_string_equal(sct_slurp(fx, "progress"), "ok 0\n");
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	assert_int_equal(ev->result, 2);
	sct_finish(&c);
}

static void test_kill_after_fdatasync(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = {
		"w:data:abc", "d:data", "w:data:def", NULL,
	};
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	sct_add(fx, "fdatasync#1:kill_after@*/data");
	sct_run_script(&c, fx->plan, fx->dir, -1, ops);

	sct_assert_killed(&c, SIGKILL);
	assert_string_equal(sct_slurp(fx, "data"), "abc");
	assert_string_equal(sct_slurp(fx, "progress"), "ok 0\n");
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	assert_string_equal(ev->syscall, "fdatasync");
	assert_int_equal(ev->result, 0);
	sct_finish(&c);
}

/* fsync's effect cannot be seen without a power cut, but its result can:
 * on a pipe only a call really made returns EINVAL. */
static void test_kill_after_fsync_performed(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = { "F:x", NULL };
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	assert_int_equal(inject_seccomp_plan_watch(fx->plan, "pipe:*"), 0);
	sct_add(fx, "fsync#1:kill_after");
	sct_run_script(&c, fx->plan, fx->dir, -1, ops);
	sct_assert_killed(&c, SIGKILL);
	assert_string_equal(sct_slurp(fx, "progress"), "");
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	assert_int_equal(ev->result, -EINVAL);
	sct_finish(&c);
}

/* Pipes are written through a fresh non-blocking open; a pipe without a
 * reader gives EPIPE and no SIGPIPE reaches the supervisor (this test). */
static void test_kill_after_pipe_write(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops1[] = { "P:abc", NULL };
	static const char *const ops2[] = { "Q:abc", NULL };
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	assert_int_equal(inject_seccomp_plan_watch(fx->plan, "pipe:*"), 0);
	sct_add(fx, "write#1:kill_after");
	sct_run_script(&c, fx->plan, fx->dir, -1, ops1);
	sct_assert_killed(&c, SIGKILL);
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	assert_int_equal(ev->result, 3);
	sct_finish(&c);

	sct_run_script(&c, fx->plan, fx->dir, -1, ops2);
	sct_assert_killed(&c, SIGKILL);
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	assert_int_equal(ev->result, -EPIPE);
	sct_finish(&c);
}

static void test_kill_after_rename_and_link(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops1[] = {
		"w:tmp1:x", "r:tmp1:final", "w:data:after", NULL,
	};
	static const char *const ops2[] = {
		"w:tmp2:y", "l:tmp2:final2", "w:data:after", NULL,
	};
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	sct_add(fx, "rename#1:kill_after@*/final");
	sct_add(fx, "link#1:kill_after@*/final2");
	sct_run_script(&c, fx->plan, fx->dir, -1, ops1);
	sct_assert_killed(&c, SIGKILL);
	assert_false(sct_exists(fx, "tmp1"));
	assert_string_equal(sct_slurp(fx, "final"), "x");
	assert_false(sct_exists(fx, "data"));
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	/* relative arguments resolved against the route's cwd */
	assert_string_equal(ev->path, sct_in_dir(fx, "final"));
	assert_string_equal(ev->from, sct_in_dir(fx, "tmp1"));
	assert_int_equal(ev->result, 0);
	sct_finish(&c);

	sct_run_script(&c, fx->plan, fx->dir, -1, ops2);
	sct_assert_killed(&c, SIGKILL);
	assert_string_equal(sct_slurp(fx, "tmp2"), "y");
	assert_string_equal(sct_slurp(fx, "final2"), "y");
	assert_false(sct_exists(fx, "data"));
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	assert_string_equal(ev->syscall, "link");
	sct_finish(&c);
}

/* --- every mutating call: kill_before leaves it undone, kill_after done -- */

/*
 * One mutating call: what the run dir holds first (`setup`: "f:NAME=TEXT"
 * files and "d:NAME" directories, in order), the script (ops[call] is the
 * faulted call, the op after it must never run), the rule's glob (which
 * checks that the call is described by the path the route meant), and the
 * dir as snapshot() prints it when the call landed and when it did not.
 */
struct mutation {
	const char *syscall;
	const char *const setup[3];
	const char *const ops[5];
	int call;
	const char *glob;
	const char *landed;
	const char *untouched;
	long long result;       /* what the performed call returned */
};

static const struct mutation mutations[] = {
	{ "writev", { NULL }, { "w:data:x", "writev:data:AB:CD", "w:after:y" },
	  1, "*/data", "data=xABCD", "data=x", 4 },
	{ "pwritev", { NULL },
	  { "w:data:XXXXXXXX", "pwritev:data:2:ab:cd", "w:after:y" },
	  1, "*/data", "data=XXabcdXX", "data=XXXXXXXX", 4 },
	{ "pwritev2", { NULL },
	  { "w:data:XX", "pwritev2:data:-1:ab:cd", "w:after:y" },
	  1, "*/data", "data=XXabcd", "data=XX", 4 },
	/* RWF_APPEND: at the end (2), not at the route's offset (4) */
	{ "pwritev2", { NULL },
	  { "w:data:XXXX", "ftruncate:data:2", "pwritev2a:data:-1:ab:cd",
	    "w:after:y" },
	  2, "*/data", "data=XXabcd", "data=XX", 4 },
	{ "ftruncate", { NULL }, { "w:data:abcdef", "ftruncate:data:3", "w:after:y" },
	  1, "*/data", "data=abc", "data=abcdef", 0 },
	{ "fallocate", { NULL },
	  { "w:data:ab", "fallocate:data:0:100", "w:after:y" },
	  1, "*/data", "data(100 bytes)", "data=ab", 0 },
	{ "truncate", { NULL }, { "w:data:abc", "truncate:data:1", "w:after:y" },
	  1, "*/data", "data=a", "data=abc", 0 },
	{ "unlink", { "f:victim=v" }, { "unlink:victim", "w:after:y" },
	  0, "*/victim", "", "victim=v", 0 },
	{ "unlinkat", { "d:sub", "f:sub/victim=v" },
	  { "unlinkat:sub:victim", "w:after:y" },
	  0, "*/sub/victim", "sub/755{}", "sub/755{victim=v}", 0 },
	{ "rmdir", { "d:gone" }, { "rmdir:gone", "w:after:y" },
	  0, "*/gone", "", "gone/755{}", 0 },
	/* the route's umask, not the supervisor's (the test runs the
	 * supervisor under umask 077: see test_mutations) */
	{ "mkdir", { NULL }, { "umask:027", "mkdir:made:777", "w:after:y" },
	  1, "*/made", "made/750{}", "", 0 },
	{ "mkdirat", { "d:sub" },
	  { "umask:022", "mkdirat:sub:made:751", "w:after:y" },
	  1, "*/sub/made", "sub/755{made/751{}}", "sub/755{}", 0 },
	{ "symlink", { NULL }, { "symlink:no/such:lnk", "w:after:y" },
	  0, "*/lnk", "lnk->no/such", "", 0 },
	{ "symlinkat", { "d:sub" }, { "symlinkat:../x:sub:lnk", "w:after:y" },
	  0, "*/sub/lnk", "sub/755{lnk->../x}", "sub/755{}", 0 },
	/* these worked before; their dirfd forms, checked the same way */
	{ "renameat", { "d:sub", "f:sub/a=1" },
	  { "renameat:sub:a:b", "w:after:y" },
	  0, "*/sub/b", "sub/755{b=1}", "sub/755{a=1}", 0 },
	{ "renameat2", { "d:sub", "f:sub/a=1" },
	  { "renameat2:sub:a:b", "w:after:y" },
	  0, "*/sub/b", "sub/755{b=1}", "sub/755{a=1}", 0 },
	{ "linkat", { "d:sub", "f:sub/a=1" }, { "linkat:sub:a:b", "w:after:y" },
	  0, "*/sub/b", "sub/755{a=1 b=1}", "sub/755{a=1}", 0 },
};

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* dir's entries, sorted, but "progress": "f=TEXT" ("f(N bytes)" beyond
 * 32), "d/MODE{...}", "l->TARGET", separated by spaces. */
static void snapshot(const char *dir, char *out, size_t outlen)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, by_name);
	size_t used = 0;

	out[0] = '\0';
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		char path[PATH_MAX], inner[512], text[40];
		struct stat st;
		ssize_t len;
		int fd;

		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
		    strcmp(name, "progress") == 0) {
			free(ents[i]);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		assert_int_equal(lstat(path, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			snapshot(path, inner, sizeof(inner));
			snprintf(text, sizeof(text), "/%o{", st.st_mode & 07777);
			used += (size_t)snprintf(out + used, outlen - used, "%s%s%s%s}",
						 used ? " " : "", name, text, inner);
		} else if (S_ISLNK(st.st_mode)) {
			len = readlink(path, text, sizeof(text) - 1);
			assert_true(len >= 0);
			text[len] = '\0';
			used += (size_t)snprintf(out + used, outlen - used, "%s%s->%s",
						 used ? " " : "", name, text);
		} else if (st.st_size > 32) {
			used += (size_t)snprintf(out + used, outlen - used,
						 "%s%s(%lld bytes)", used ? " " : "",
						 name, (long long)st.st_size);
		} else {
			fd = open(path, O_RDONLY);
			assert_true(fd >= 0);
			len = read(fd, text, sizeof(text) - 1);
			close(fd);
			text[len > 0 ? len : 0] = '\0';
			used += (size_t)snprintf(out + used, outlen - used, "%s%s=%s",
						 used ? " " : "", name, text);
		}
		assert_true(used < outlen);
		free(ents[i]);
	}
	free(ents);
}

/* Make the files and dirs of m->setup in dir. */
static void set_up(const char *dir, const struct mutation *m)
{
	assert_int_equal(mkdir(dir, 0755), 0);
	for (size_t i = 0; i < 3 && m->setup[i]; i++) {
		char path[PATH_MAX];
		const char *eq = strchr(m->setup[i], '=');
		int fd;

		if (m->setup[i][0] == 'd') {
			snprintf(path, sizeof(path), "%s/%s", dir, m->setup[i] + 2);
			assert_int_equal(mkdir(path, 0755), 0);
			assert_int_equal(chmod(path, 0755), 0);
			continue;
		}
		assert_non_null(eq);
		snprintf(path, sizeof(path), "%s/%.*s", dir,
			 (int)(eq - m->setup[i] - 2), m->setup[i] + 2);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, eq + 1, strlen(eq + 1)),
				 (ssize_t)strlen(eq + 1));
		close(fd);
	}
}

/* Run m with `action`; the run dir is left for the caller to look at. */
static void run_mutation(struct sct_fx *fx, const struct mutation *m,
			 const char *action, const char *dir,
			 struct sct_child *c)
{
	struct inject_seccomp_plan *plan;
	char rule[128], progress[256] = "", path[PATH_MAX];
	int fd;
	ssize_t len;

	set_up(dir, m);
	assert_int_equal(inject_seccomp_plan_new(&plan), 0);
	snprintf(rule, sizeof(rule), "%s#1:%s@%s", m->syscall, action, m->glob);
	if (inject_seccomp_plan_add_rule(plan, rule))
		fail_msg("%s: %s", rule, inject_seccomp_plan_errmsg(plan));
	sct_run_script(c, plan, dir, -1, m->ops);
	inject_seccomp_plan_free(plan);
	(void)fx;
	/* the route saw every op before the call, not the call */
	for (int i = 0; i < m->call; i++)
		snprintf(progress + strlen(progress),
			 sizeof(progress) - strlen(progress), "ok %d\n", i);
	snprintf(path, sizeof(path), "%s/progress", dir);
	fd = open(path, O_RDONLY);
	len = fd >= 0 ? read(fd, path, sizeof(path) - 1) : 0;
	if (fd >= 0)
		close(fd);
	path[len > 0 ? len : 0] = '\0';
	if (strcmp(path, progress) != 0)
		fail_msg("%s: progress '%s', expected '%s'", rule, path, progress);
	sct_assert_killed(c, SIGKILL);
	assert_int_equal(c->errors, 0);
}

static void test_mutations(void **state)
{
	struct sct_fx *fx = *state;
	mode_t old = umask(077); /* the supervisor's; the routes set theirs */

	for (size_t i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
		const struct mutation *m = &mutations[i];
		const struct inject_seccomp_event *ev;
		char dir[PATH_MAX], got[1024];
		struct sct_child c;
		bool ka = false;

		assert_int_equal(inject_seccomp_syscall_info(m->syscall, &ka), 1);
		assert_true(ka);

		snprintf(dir, sizeof(dir), "%s/%zu-before", fx->dir, i);
		run_mutation(fx, m, "kill_before", dir, &c);
		snapshot(dir, got, sizeof(got));
		if (strcmp(got, m->untouched) != 0)
			fail_msg("%s kill_before: '%s', expected '%s'", m->syscall,
				 got, m->untouched);
		assert_non_null(sct_find_outcome(&c, INJECT_OUT_KILLED_BEFORE));
		assert_null(sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER));
		sct_finish(&c);

		snprintf(dir, sizeof(dir), "%s/%zu-after", fx->dir, i);
		run_mutation(fx, m, "kill_after", dir, &c);
		snapshot(dir, got, sizeof(got));
		if (strcmp(got, m->landed) != 0)
			fail_msg("%s kill_after: '%s', expected '%s'", m->syscall,
				 got, m->landed);
		ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
		assert_non_null(ev);
		assert_string_equal(ev->syscall, m->syscall);
		if (ev->result != m->result)
			fail_msg("%s kill_after: result %lld, expected %lld",
				 m->syscall, ev->result, m->result);
		sct_finish(&c);
	}
	umask(old);
}

/* A kill_after whose call fails when the supervisor makes it fails the
 * same way: unlink of a missing file, mkdir over an existing one. */
static void test_mutation_errors(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops1[] = { "unlink:missing", NULL };
	static const char *const ops2[] = { "mkdir:progress:755", NULL };
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	sct_add(fx, "unlink#1:kill_after");
	sct_add(fx, "mkdir#1:kill_after");
	sct_run_script(&c, fx->plan, fx->dir, -1, ops1);
	sct_assert_killed(&c, SIGKILL);
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	assert_int_equal(ev->result, -ENOENT);
	sct_finish(&c);
	sct_run_script(&c, fx->plan, fx->dir, -1, ops2);
	sct_assert_killed(&c, SIGKILL);
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	assert_int_equal(ev->result, -EEXIST);
	sct_finish(&c);
}

static void test_kill_after_sendto(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = { "s:hello", "s:world", NULL };
	const struct inject_seccomp_event *ev;
	struct sct_child c;
	char buf[64];
	ssize_t n;
	int sp[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	assert_int_equal(inject_seccomp_plan_watch(fx->plan, "socket:*"), 0);
	sct_add(fx, "sendto#1:kill_after");
	sct_run_script(&c, fx->plan, fx->dir, sp[1], ops);
	close(sp[1]);

	sct_assert_killed(&c, SIGKILL);
	n = read(sp[0], buf, sizeof(buf) - 1);
	assert_int_equal(n, 5);
	buf[n] = '\0';
	assert_string_equal(buf, "hello");
	assert_string_equal(sct_slurp(fx, "progress"), "");
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	assert_int_equal(ev->result, 5);
	assert_int_equal(fnmatch("socket:\\[*\\]", ev->path, 0), 0);
	close(sp[0]);
	sct_finish(&c);
}

/* A connected loopback TCP pair: *client to hand to the route, *server
 * (non-blocking) to read what it sent; the port goes to port. */
static void tcp_pair(int *client, int *server, unsigned *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &alen), 0);
	*port = ntohs(a.sin_port);
	*client = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*client, (struct sockaddr *)&a, sizeof(a)), 0);
	*server = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	assert_true(*server >= 0);
	close(l);
}

/* Sockets are named by their peer for scope, rules and discovery, and an
 * ECONNRESET answered on one really ends the connection: the peer reads
 * EOF although another copy of the socket (ours) stays open. */
static void test_socket_peer_and_reset(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = { "s:hello", "s:world", "s:late", NULL };
	const struct inject_seccomp_event *ev;
	struct sct_child c;
	struct pollfd pfd;
	char peer[64], rule[96], buf[64];
	unsigned port;
	int client, server;

	tcp_pair(&client, &server, &port);
	snprintf(peer, sizeof(peer), "tcp:127.0.0.1:%u", port);
	assert_int_equal(inject_seccomp_plan_watch(fx->plan, "tcp:*"), 0);
	snprintf(rule, sizeof(rule), "sendto#2:errno:ECONNRESET@%s", peer);
	sct_add(fx, rule);
	sct_run_script(&c, fx->plan, fx->dir, client, ops);

	sct_assert_exit(&c, ECONNRESET);
	assert_string_equal(sct_slurp(fx, "progress"), "ok 0\nfail 1 104\n");
	ev = sct_find_outcome(&c, INJECT_OUT_FAILED);
	assert_non_null(ev);
	assert_string_equal(ev->peer, peer);
	assert_int_equal(fnmatch("socket:\\[*\\]", ev->path, 0), 0);
	assert_int_equal(sct_stat_count(&c, "sendto", peer), 2);
	/* "hello", then the end of the connection, not a silent socket */
	assert_int_equal(read(server, buf, sizeof(buf)), 5);
	pfd = (struct pollfd){ .fd = server, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	assert_int_equal(read(server, buf, sizeof(buf)), 0);
	sct_finish(&c);
	close(client);
	close(server);
}

/* A watch glob on another peer leaves the socket out of scope. */
static void test_socket_other_peer_out_of_scope(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = { "s:hello", NULL };
	struct sct_child c;
	char glob[64], buf[16];
	unsigned port;
	int client, server;

	tcp_pair(&client, &server, &port);
	snprintf(glob, sizeof(glob), "tcp:127.0.0.1:%u", port == 1 ? 2 : port - 1);
	assert_int_equal(inject_seccomp_plan_watch(fx->plan, glob), 0);
	sct_add(fx, "sendto#1:errno:ECONNRESET");
	sct_run_script(&c, fx->plan, fx->dir, client, ops);
	sct_assert_exit(&c, 0);
	assert_int_equal(sct_count_outcome(&c, INJECT_OUT_FAILED), 0);
	assert_int_equal(read(server, buf, sizeof(buf)), 5);
	sct_finish(&c);
	close(client);
	close(server);
}

static void test_errno(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops1[] = {
		"w:data:A", "f:data", "w:data:B", NULL,
	};
	static const char *const ops2[] = {
		"w:data:A", "w:data:B", "w:data:C", NULL,
	};
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	sct_add(fx, "fsync#1:errno:EIO@*/data");
	sct_run_script(&c, fx->plan, fx->dir, -1, ops1);
	sct_assert_exit(&c, EIO);
	assert_string_equal(sct_slurp(fx, "progress"), "ok 0\nfail 1 5\n");
	assert_string_equal(sct_slurp(fx, "data"), "A");
	ev = sct_find_outcome(&c, INJECT_OUT_FAILED);
	assert_non_null(ev);
	assert_int_equal(ev->error, EIO);
	sct_finish(&c);

	/* A fresh plan: ENOSPC on the second write; it writes nothing. */
	inject_seccomp_plan_free(fx->plan);
	assert_int_equal(inject_seccomp_plan_new(&fx->plan), 0);
	sct_add(fx, "write#2:errno:ENOSPC@*/data");
	unlink(sct_in_dir(fx, "data"));
	unlink(sct_in_dir(fx, "progress"));
	sct_run_script(&c, fx->plan, fx->dir, -1, ops2);
	sct_assert_exit(&c, ENOSPC);
	assert_string_equal(sct_slurp(fx, "data"), "A");
	assert_string_equal(sct_slurp(fx, "progress"), "ok 0\nfail 1 28\n");
	sct_finish(&c);

	/* No occurrence: every matching call fails. */
	inject_seccomp_plan_free(fx->plan);
	assert_int_equal(inject_seccomp_plan_new(&fx->plan), 0);
	sct_add(fx, "write:errno:ECONNRESET@*/data");
	unlink(sct_in_dir(fx, "data"));
	unlink(sct_in_dir(fx, "progress"));
	sct_run_script(&c, fx->plan, fx->dir, -1, ops2);
	sct_assert_exit(&c, ECONNRESET);
	assert_string_equal(sct_slurp(fx, "data"), "");
	sct_finish(&c);
}

/* The scope (watch) and a rule's own glob both keep other files out. */
static void test_path_filter(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = {
		"w:other:x", "f:other", "f:other", "w:data:y", "f:data",
		"w:data:z", NULL,
	};
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	/* 1: watch only data; the rule has no glob */
	assert_int_equal(inject_seccomp_plan_watch(fx->plan, "*/data"), 0);
	sct_add(fx, "fsync#1:kill_before");
	sct_run_script(&c, fx->plan, fx->dir, -1, ops);
	sct_assert_killed(&c, SIGKILL);
	assert_string_equal(sct_slurp(fx, "progress"),
			    "ok 0\nok 1\nok 2\nok 3\n");
	assert_int_equal(sct_stat_count(&c, "fsync", sct_in_dir(fx, "other")), 0);
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_BEFORE);
	assert_non_null(ev);
	assert_string_equal(ev->path, sct_in_dir(fx, "data"));
	assert_int_equal(ev->syscall_occurrence, 1);
	sct_finish(&c);

	/* 2: default scope; the rule's glob picks data, others still count */
	inject_seccomp_plan_free(fx->plan);
	assert_int_equal(inject_seccomp_plan_new(&fx->plan), 0);
	sct_add(fx, "fsync#1:kill_before@*/data");
	unlink(sct_in_dir(fx, "progress"));
	sct_run_script(&c, fx->plan, fx->dir, -1, ops);
	sct_assert_killed(&c, SIGKILL);
	assert_string_equal(sct_slurp(fx, "progress"),
			    "ok 0\nok 1\nok 2\nok 3\n");
	assert_int_equal(sct_stat_count(&c, "fsync", sct_in_dir(fx, "other")), 2);
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_BEFORE);
	assert_non_null(ev);
	assert_int_equal(ev->occurrence, 1);
	assert_int_equal(ev->syscall_occurrence, 3);
	sct_finish(&c);
}

/* --- stale notifications ---------------------------------------------- */

struct racer {
	pid_t pid;
	int sig;
	int fired;
	int notify_fd; /* >= 0: the signal is handled; wait for the restart */
	const char *syscall; /* the call on .../data it races; NULL: write */
};

/* Between receive and validation: the route dies of another signal. */
static void kill_on_data_write(void *arg, const struct inject_seccomp_event *ev)
{
	struct racer *r = arg;
	siginfo_t si;
	size_t len = strlen(ev->path);

	if (r->fired ||
	    strcmp(ev->syscall, r->syscall ? r->syscall : "write") != 0 ||
	    len < 5 ||
	    strcmp(ev->path + len - 5, "/data") != 0)
		return;
	r->fired = 1;
	kill(r->pid, r->sig);
	if (r->notify_fd >= 0) {
		/* the restarted call is a new notification */
		struct pollfd pfd = { .fd = r->notify_fd, .events = POLLIN };

		poll(&pfd, 1, 10000);
		return;
	}
	/* wait until it is dead, without reaping it */
	waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOWAIT);
}

static void test_stale_after_receive(void **state)
{
	struct sct_fx *fx = *state;
	static const char *const ops[] = { "w:data:never", NULL };
	struct racer r = { .sig = SIGTERM, .notify_fd = -1 };
	char *argv[] = { "/proc/self/exe", "--child", (char *)ops[0], NULL };
	struct sct_child c;

	sct_add(fx, "write#1:kill_after@*/data");
	sct_start(&c, fx->plan, fx->dir, -1, argv);
	r.pid = c.pid;
	inject_seccomp_session_set_hook(c.s, kill_on_data_write, &r);
	sct_drive(&c);

	assert_int_equal(r.fired, 1);
	sct_assert_killed(&c, SIGTERM);
	assert_int_equal(c.errors, 0);
	assert_int_equal(c.stale, 1);
	assert_null(sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER));
	/* the write was not performed for the dead route, nor counted */
	assert_true(sct_exists(fx, "data"));
	assert_string_equal(sct_slurp(fx, "data"), "");
	assert_int_equal(sct_stat_count(&c, "write", sct_in_dir(fx, "data")), 0);
	sct_finish(&c);
}

/* The same for a call that names a path: the unlink is not made for a
 * route that died before the supervisor acted. */
static void test_stale_unlink(void **state)
{
	struct sct_fx *fx = *state;
	char *argv[] = { "/proc/self/exe", "--child", "w:data:x", "unlink:data",
			 NULL };
	struct racer r = { .sig = SIGTERM, .notify_fd = -1, .syscall = "unlink" };
	struct sct_child c;

	sct_add(fx, "unlink#1:kill_after@*/data");
	sct_start(&c, fx->plan, fx->dir, -1, argv);
	r.pid = c.pid;
	inject_seccomp_session_set_hook(c.s, kill_on_data_write, &r);
	sct_drive(&c);

	assert_int_equal(r.fired, 1);
	sct_assert_killed(&c, SIGTERM);
	assert_int_equal(c.errors, 0);
	assert_int_equal(c.stale, 1);
	assert_null(sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER));
	assert_string_equal(sct_slurp(fx, "data"), "x");
	assert_int_equal(sct_stat_count(&c, "unlink", sct_in_dir(fx, "data")), 0);
	sct_finish(&c);
}

/* The route takes a signal while the supervisor holds its write: the call
 * is withdrawn and restarted.  The withdrawn one must not be acted on nor
 * counted, so the restarted one is still write #1 and is the one killed. */
static void test_stale_restarted_call(void **state)
{
	struct sct_fx *fx = *state;
	char *argv[] = { "/proc/self/exe", "--child", "H:x", "w:data:once",
			 "w:data:twice", NULL };
	struct racer r = { .sig = SIGUSR1 };
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	sct_add(fx, "write#1:kill_after@*/data");
	sct_start(&c, fx->plan, fx->dir, -1, argv);
	r.pid = c.pid;
	r.notify_fd = inject_seccomp_session_fd(c.s);
	inject_seccomp_session_set_hook(c.s, kill_on_data_write, &r);
	sct_drive(&c);

	assert_int_equal(r.fired, 1);
	sct_assert_killed(&c, SIGKILL);
	assert_int_equal(c.errors, 0);
	assert_int_equal(c.stale, 1);
	assert_string_equal(sct_slurp(fx, "data"), "once");
	assert_string_equal(sct_slurp(fx, "progress"), "ok 0\n");
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_AFTER);
	assert_non_null(ev);
	assert_int_equal(ev->occurrence, 1);
	assert_int_equal(ev->result, 4);
	assert_int_equal(sct_stat_count(&c, "write", sct_in_dir(fx, "data")), 1);
	sct_finish(&c);
}

/* Killed while pending, before the supervisor read the notification. */
static void test_withdrawn_before_receive(void **state)
{
	struct sct_fx *fx = *state;
	char *argv[] = { "/proc/self/exe", "--child", "f:data", NULL };
	struct inject_seccomp_event *ev = malloc(sizeof(*ev));
	struct pollfd pfd;
	struct sct_child c;
	siginfo_t si;

	assert_non_null(ev);
	sct_add(fx, "fsync#1:kill_after");
	sct_start(&c, fx->plan, fx->dir, -1, argv);
	pfd.fd = inject_seccomp_session_fd(c.s);
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	assert_true(pfd.revents & POLLIN);
	kill(c.pid, SIGKILL);
	waitid(P_PID, (id_t)c.pid, &si, WEXITED | WNOWAIT);

	assert_int_equal(inject_seccomp_handle(c.s, ev), 0);
	assert_true(ev->outcome == INJECT_OUT_HANGUP ||
		    ev->outcome == INJECT_OUT_NONE);
	assert_int_equal(inject_seccomp_stats_len(c.s), 0);
	assert_int_equal(waitpid(c.pid, &c.status, 0), c.pid);
	sct_assert_killed(&c, SIGKILL);
	free(ev);
	sct_finish(&c);
}

/* --- routes in other languages ---------------------------------------- */

static void test_python_route(void **state)
{
	struct sct_fx *fx = *state;
	char *argv[] = {
		"/usr/bin/python3", "-c",
		"import os\n"
		"fd = os.open('py.dat', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\n"
		"for i in range(3):\n"
		"    os.write(fd, b'%d\\n' % i)\n"
		"    os.fsync(fd)\n",
		NULL,
	};
	struct sct_child c;

	if (access(argv[0], X_OK) != 0)
		skip();
	/* discovery */
	assert_int_equal(inject_seccomp_plan_intercept(fx->plan, "write"), 0);
	assert_int_equal(inject_seccomp_plan_intercept(fx->plan, "fsync"), 0);
	assert_int_equal(inject_seccomp_plan_watch(fx->plan, "*/py.dat"), 0);
	sct_start(&c, fx->plan, fx->dir, -1, argv);
	sct_drive(&c);
	sct_assert_exit(&c, 0);
	assert_string_equal(sct_slurp(fx, "py.dat"), "0\n1\n2\n");
	assert_int_equal(sct_stat_count(&c, "write", sct_in_dir(fx, "py.dat")), 3);
	assert_int_equal(sct_stat_count(&c, "fsync", sct_in_dir(fx, "py.dat")), 3);
	sct_finish(&c);

	/* kill before the second fsync */
	sct_add(fx, "fsync#2:kill_before");
	sct_start(&c, fx->plan, fx->dir, -1, argv);
	sct_drive(&c);
	sct_assert_killed(&c, SIGKILL);
	assert_string_equal(sct_slurp(fx, "py.dat"), "0\n1\n");
	assert_non_null(sct_find_outcome(&c, INJECT_OUT_KILLED_BEFORE));
	sct_finish(&c);
}

/* SQLite's commit point in rollback-journal mode is the journal's unlink:
 * killed just before it, the next open rolls the transaction back. */
static void test_python_sqlite_commit_point(void **state)
{
	struct sct_fx *fx = *state;
	char *argv[] = {
		"/usr/bin/python3", "-c",
		"import sqlite3\n"
		"db = sqlite3.connect('t.db', isolation_level=None)\n"
		"db.execute('pragma journal_mode=delete')\n"
		"db.execute('create table if not exists t(x)')\n"
		"db.execute('begin')\n"
		"db.execute('insert into t values (42)')\n"
		"db.execute('commit')\n",
		NULL,
	};
	char *check[] = {
		"/usr/bin/python3", "-c",
		"import sqlite3, sys\n"
		"n = sqlite3.connect('t.db').execute('select count(*) from t')"
		".fetchone()[0]\n"
		"sys.exit(10 + n)\n",
		NULL,
	};
	const struct inject_seccomp_event *ev;
	struct sct_child c;

	if (access(argv[0], X_OK) != 0)
		skip();
	/* the table is created by a first, clean run (its own journal unlink
	 * is #1 and #2 is the insert's) */
	sct_add(fx, "unlink#2:kill_before@*/t.db-journal");
	sct_start(&c, fx->plan, fx->dir, -1, argv);
	sct_drive(&c);
	sct_assert_killed(&c, SIGKILL);
	ev = sct_find_outcome(&c, INJECT_OUT_KILLED_BEFORE);
	assert_non_null(ev);
	assert_string_equal(ev->path, sct_in_dir(fx, "t.db-journal"));
	assert_true(sct_exists(fx, "t.db-journal"));
	sct_finish(&c);

	/* a clean reader (no rules fire: the plan counts afresh) */
	inject_seccomp_plan_free(fx->plan);
	assert_int_equal(inject_seccomp_plan_new(&fx->plan), 0);
	assert_int_equal(inject_seccomp_plan_intercept(fx->plan, "unlink"), 0);
	sct_start(&c, fx->plan, fx->dir, -1, check);
	sct_drive(&c);
	sct_assert_exit(&c, 10); /* rolled back: no row */
	sct_finish(&c);

	/* control: the same writer, undisturbed, commits the row; the table
	 * exists now, so only the insert's commit unlinks the journal */
	sct_start(&c, fx->plan, fx->dir, -1, argv);
	sct_drive(&c);
	sct_assert_exit(&c, 0);
	assert_int_equal(sct_stat_count(&c, "unlink",
					sct_in_dir(fx, "t.db-journal")), 1);
	sct_finish(&c);
	sct_start(&c, fx->plan, fx->dir, -1, check);
	sct_drive(&c);
	sct_assert_exit(&c, 11);
	sct_finish(&c);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_plan_rules, sct_setup, sct_teardown),
		cmocka_unit_test(test_syscall_info_and_glob),
		cmocka_unit_test_setup_teardown(test_count_discovery, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_count_default_scope, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_kill_before_fsync2, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_power_loss_fsync2, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_kill_after_write3, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_kill_after_pwrite, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_kill_after_fdatasync, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_kill_after_fsync_performed, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_kill_after_pipe_write, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_kill_after_rename_and_link, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_mutations, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_mutation_errors, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_kill_after_sendto, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_socket_peer_and_reset, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_socket_other_peer_out_of_scope, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_errno, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_path_filter, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_stale_after_receive, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_stale_unlink, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_stale_restarted_call, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_withdrawn_before_receive, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_python_route, sct_setup, sct_teardown),
		cmocka_unit_test_setup_teardown(test_python_sqlite_commit_point, sct_setup, sct_teardown),
	};

	if (argc > 1 && strcmp(argv[1], "--child") == 0)
		return sct_child_main(argc - 2, argv + 2);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
