/*
 * test_journal_syscalls.c -- self-certification of the SQLite journal
 * adapter under syscall faults (docs/syscall-faults.md).
 *
 * A driver (this binary re-executed with --driver) walks OPS operation(s)
 * from create to COMPLETE through the journal port, and after every call
 * that returned 0 writes an acknowledgement line "ACK op version state" to
 * its stdout: what it was told is durable.  The test runs it under the
 * supervisor with a seccomp plan:
 *
 *   1. discovery: count every fsync / fdatasync / write / pwrite64 on the
 *      journal's files (journal.db, -journal, -wal; not the -shm index,
 *      which SQLite rebuilds and never relies on after a crash);
 *   2. for every occurrence N of every such syscall and every action
 *      (kill_before, kill_after, errno:EIO), a fresh journal: the driver
 *      runs with the one rule "SYSCALL#N:ACTION@DIR/journal.db*", then
 *      the journal is reopened and checked:
 *        - it opens;
 *        - every history is a legal path (versions 1..n, the first row
 *          NONE -> PREPARING, each row from the previous row's state, each
 *          edge in state_transition_legal(), the entry in row n's state);
 *        - every acknowledged (op, version, state) is in the history;
 *      and a second driver without faults finishes every operation
 *      (recovery needs nothing but the journal), checked the same way.
 *
 * The fault must fire in every run (the discovery counted it), so the
 * test cannot pass by injecting nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness/inject_seccomp.h"
#include "harness/supervise.h"
#include "journal/journal.h"
#include "journal_conformance.h"

#define OPS 1
#define MAX_ACKS 256

static const char *const syscalls[] = { "fsync", "fdatasync", "write",
					"pwrite64" };
static const char *const actions[] = { "kill_before", "kill_after",
				       "errno:EIO" };
#define NSYSCALLS (sizeof(syscalls) / sizeof(syscalls[0]))
#define NACTIONS (sizeof(actions) / sizeof(actions[0]))

/* ---- the driver ------------------------------------------------------------- */

static void ack(int op, const struct journal_entry *e)
{
	char line[96];
	int n = snprintf(line, sizeof(line), "ACK %d %lld %d\n", op, e->version,
			 (int)e->state);

	/* one write per line: a kill never leaves half an acknowledgement */
	if (write(1, line, (size_t)n) != n)
		_exit(3);
}

static int driver(const char *url)
{
	char err[512];
	journal *j;

	if (journal_open(url, &j, err, sizeof(err))) {
		fprintf(stderr, "driver: %s\n", err);
		return 2;
	}
	for (int i = 0; i < OPS; i++) {
		char op[JOURNAL_ID_MAX];
		struct journal_entry e;
		unsigned seed = 7;
		int created;

		snprintf(op, sizeof(op), "sys-%d", i);
		if (journal_create_or_get(j, op, "intent", NULL, &e, &created))
			goto fail;
		ack(i, &e);
		if (journal_acquire_lease(j, op, "driver", 60000, &e))
			goto fail;
		while (!state_is_terminal(e.state)) {
			const struct journal_cas req = {
				.operation_id = op,
				.expected_version = e.version,
				.expected_states = STATE_BIT(e.state),
				.next = journal_conformance_next(e.state, 0, &seed),
				.epoch = e.lease_epoch,
				.evidence = "{\"by\": \"driver\"}",
			};
			if (journal_cas(j, &req, &e))
				goto fail;
			ack(i, &e);
		}
	}
	journal_close(j);
	return 0;
fail:
	fprintf(stderr, "driver: %s\n", journal_errmsg(j));
	journal_close(j);
	return 4;
}

/* ---- running it --------------------------------------------------------------- */

struct ack {
	int op, state;
	long long version;
};

static supervisor *sv;
static char self[4096];

/* Run the driver on DIR/journal.db (plan may be NULL); collect its acks
 * into a (appended to *n); returns the process, ended (owned by sv). */
static sv_proc *run_driver(const char *dir, struct inject_seccomp_plan *plan,
			   struct ack *a, size_t *n)
{
	char url[600], out[600], err[256], line[128];
	char *argv[] = { self, (char *)"--driver", url, NULL };
	struct sv_event ev;
	sv_proc *p = NULL;
	FILE *f;

	snprintf(url, sizeof(url), "sqlite:%s/journal.db", dir);
	snprintf(out, sizeof(out), "%s/acks", dir);
	if (supervisor_spawn(sv, &(struct sv_spawn){
			.argv = argv, .stdout_path = out, .seccomp = plan,
			.timeout_ms = 60000 }, &p, err, sizeof(err)))
		fail_msg("spawn: %s", err);
	while (!sv_proc_ended(p)) {
		assert_int_equal(supervisor_wait(sv, supervisor_now_ms() + 90000,
						 &ev), 0);
		assert_int_not_equal(ev.kind, SV_EV_NONE);
	}
	assert_false(sv_proc_status(p)->timed_out);
	f = fopen(out, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		struct ack k;
		assert_true(*n < MAX_ACKS);
		assert_int_equal(sscanf(line, "ACK %d %lld %d", &k.op, &k.version,
					&k.state), 3);
		a[(*n)++] = k;
	}
	fclose(f);
	return p;
}

/* The checks of the header comment; `what` names the run in messages. */
static void verify(const char *dir, const struct ack *a, size_t na,
		   bool complete, const char *what)
{
	char url[600], err[512];
	journal *j;

	snprintf(url, sizeof(url), "sqlite:%s/journal.db", dir);
	if (journal_open(url, &j, err, sizeof(err)))
		fail_msg("%s: journal does not open: %s", what, err);
	for (int i = 0; i < OPS; i++) {
		char op[JOURNAL_ID_MAX];
		struct journal_entry e;
		struct journal_transition *h = NULL;
		size_t n = 0;
		int rc;

		snprintf(op, sizeof(op), "sys-%d", i);
		rc = journal_get(j, op, &e);
		if (rc == FC_NOT_FOUND) {
			for (size_t k = 0; k < na; k++)
				if (a[k].op == i)
					fail_msg("%s: acknowledged '%s' is missing",
						 what, op);
			assert_false(complete);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(journal_history(j, op, &h, &n), 0);
		assert_int_equal(n, (size_t)e.version);
		assert_int_equal(h[0].from, FC_STATE_NONE);
		for (size_t k = 0; k < n; k++) {
			assert_int_equal(h[k].version, (long long)k + 1);
			if (!state_transition_legal(h[k].from, h[k].to) ||
			    (k && h[k].from != h[k - 1].to))
				fail_msg("%s: '%s' v%lld: illegal %s -> %s", what,
					 op, h[k].version, state_name(h[k].from),
					 state_name(h[k].to));
		}
		assert_int_equal(h[n - 1].to, e.state);
		for (size_t k = 0; k < na; k++)
			if (a[k].op == i &&
			    (a[k].version > (long long)n ||
			     (int)h[a[k].version - 1].to != a[k].state))
				fail_msg("%s: acknowledged '%s' v%lld %s is lost "
					 "(%zu history rows)", what, op,
					 a[k].version,
					 state_name((enum fc_state)a[k].state), n);
		if (complete)
			assert_int_equal(e.state, FC_COMPLETE);
		free(h);
	}
	journal_close(j);
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* In /dev/shm when it is writable: kills test process death, not power
 * loss, and a disk's fsyncs would make the test slow for nothing. */
static void fresh_dir(char *dir, size_t len)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
			   getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(dir, len, "%s/fc-journal-sys.XXXXXX", base);
	assert_non_null(mkdtemp(dir));
}

static struct inject_seccomp_plan *plan_for(const char *dir, const char *rule)
{
	struct inject_seccomp_plan *p;
	char glob[600];

	snprintf(glob, sizeof(glob), "%s/journal.db*", dir);
	assert_int_equal(inject_seccomp_plan_new(&p), 0);
	assert_int_equal(inject_seccomp_plan_watch(p, glob), 0);
	assert_int_equal(inject_seccomp_plan_ignore(p, "*-shm"), 0);
	if (rule) {
		if (inject_seccomp_plan_add_rule(p, rule))
			fail_msg("rule '%s': %s", rule, inject_seccomp_plan_errmsg(p));
	} else {
		for (size_t s = 0; s < NSYSCALLS; s++)
			assert_int_equal(inject_seccomp_plan_intercept(p, syscalls[s]), 0);
	}
	return p;
}

/* Discovery: occurrences of each syscall on the journal's files. */
static void discover(unsigned long counts[NSYSCALLS])
{
	struct ack a[MAX_ACKS];
	size_t na = 0;
	char dir[600];
	struct inject_seccomp_plan *plan;
	sv_proc *p;

	fresh_dir(dir, sizeof(dir));
	plan = plan_for(dir, NULL);
	p = run_driver(dir, plan, a, &na);
	assert_int_equal(sv_proc_status(p)->end, SV_EXITED);
	assert_int_equal(sv_proc_status(p)->code, 0);
	memset(counts, 0, NSYSCALLS * sizeof(*counts));
	for (size_t i = 0; i < inject_seccomp_stats_len(sv_proc_seccomp(p)); i++) {
		const char *sys, *path;
		unsigned long c;
		assert_int_equal(inject_seccomp_stats_get(sv_proc_seccomp(p), i,
							   &sys, &path, &c), 0);
		for (size_t s = 0; s < NSYSCALLS; s++)
			if (strcmp(sys, syscalls[s]) == 0)
				counts[s] += c;
	}
	verify(dir, a, na, true, "discovery");
	sv_proc_free(p);
	inject_seccomp_plan_free(plan);
	nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void test_every_sync_and_write(void **state)
{
	unsigned long counts[NSYSCALLS], runs = 0, kills = 0, eio = 0;
	char why[128];

	(void)state;
	if (!inject_seccomp_available(why, sizeof(why))) {
		print_message("skipped: %s\n", why);
		skip();
	}
	discover(counts);
	assert_true(counts[1] + counts[0] > 0); /* the journal syncs */
	assert_true(counts[3] + counts[2] > 0); /* and writes */
	for (size_t s = 0; s < NSYSCALLS; s++) {
		for (unsigned long occ = 1; occ <= counts[s]; occ++) {
			for (size_t x = 0; x < NACTIONS; x++) {
				struct ack a[MAX_ACKS];
				size_t na = 0, nf, total;
				char dir[600], rule[128], what[200];
				struct inject_seccomp_plan *plan;
				sv_proc *p;

				snprintf(rule, sizeof(rule), "%s#%lu:%s", syscalls[s],
					 occ, actions[x]);
				snprintf(what, sizeof(what), "after %s", rule);
				fresh_dir(dir, sizeof(dir));
				plan = plan_for(dir, rule);
				p = run_driver(dir, plan, a, &na);
				sv_proc_sysfaults(p, &nf, &total);
				if (total != 1)
					fail_msg("%s: the fault fired %zu times", rule,
						 total);
				kills += sv_proc_status(p)->killed;
				eio += x == 2;
				sv_proc_free(p);
				inject_seccomp_plan_free(plan);
				verify(dir, a, na, false, what);
				/* recovery: finish everything without faults */
				p = run_driver(dir, NULL, a, &na);
				if (sv_proc_status(p)->end != SV_EXITED ||
				    sv_proc_status(p)->code != 0)
					fail_msg("%s: the recovery driver failed", rule);
				sv_proc_free(p);
				snprintf(what, sizeof(what), "recovery after %s", rule);
				verify(dir, a, na, true, what);
				nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
				runs++;
			}
		}
	}
	print_message("journal under syscall faults: %lu runs (%lu fsync, %lu "
		      "fdatasync, %lu write, %lu pwrite64 occurrences), %lu kills, "
		      "%lu EIO\n", runs, counts[0], counts[1], counts[2],
		      counts[3], kills, eio);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_sync_and_write),
	};
	char err[256];
	ssize_t n;
	int rc;

	if (argc == 3 && strcmp(argv[1], "--driver") == 0)
		return driver(argv[2]);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	if (supervisor_new(&sv, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	supervisor_free(sv);
	return rc;
}
