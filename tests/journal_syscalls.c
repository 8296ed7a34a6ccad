/*
 * journal_syscalls.c -- see journal_syscalls.h.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/fsutil.h"
#include "harness/proc/supervise.h"
#include "journal/journal.h"
#include "tests/journal_conformance.h"
#include "tests/journal_syscalls.h"

#define MAX_ACKS 256

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

/* Count a failed call; false once the driver should give up. */
static bool failed(journal *j, const char *op, const char *call, int *errors)
{
	fprintf(stderr, "driver: %s '%s': %s\n", call, op, journal_errmsg(j));
	return ++*errors <= JSYS_DRIVER_ERRORS;
}

/* Walk operation i to COMPLETE.  After a failure nothing the driver holds
 * is trusted: it re-reads the entry (create_or_get returns the existing
 * one) and takes the next step from there, so an outcome it never saw
 * (the call landed, the answer was lost) is simply found. */
static int drive(journal *j, int i)
{
	char op[JOURNAL_ID_MAX];
	struct journal_entry e;
	unsigned seed = 7;
	bool have = false, leased = false;
	int errors = 0, created;

	snprintf(op, sizeof(op), "sys-%d", i);
	for (;;) {
		if (!have) {
			if (journal_create_or_get(j, op, "intent", NULL, &e,
						  &created)) {
				if (!failed(j, op, "create", &errors))
					return -1;
				continue;
			}
			ack(i, &e);
			have = true;
		}
		if (!leased) {
			if (journal_acquire_lease(j, op, "driver", 60000, &e)) {
				if (!failed(j, op, "lease", &errors))
					return -1;
				have = false;
				continue;
			}
			ack(i, &e);
			leased = true;
		}
		if (state_is_terminal(e.state))
			return 0;
		const struct journal_cas req = {
			.operation_id = op,
			.expected_version = e.version,
			.expected_states = STATE_BIT(e.state),
			.next = journal_conformance_next(e.state, 0, &seed),
			.epoch = e.lease_epoch,
			.evidence = "{\"by\": \"driver\"}",
		};
		if (journal_cas(j, &req, &e)) {
			if (!failed(j, op, "cas", &errors))
				return -1;
			have = false;
			continue;
		}
		ack(i, &e);
	}
}

static int driver(const char *url)
{
	char err[512];
	journal *j;
	int rc = 0, errors = 0;

	/* An open that failed (its first write did) is tried again too. */
	while (journal_open(url, &j, err, sizeof(err))) {
		fprintf(stderr, "driver: %s\n", err);
		if (++errors > JSYS_DRIVER_ERRORS)
			return 2;
	}
	for (int i = 0; i < JSYS_OPS && !rc; i++)
		if (drive(j, i))
			rc = 4;
	journal_close(j);
	return rc;
}

/* ---- running it --------------------------------------------------------------- */

struct ack {
	int op, state;
	long long version;
};

static supervisor *sv;
static char self[4096];

int jsys_main(int argc, char **argv, const char *name,
	      void (*test)(void **state), void (*after)(void))
{
	const struct CMUnitTest tests[] = { { .name = name, .test_func = test } };
	char err[256];
	ssize_t n;
	int rc;

	if (argc == 3 && strcmp(argv[1], "--driver") == 0)
		return driver(argv[2]);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	self[n] = '\0';
	if (supervisor_new(&sv, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	supervisor_free(sv);
	if (after)
		after();
	return rc;
}

/* The driver's stderr, for a failure message ("" if none). */
static void last_words(const struct jsys_run *r, char *out, size_t len)
{
	char path[700];
	FILE *f;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/err", r->dir);
	out[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return;
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	fclose(f);
}

/* Run the driver on r's journal (plan may be NULL); collect its acks into
 * a (appended to *n); returns the process, ended (owned by sv). */
static sv_proc *run_driver(const struct jsys_run *r,
			   struct inject_seccomp_plan *plan, struct ack *a,
			   size_t *n)
{
	char out[700], errp[700], err[256], line[128];
	char *argv[] = { self, (char *)"--driver", (char *)r->url, NULL };
	struct sv_event ev;
	sv_proc *p = NULL;
	FILE *f;

	snprintf(out, sizeof(out), "%s/acks", r->dir);
	snprintf(errp, sizeof(errp), "%s/err", r->dir);
	if (supervisor_spawn(sv, &(struct sv_spawn){
			.argv = argv, .stdout_path = out, .stderr_path = errp,
			.seccomp = plan, .timeout_ms = 60000 }, &p, err,
			sizeof(err)))
		fail_msg("spawn: %s", err);
	while (!sv_proc_ended(p)) {
		assert_int_equal(supervisor_wait(sv, clock_mono_ms() + 90000,
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

/* The driver ended by itself with status 0, or the test fails saying why. */
static void assert_finished(const struct jsys_run *r, sv_proc *p,
			    const char *what)
{
	char words[1024];

	if (sv_proc_status(p)->end == SV_EXITED && sv_proc_status(p)->code == 0)
		return;
	last_words(r, words, sizeof(words));
	fail_msg("%s: the driver did not finish (end %d, code %d): %s", what,
		 (int)sv_proc_status(p)->end, sv_proc_status(p)->code, words);
}

/*
 * Read op's entry and history once they agree: entry, history, entry
 * again, until both entries have the history's length (5 s at most).  A
 * driver killed right after it sent a write may still have it land: a
 * PostgreSQL backend finishes a statement it received, etcd applies a
 * txn in its pipeline.  Two reads across that write disagree without any
 * fault of the journal's; an entry and history that never agree is one.
 * FC_NOT_FOUND when op does not exist (yet).
 */
static int read_settled(journal *j, const char *op, struct journal_entry *e,
			struct journal_transition **h, size_t *n,
			const char *what)
{
	long long t0 = clock_mono_ms();
	struct journal_entry again;
	int rc;

	for (;;) {
		rc = journal_get(j, op, e);
		if (rc == FC_NOT_FOUND)
			return rc;
		if (rc)
			fail_msg("%s: cannot read '%s': %s", what, op,
				 journal_errmsg(j));
		assert_int_equal(journal_history(j, op, h, n), 0);
		assert_int_equal(journal_get(j, op, &again), 0);
		if (again.version == e->version && *n == (size_t)e->version)
			return 0;
		if (clock_mono_ms() - t0 > 5000)
			fail_msg("%s: '%s' at v%lld, v%lld, with %zu history "
				 "rows, still after 5 s", what, op, e->version,
				 again.version, *n);
		free(*h);
		*h = NULL;
		usleep(20 * 1000);
	}
}

/* One operation's history against the acks (the header comment's
 * checks); false if the operation does not exist. */
static bool verify_op(journal *j, int i, const struct ack *a, size_t na,
		      bool complete, const char *what)
{
	char op[JOURNAL_ID_MAX];
	struct journal_entry e;
	struct journal_transition *h = NULL;
	size_t n = 0;

	snprintf(op, sizeof(op), "sys-%d", i);
	if (read_settled(j, op, &e, &h, &n, what) == FC_NOT_FOUND)
		return false;
	assert_int_equal(h[0].from, FC_STATE_NONE);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(h[k].version, (long long)k + 1);
		if (!state_transition_legal(h[k].from, h[k].to) ||
		    (k && h[k].from != h[k - 1].to))
			fail_msg("%s: '%s' v%lld: illegal %s -> %s", what, op,
				 h[k].version, state_name(h[k].from),
				 state_name(h[k].to));
	}
	assert_int_equal(h[n - 1].to, e.state);
	for (size_t k = 0; k < na; k++)
		if (a[k].op == i &&
		    (a[k].version > (long long)n ||
		     (int)h[a[k].version - 1].to != a[k].state))
			fail_msg("%s: acknowledged '%s' v%lld %s is lost "
				 "(%zu history rows)", what, op, a[k].version,
				 state_name((enum fc_state)a[k].state), n);
	if (complete)
		assert_int_equal(e.state, FC_COMPLETE);
	free(h);
	return true;
}

static void verify(const struct jsys_run *r, const struct ack *a, size_t na,
		   bool complete, const char *what)
{
	char err[512];
	journal *j;

	if (journal_open(r->url, &j, err, sizeof(err)))
		fail_msg("%s: journal does not open: %s", what, err);
	for (int i = 0; i < JSYS_OPS; i++) {
		if (verify_op(j, i, a, na, complete, what))
			continue;
		for (size_t k = 0; k < na; k++)
			if (a[k].op == i)
				fail_msg("%s: acknowledged 'sys-%d' is missing",
					 what, i);
		assert_false(complete);
	}
	journal_close(j);
}

/* In /dev/shm when it is writable: kills test process death, not power
 * loss, and a disk's fsyncs would make the test slow for nothing. */
static void fresh_run(const struct jsys_backend *b, struct jsys_run *r)
{
	static unsigned long runs;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
			   getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(r->dir, sizeof(r->dir), "%s/fc-journal-sys.XXXXXX", base);
	assert_non_null(mkdtemp(r->dir));
	r->n = runs++;
	r->url[0] = '\0';
	b->fresh(r);
	assert_true(r->url[0] != '\0');
}

static void end_run(const struct jsys_backend *b, const struct jsys_run *r)
{
	if (b->release)
		b->release(r);
	if (fs_remove_tree(r->dir))
		fail_msg("cannot remove '%s'", r->dir);
}

static struct inject_seccomp_plan *plan_for(const struct jsys_backend *b,
					    const struct jsys_run *r,
					    const char *rule)
{
	struct inject_seccomp_plan *p;

	assert_int_equal(inject_seccomp_plan_new(&p), 0);
	b->scope(r, p);
	if (rule) {
		if (inject_seccomp_plan_add_rule(p, rule))
			fail_msg("rule '%s': %s", rule, inject_seccomp_plan_errmsg(p));
	} else {
		for (size_t s = 0; s < b->nsyscalls; s++)
			assert_int_equal(inject_seccomp_plan_intercept(
						 p, b->syscalls[s].name), 0);
	}
	return p;
}

/* Discovery: occurrences of each syscall in scope (counts[s]). */
static void discover(const struct jsys_backend *b, unsigned long *counts)
{
	struct ack a[MAX_ACKS];
	size_t na = 0;
	struct jsys_run r;
	struct inject_seccomp_plan *plan;
	sv_proc *p;

	fresh_run(b, &r);
	plan = plan_for(b, &r, NULL);
	p = run_driver(&r, plan, a, &na);
	assert_finished(&r, p, "discovery");
	memset(counts, 0, b->nsyscalls * sizeof(*counts));
	for (size_t i = 0; i < inject_seccomp_stats_len(sv_proc_seccomp(p)); i++) {
		const char *sys, *path;
		unsigned long c;
		assert_int_equal(inject_seccomp_stats_get(sv_proc_seccomp(p), i,
							   &sys, &path, &c), 0);
		for (size_t s = 0; s < b->nsyscalls; s++)
			if (strcmp(sys, b->syscalls[s].name) == 0)
				counts[s] += c;
	}
	verify(&r, a, na, true, "discovery");
	sv_proc_free(p);
	inject_seccomp_plan_free(plan);
	end_run(b, &r);
}

/* How the faulted drivers ended, for the summary line. */
struct tally {
	unsigned long runs, kills, seen; /* seen: a failed call reached the
					  * driver (its stderr says which) */
};

/* One schedule: the rule, the checks, the recovery. */
static void run_schedule(const struct jsys_backend *b, const char *rule,
			 struct tally *t)
{
	struct ack a[MAX_ACKS];
	size_t na = 0, nf, total;
	char what[200], words[8];
	struct jsys_run r;
	struct inject_seccomp_plan *plan;
	bool killed;
	sv_proc *p;

	snprintf(what, sizeof(what), "%s: after %s", b->name, rule);
	fresh_run(b, &r);
	plan = plan_for(b, &r, rule);
	p = run_driver(&r, plan, a, &na);
	sv_proc_sysfaults(p, &nf, &total);
	if (total != 1)
		fail_msg("%s: the fault fired %zu times", what, total);
	killed = sv_proc_status(p)->killed;
	/* A fault the driver saw as an error is one it must get over. */
	if (!killed)
		assert_finished(&r, p, what);
	last_words(&r, words, sizeof(words));
	t->runs++;
	t->kills += killed;
	t->seen += !killed && words[0];
	sv_proc_free(p);
	inject_seccomp_plan_free(plan);
	verify(&r, a, na, !killed, what);
	/* recovery: finish everything without faults */
	p = run_driver(&r, NULL, a, &na);
	snprintf(what, sizeof(what), "%s: recovery after %s", b->name, rule);
	assert_finished(&r, p, what);
	sv_proc_free(p);
	verify(&r, a, na, true, what);
	end_run(b, &r);
}

/* Is occurrence occ of count one the sample takes? */
static bool chosen(const struct jsys_syscall *s, unsigned long occ,
		   unsigned long count)
{
	return s->every <= 1 || occ == count || (occ - 1) % s->every == 0;
}

void jsys_explore(const struct jsys_backend *b, unsigned long *counts)
{
	struct tally t = { 0, 0, 0 };
	char why[128], line[512];
	size_t used;

	if (!inject_seccomp_available(why, sizeof(why))) {
		print_message("skipped: %s\n", why);
		skip();
	}
	assert_true(b->nsyscalls <= 16);
	discover(b, counts);
	for (size_t s = 0; s < b->nsyscalls; s++) {
		const struct jsys_syscall *sc = &b->syscalls[s];

		for (unsigned long occ = 1; occ <= counts[s]; occ++) {
			if (!chosen(sc, occ, counts[s]))
				continue;
			for (size_t x = 0; sc->actions[x]; x++) {
				char rule[128];

				snprintf(rule, sizeof(rule), "%s#%lu:%s", sc->name,
					 occ, sc->actions[x]);
				long long t0 = clock_mono_ms();

				run_schedule(b, rule, &t);
				if (getenv("FENCECERT_JSYS_TRACE"))
					print_message("%s: %s: %lld ms\n", b->name,
						      rule, clock_mono_ms() - t0);
			}
		}
	}
	used = (size_t)snprintf(line, sizeof(line),
				"%s journal under syscall faults: %lu runs, %lu "
				"kills, %lu errors the driver saw and got over "
				"(occurrences:", b->name, t.runs, t.kills, t.seen);
	for (size_t s = 0; s < b->nsyscalls && used < sizeof(line); s++)
		used += (size_t)snprintf(line + used, sizeof(line) - used,
					 " %s %lu%s", b->syscalls[s].name,
					 counts[s], b->syscalls[s].every > 1 ?
					 " sampled" : "");
	print_message("%s)\n", line);
	/* the exploration must have explored something */
	assert_true(t.runs > 0);
}

const char *jsys_server_or_skip(const char *name)
{
	const char *url = getenv(name);

	if (!url || !*url) {
		print_message("skipped: %s is unset\n", name);
		skip();
	}
	return url;
}

void jsys_explore_sockets(const struct jsys_backend *b)
{
	static const char *const send_actions[] = {
		"kill_before", "kill_after", "errno:ECONNRESET", NULL };
	static const char *const recv_actions[] = {
		"kill_before", "errno:ECONNRESET", NULL };
	static const struct jsys_syscall sockets[] = {
		{ "sendto", send_actions, 1 },
		{ "recvfrom", recv_actions, 1 },
	};
	struct jsys_backend net = *b;
	unsigned long counts[16];

	net.syscalls = sockets;
	net.nsyscalls = sizeof(sockets) / sizeof(sockets[0]);
	jsys_explore(&net, counts);
	assert_true(counts[0] > 0); /* requests were sent */
	assert_true(counts[1] > 0); /* and answers read */
}
