/*
 * inject_seccomp.c -- the injection plan: which syscalls, which scope, which
 * rules; the rule string form; the table of supported syscalls.
 *
 * Invariants:
 *  1. The syscall table below is the only list of what can be intercepted;
 *     a plan refers to syscalls by table index, never by name or number, so
 *     a plan cannot name a call this module does not know how to describe.
 *  2. Syscalls the child makes between loading the filter and execve or
 *     returning into the route (sendmsg, close, execve, exit: step 7 of
 *     common/child_setup.h) are absent from the table: intercepting them
 *     would make the child wait on a listener the supervisor does not hold
 *     yet.
 *  3. A rule's action is checked against the table when it is added
 *     (kill_after only where a performer exists), so the session never meets
 *     a rule it cannot carry out.
 *  4. Every plan mutator either succeeds completely or leaves the plan as it
 *     was.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness/inject/inject_seccomp_impl.h"

#define FD(i)          { ARG_FD, -1, (i) }
#define AT_CWD(i)      { ARG_PATH, -1, (i) }
#define AT(d, i)       { ARG_PATH, (d), (i) }
#define RAW(i)         { ARG_RAW, -1, (i) }
#define NOARG          { ARG_NONE, -1, -1 }

/* name, subject, from, kill_after performer, flags argument, value
 * argument (position, length or mode) */
const struct inject_syscall inject_seccomp__syscalls[] = {
	/* durability points: the SQLite/fs fences' commit steps */
	{ "fsync",           FD(0),     NOARG,     PERFORM_SYNC,      -1, -1 },
	{ "fdatasync",       FD(0),     NOARG,     PERFORM_SYNC,      -1, -1 },
	{ "syncfs",          FD(0),     NOARG,     PERFORM_NONE,      -1, -1 },
	{ "sync_file_range", FD(0),     NOARG,     PERFORM_NONE,      -1, -1 },
	{ "sync",            NOARG,     NOARG,     PERFORM_NONE,      -1, -1 },
	/* data out */
	{ "write",           FD(0),     NOARG,     PERFORM_WRITE,     -1, -1 },
	{ "pwrite64",        FD(0),     NOARG,     PERFORM_PWRITE,    -1,  3 },
	{ "writev",          FD(0),     NOARG,     PERFORM_WRITEV,    -1, -1 },
	{ "pwritev",         FD(0),     NOARG,     PERFORM_PWRITEV,   -1,  3 },
	{ "pwritev2",        FD(0),     NOARG,     PERFORM_PWRITEV2,   5,  3 },
	{ "sendto",          FD(0),     NOARG,     PERFORM_SENDTO,    -1, -1 },
	{ "ftruncate",       FD(0),     NOARG,     PERFORM_FTRUNCATE, -1,  1 },
	{ "fallocate",       FD(0),     NOARG,     PERFORM_FALLOCATE, -1, -1 },
	/* data in, connections */
	{ "read",            FD(0),     NOARG,     PERFORM_NONE,      -1, -1 },
	{ "pread64",         FD(0),     NOARG,     PERFORM_NONE,      -1, -1 },
	{ "readv",           FD(0),     NOARG,     PERFORM_NONE,      -1, -1 },
	{ "recvfrom",        FD(0),     NOARG,     PERFORM_NONE,      -1, -1 },
	{ "connect",         FD(0),     NOARG,     PERFORM_NONE,      -1, -1 },
	/* namespace changes: the fs fence's link-into-place, atomic renames,
	 * SQLite's rollback-journal commit (the journal's unlink) */
	{ "rename",          AT_CWD(1), AT_CWD(0), PERFORM_RENAME,    -1, -1 },
	{ "renameat",        AT(2, 3),  AT(0, 1),  PERFORM_RENAME,    -1, -1 },
	{ "renameat2",       AT(2, 3),  AT(0, 1),  PERFORM_RENAME,     4, -1 },
	{ "link",            AT_CWD(1), AT_CWD(0), PERFORM_LINK,      -1, -1 },
	{ "linkat",          AT(2, 3),  AT(0, 1),  PERFORM_LINK,       4, -1 },
	{ "symlink",         AT_CWD(1), RAW(0),    PERFORM_SYMLINK,   -1, -1 },
	{ "symlinkat",       AT(1, 2),  RAW(0),    PERFORM_SYMLINK,   -1, -1 },
	{ "unlink",          AT_CWD(0), NOARG,     PERFORM_UNLINK,    -1, -1 },
	{ "unlinkat",        AT(0, 1),  NOARG,     PERFORM_UNLINK,     2, -1 },
	{ "mkdir",           AT_CWD(0), NOARG,     PERFORM_MKDIR,     -1,  1 },
	{ "mkdirat",         AT(0, 1),  NOARG,     PERFORM_MKDIR,     -1,  2 },
	{ "rmdir",           AT_CWD(0), NOARG,     PERFORM_RMDIR,     -1, -1 },
	{ "truncate",        AT_CWD(0), NOARG,     PERFORM_TRUNCATE,  -1,  1 },
	/* opening: counted and faulted, not performed (the route would need
	 * the fd) */
	{ "open",            AT_CWD(0), NOARG,     PERFORM_NONE,      -1, -1 },
	{ "creat",           AT_CWD(0), NOARG,     PERFORM_NONE,      -1, -1 },
	{ "openat",          AT(0, 1),  NOARG,     PERFORM_NONE,      -1, -1 },
};
const int inject_seccomp__nsyscalls =
	sizeof(inject_seccomp__syscalls) / sizeof(inject_seccomp__syscalls[0]);

_Static_assert(sizeof(inject_seccomp__syscalls) /
	       sizeof(inject_seccomp__syscalls[0]) <= INJECT_SYSCALLS_MAX,
	       "raise INJECT_SYSCALLS_MAX");

/* Without watch globs: files, not terminals, pipes or kernel interfaces. */
static const char *const default_ignore[] = { "/dev/*", "/proc/*", "/sys/*" };

static const char *const action_names[] = {
	[INJECT_COUNT] = "count",
	[INJECT_KILL_BEFORE] = "kill_before",
	[INJECT_KILL_AFTER] = "kill_after",
	[INJECT_ERRNO] = "errno",
	[INJECT_POWER_LOSS] = "power_loss",
};

static const char *const outcome_names[] = {
	[INJECT_OUT_NONE] = "none",
	[INJECT_OUT_HANGUP] = "hangup",
	[INJECT_OUT_IGNORED] = "ignored",
	[INJECT_OUT_CONTINUED] = "continued",
	[INJECT_OUT_FAILED] = "failed",
	[INJECT_OUT_KILLED_BEFORE] = "killed_before",
	[INJECT_OUT_KILLED_AFTER] = "killed_after",
	[INJECT_OUT_STALE] = "stale",
};

const char *inject_action_name(enum inject_action a)
{
	if ((unsigned)a >= sizeof(action_names) / sizeof(action_names[0]))
		return "unknown";
	return action_names[a];
}

const char *inject_outcome_name(enum inject_outcome o)
{
	if ((unsigned)o >= INJECT_OUT_COUNT)
		return "unknown";
	return outcome_names[o];
}

static int plan_fail(struct inject_seccomp_plan *p, int code,
		     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int plan_fail(struct inject_seccomp_plan *p, int code,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->errmsg, sizeof(p->errmsg), fmt, ap);
	va_end(ap);
	return code;
}

int inject_seccomp__syscall_index(const char *name)
{
	for (int i = 0; i < inject_seccomp__nsyscalls; i++)
		if (strcmp(inject_seccomp__syscalls[i].name, name) == 0)
			return i;
	return -1;
}

/* Table index of a syscall that also exists on this architecture. */
static int syscall_lookup(const char *name)
{
	int i = inject_seccomp__syscall_index(name);

	if (i < 0 || seccomp_syscall_resolve_name(name) < 0)
		return -1;
	return i;
}

int inject_seccomp_syscall_info(const char *syscall, bool *kill_after)
{
	int i = syscall_lookup(syscall);

	if (i < 0)
		return 0;
	if (kill_after)
		*kill_after = inject_seccomp__syscalls[i].perform != PERFORM_NONE;
	return 1;
}

int inject_seccomp_plan_new(struct inject_seccomp_plan **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : FC_NOMEM;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void inject_seccomp_plan_free(struct inject_seccomp_plan *p)
{
	if (!p)
		return;
	free_strv(p->watch, p->nwatch);
	free_strv(p->ignore, p->nignore);
	for (size_t i = 0; i < p->nrules; i++)
		free(p->rules[i].glob);
	free(p->rules);
	free(p);
}

const char *inject_seccomp_plan_errmsg(const struct inject_seccomp_plan *p)
{
	return p ? p->errmsg : "";
}

static int strv_push(char ***v, size_t *n, const char *s)
{
	char *copy = strdup(s);
	char **grown;

	if (!copy)
		return FC_NOMEM;
	grown = realloc(*v, (*n + 1) * sizeof(**v));
	if (!grown) {
		free(copy);
		return FC_NOMEM;
	}
	grown[(*n)++] = copy;
	*v = grown;
	return 0;
}

int inject_seccomp_plan_watch(struct inject_seccomp_plan *p, const char *glob)
{
	if (!glob || !*glob)
		return plan_fail(p, FC_USAGE, "empty watch glob");
	return strv_push(&p->watch, &p->nwatch, glob);
}

int inject_seccomp_plan_ignore(struct inject_seccomp_plan *p, const char *glob)
{
	if (!glob || !*glob)
		return plan_fail(p, FC_USAGE, "empty ignore glob");
	return strv_push(&p->ignore, &p->nignore, glob);
}

int inject_seccomp_plan_intercept(struct inject_seccomp_plan *p,
				  const char *syscall)
{
	int i = syscall_lookup(syscall);

	if (i < 0)
		return plan_fail(p, FC_USAGE, "cannot intercept syscall '%s'",
				 syscall);
	p->intercept[i] = true;
	return 0;
}

int inject_seccomp_plan_add(struct inject_seccomp_plan *p, const char *syscall,
			    unsigned long occurrence, enum inject_action action,
			    int error, const char *glob)
{
	struct inject_rule r = { .occurrence = occurrence, .action = action };
	struct inject_rule *grown;
	int i = syscall_lookup(syscall);

	if (i < 0)
		return plan_fail(p, FC_USAGE, "cannot intercept syscall '%s'",
				 syscall);
	if ((unsigned)action > INJECT_POWER_LOSS)
		return plan_fail(p, FC_USAGE, "unknown action %d for '%s'",
				 (int)action, syscall);
	if (action == INJECT_KILL_AFTER &&
	    inject_seccomp__syscalls[i].perform == PERFORM_NONE)
		return plan_fail(p, FC_USAGE,
				 "kill_after is not supported for '%s'", syscall);
	if (action == INJECT_ERRNO && (error < 1 || error > 4095))
		return plan_fail(p, FC_USAGE, "errno %d out of range for '%s'",
				 error, syscall);
	if (glob && !*glob)
		return plan_fail(p, FC_USAGE, "empty glob in rule for '%s'",
				 syscall);
	r.sys = i;
	r.error = action == INJECT_ERRNO ? error : 0;
	if (glob && !(r.glob = strdup(glob)))
		return FC_NOMEM;
	grown = realloc(p->rules, (p->nrules + 1) * sizeof(*grown));
	if (!grown) {
		free(r.glob);
		return FC_NOMEM;
	}
	grown[p->nrules++] = r;
	p->rules = grown;
	p->intercept[i] = true;
	return 0;
}

/* "EIO" or "5" -> 5.  glibc's strerrorname_np() is the name table. */
static int errno_parse(const char *s, int *out)
{
	char *end;
	long v;

	if (*s >= '0' && *s <= '9') {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || *end || v < 1 || v > 4095)
			return 0;
		*out = (int)v;
		return 1;
	}
	for (int e = 1; e < 4096; e++) {
		const char *name = strerrorname_np(e);

		if (name && strcmp(name, s) == 0) {
			*out = e;
			return 1;
		}
	}
	return 0;
}

/* A rule string taken apart: SYSCALL ['#' N] ':' ACTION ['@' GLOB]. */
struct rule_parts {
	char buf[256];             /* the syscall, and the glob after it */
	const char *glob;          /* NULL: none */
	unsigned long occurrence;  /* 0: every call */
	enum inject_action action;
	int error;                 /* INJECT_ERRNO */
};

static int rule_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int rule_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return FC_USAGE;
}

/* 0, or FC_USAGE with err set (err may be NULL). */
static int parse_rule(const char *rule, struct rule_parts *r, char *err,
		      size_t errlen)
{
	char *colon, *at, *hash, *action, *end;

	memset(r, 0, sizeof(*r));
	if (strlen(rule) >= sizeof(r->buf))
		return rule_fail(err, errlen, "rule too long '%.40s...'", rule);
	strcpy(r->buf, rule);
	/* The glob comes last so it may contain ':' and '#'. */
	at = strchr(r->buf, '@');
	if (at)
		*at++ = '\0';
	r->glob = at;
	colon = strchr(r->buf, ':');
	if (!colon)
		return rule_fail(err, errlen, "missing ':ACTION' in rule '%s'",
				 rule);
	*colon = '\0';
	action = colon + 1;
	hash = strchr(r->buf, '#');
	if (hash) {
		*hash++ = '\0';
		errno = 0;
		r->occurrence = strtoul(hash, &end, 10);
		if (errno || end == hash || *end || *hash == '-')
			return rule_fail(err, errlen, "bad occurrence '%s' in "
					 "rule '%s'", hash, rule);
	}
	if (strcmp(action, "count") == 0) {
		r->action = INJECT_COUNT;
	} else if (strcmp(action, "kill_before") == 0) {
		r->action = INJECT_KILL_BEFORE;
	} else if (strcmp(action, "kill_after") == 0) {
		r->action = INJECT_KILL_AFTER;
	} else if (strcmp(action, "power_loss") == 0) {
		r->action = INJECT_POWER_LOSS;
	} else if (strncmp(action, "errno:", 6) == 0) {
		r->action = INJECT_ERRNO;
		if (!errno_parse(action + 6, &r->error))
			return rule_fail(err, errlen, "unknown errno '%s' in "
					 "rule '%s'", action + 6, rule);
	} else {
		return rule_fail(err, errlen, "unknown action '%s' in rule '%s'",
				 action, rule);
	}
	return 0;
}

int inject_seccomp_plan_add_rule(struct inject_seccomp_plan *p,
				 const char *rule)
{
	struct rule_parts r;

	if (parse_rule(rule, &r, p->errmsg, sizeof(p->errmsg)))
		return FC_USAGE;
	return inject_seccomp_plan_add(p, r.buf, r.occurrence, r.action,
				       r.error, r.glob);
}

int inject_seccomp_rule_action(const char *rule, enum inject_action *out)
{
	struct rule_parts r;

	if (parse_rule(rule, &r, NULL, 0))
		return FC_USAGE;
	*out = r.action;
	return 0;
}

bool inject_action_runs_call(enum inject_action a)
{
	return a == INJECT_COUNT || a == INJECT_KILL_AFTER;
}

size_t inject_seccomp_plan_rules(const struct inject_seccomp_plan *p)
{
	return p->nrules;
}

int inject_seccomp_plan_format_rule(const struct inject_seccomp_plan *p,
				    size_t i, char *out, size_t outlen)
{
	const struct inject_rule *r;
	char occ[32] = "", act[48];
	const char *ename;
	int n;

	if (i >= p->nrules)
		return FC_USAGE;
	r = &p->rules[i];
	if (r->occurrence)
		snprintf(occ, sizeof(occ), "#%lu", r->occurrence);
	if (r->action == INJECT_ERRNO) {
		ename = strerrorname_np(r->error);
		if (ename)
			snprintf(act, sizeof(act), "errno:%s", ename);
		else
			snprintf(act, sizeof(act), "errno:%d", r->error);
	} else {
		snprintf(act, sizeof(act), "%s", inject_action_name(r->action));
	}
	n = snprintf(out, outlen, "%s%s:%s%s%s",
		     inject_seccomp__syscalls[r->sys].name, occ, act,
		     r->glob ? "@" : "", r->glob ? r->glob : "");
	if (n < 0 || (size_t)n >= outlen)
		return FC_USAGE;
	return 0;
}

int inject_seccomp_glob_escape(const char *path, char *out, size_t outlen)
{
	size_t o = 0;

	for (const char *c = path; *c; c++) {
		if (strchr("*?[]\\", *c)) {
			if (o + 1 >= outlen)
				return FC_USAGE;
			out[o++] = '\\';
		}
		if (o + 1 >= outlen)
			return FC_USAGE;
		out[o++] = *c;
	}
	if (o >= outlen)
		return FC_USAGE;
	out[o] = '\0';
	return 0;
}

static bool match_any(char *const *globs, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(globs[i], path, 0) == 0)
			return true;
	return false;
}

/* A glob list matches the call's path or, for a socket, its peer. */
static bool match_call(char *const *globs, size_t n,
		       const struct inject_seccomp_event *ev)
{
	return match_any(globs, n, ev->path) ||
	       (ev->peer[0] && match_any(globs, n, ev->peer));
}

bool inject_seccomp__in_scope(const struct inject_seccomp_plan *p,
			      const struct inject_seccomp_event *ev,
			      bool has_path)
{
	size_t ndef = sizeof(default_ignore) / sizeof(default_ignore[0]);

	if (!has_path)
		return true;
	if (match_call(p->ignore, p->nignore, ev))
		return false;
	if (p->nwatch)
		return match_call(p->watch, p->nwatch, ev);
	/* Default scope: an absolute path (not "pipe:[..]", "socket:[..]",
	 * "anon_inode:..." nor an unreadable fd) outside the kernel trees. */
	return ev->path[0] == '/' &&
	       !match_any((char *const *)default_ignore, ndef, ev->path);
}

bool inject_seccomp__rule_matches(const struct inject_rule *r, int sys,
				  const struct inject_seccomp_event *ev)
{
	if (r->sys != sys)
		return false;
	if (!r->glob)
		return true;
	return fnmatch(r->glob, ev->path, 0) == 0 ||
	       (ev->from[0] && fnmatch(r->glob, ev->from, 0) == 0) ||
	       (ev->peer[0] && fnmatch(r->glob, ev->peer, 0) == 0);
}

int inject_seccomp_available(char *why, size_t whylen)
{
	unsigned api = seccomp_api_get();

	/* Level 5 is the notify API (kernel 5.0); level 6 means the kernel
	 * has TSYNC_ESRCH (5.7), hence also SECCOMP_USER_NOTIF_FLAG_CONTINUE
	 * (5.5), which level 5 alone does not promise. */
	if (api < 6) {
		snprintf(why, whylen,
			 "seccomp user notification unavailable (libseccomp api level %u)",
			 api);
		return 0;
	}
	/* An invalid pidfd gives EBADF where the syscall exists (5.6+). */
	errno = 0;
	if (syscall(SYS_pidfd_getfd, -1, 0, 0) == -1 && errno == ENOSYS) {
		snprintf(why, whylen, "pidfd_getfd unavailable (kernel < 5.6)");
		return 0;
	}
	errno = 0;
	if (syscall(SYS_process_vm_readv, 0, NULL, 0, NULL, 0, 0) == -1 &&
	    errno == ENOSYS) {
		snprintf(why, whylen, "process_vm_readv unavailable");
		return 0;
	}
	if (whylen)
		why[0] = '\0';
	return 1;
}
