/*
 * test_orchestrator.c -- the Airflow model of one schedule, with real
 * processes: this binary re-executed as a scripted route ("route" mode)
 * that logs what it was given and behaves as its environment says:
 *
 *   ROUTE_EXITS   comma list: exit status of try 1, 2, ... (last repeats)
 *   ROUTE_HITS    failpoints to report, in order, before exiting
 *   ROUTE_ID      when set, create a journal entry of this id (a "%d" in it
 *                 is the try number) through the journal port first
 *   ROUTE_NO_JOURNAL  when set, exit 64 if FENCECERT_JOURNAL is set
 *
 * Each try appends one line to DIR/log: "try=K xcom_empty=0|1
 * prev=PATH|- run_files=N", puts a marker file in its run dir and writes
 * return.json into its XCom dir, so the tests can see what the orchestrator
 * did between tries.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness/check/check.h"
#include "harness/run/orchestrator.h"
#include "harness/run/orchestrator_wait.h"
#include "harness/model/schedule.h"
#include "journal/journal.h"

static char self_exe[4096];
static char tmp_root[] = "/tmp/fc-orch-XXXXXX";

/* --- the scripted route --------------------------------------------------- */

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int route_main(void)
{
	const char *xcom = getenv("FENCECERT_XCOM_DIR");
	const char *run = getenv("FENCECERT_RUN_DIR");
	const char *prev = getenv("FENCECERT_PREV_XCOM_DIR");
	const char *exits = getenv("ROUTE_EXITS");
	const char *hits = getenv("ROUTE_HITS");
	const char *fdv = getenv("FENCECERT_FAILPOINT_FD");
	int k = atoi(getenv("FENCECERT_TRY_NUMBER"));
	char path[4200], log[4200], buf[256];
	int code = 0, fd = fdv ? atoi(fdv) : -1;
	FILE *f;

	if (getenv("ROUTE_NO_JOURNAL") && *getenv("ROUTE_NO_JOURNAL") &&
	    getenv("FENCECERT_JOURNAL"))
		return 64;
	if (getenv("ROUTE_ID") && *getenv("ROUTE_ID")) {
		/* a route naming its operation its own way */
		struct journal_entry e;
		char id[64], err[256];
		journal *j;
		int created;
		snprintf(id, sizeof(id), getenv("ROUTE_ID"), k);
		if (journal_open(getenv("FENCECERT_JOURNAL"), &j, err,
				 sizeof(err)) ||
		    journal_create_or_get(j, id, "intent", NULL, &e, &created))
			return 70;
		journal_close(j);
	}
	snprintf(log, sizeof(log), "%s/../../log", run);
	f = fopen(log, "a");
	if (!f)
		return 64;
	fprintf(f, "try=%d xcom_empty=%d prev=%s run_files=%d\n", k,
		count_entries(xcom) == 0, prev ? strrchr(prev, '/') + 1 : "-",
		count_entries(run));
	fclose(f);
	snprintf(path, sizeof(path), "%s/marker-%d", run, k);
	fclose(fopen(path, "w"));
	/* "HIT a,HIT b": each waits for its answer; 'f' makes the try exit 75 */
	if (hits && fd >= 0) {
		char list[256], *save, *name;
		snprintf(list, sizeof(list), "%s", hits);
		for (name = strtok_r(list, ",", &save); name;
		     name = strtok_r(NULL, ",", &save)) {
			char c;
			int n = snprintf(buf, sizeof(buf), "HIT %s\n", name);
			if (write(fd, buf, (size_t)n) != n || read(fd, &c, 1) != 1)
				return 70;
			if (c == 'f')
				return 75;
		}
	}
	snprintf(path, sizeof(path), "%s/return.json", xcom);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "{\"state\":\"RUNNING\",\"try_number\":%d}\n", k);
		fclose(f);
	}
	for (int i = 1; exits && *exits; i++) {
		code = atoi(exits);
		if (i == k)
			break;
		exits = strchr(exits, ',');
		if (!exits)
			break;
		exits++;
	}
	return code;
}

/* --- helpers -------------------------------------------------------------- */

/* The route's journal and the ids it writes (make_suite). */
static const char *suite_journal = "sqlite:{dir}/journal.db";
static const char *route_id = "";
static const char *route_no_journal = "";

static struct suite *make_suite(const char *exits, const char *hits,
				int retries)
{
	char yaml[8192], err[512];
	struct suite *s = NULL;

	snprintf(yaml, sizeof(yaml),
		 "version: 1\nsuite: t\nroutes:\n"
		 "  - name: scripted\n"
		 "    command: ['%s', route]\n"
		 "    journal: '%s'\n"
		 "    target: 'sqlite:{dir}/target.db'\n"
		 "    observe: {sql: 'SELECT row_key, COUNT(*) FROM events GROUP BY row_key'}\n"
		 "    env: {ROUTE_EXITS: '%s', ROUTE_HITS: '%s', ROUTE_ID: '%s',"
		 " ROUTE_NO_JOURNAL: '%s'}\n"
		 "workload: {operations: 1, rows_per_operation: 3}\n"
		 "orchestrator: {retries: %d, zombie_delay_ms: 5, lease_ttl_ms: 5,"
		 " attempt_timeout_ms: 10000}\n"
		 "scenarios:\n  - name: s\n",
		 self_exe, suite_journal, exits, hits, route_id,
		 route_no_journal, retries);
	if (suite_load_buffer("t.yaml", yaml, strlen(yaml), &s, err, sizeof(err))) {
		print_error("suite: %s\n", err);
		fail();
	}
	return s;
}

struct outcome {
	struct rec_schedule *rec;
	char log[4096];
	char dir[4200];
};

static void run_schedule(struct suite *s, const char *sched, struct outcome *out)
{
	static int n;
	struct fault *f = NULL;
	size_t nf = 0;
	char err[512], path[4300];
	supervisor *sv;
	FILE *lf;
	size_t len;

	snprintf(out->dir, sizeof(out->dir), "%s/s%d", tmp_root, n++);
	assert_int_equal(mkdir(out->dir, 0755), 0);
	assert_int_equal(schedule_parse(sched, &f, &nf, err, sizeof(err)), 0);
	assert_int_equal(supervisor_new(&sv, err, sizeof(err)), 0);
	assert_int_equal(orchestrator_run(&(struct orch_params){
			.suite = s, .route = &s->routes[0], .scenario = "s",
			.schedule = sched, .faults = f, .nfaults = nf,
			.dir = out->dir, .sv = sv }, &out->rec, err, sizeof(err)), 0);
	supervisor_free(sv);
	free(f);
	snprintf(path, sizeof(path), "%s/log", out->dir);
	out->log[0] = '\0';
	lf = fopen(path, "r");
	if (lf) {
		len = fread(out->log, 1, sizeof(out->log) - 1, lf);
		out->log[len] = '\0';
		fclose(lf);
	}
}

static void release(struct outcome *out, struct suite *s)
{
	record_free(out->rec);
	suite_free(s);
}

/* --- tests ------------------------------------------------------------------ */

/* XCom is fresh each try and names the previous one; the run dir stays. */
static void test_tries_and_dirs(void **state)
{
	struct suite *s = make_suite("75,0", "", 3);
	struct outcome o;
	const struct rec_schedule *r;

	(void)state;
	run_schedule(s, "clean", &o);
	r = o.rec;
	assert_int_equal(r->status, 0);
	assert_int_equal(r->nattempts, 2);
	assert_int_equal(r->ops[0].task, TASK_SUCCESS);
	assert_int_equal(r->attempts[0].exit_code, 75);
	assert_int_equal(r->attempts[1].exit_code, 0);
	assert_true(r->attempts[0].counted && r->attempts[1].counted);
	assert_string_equal(o.log,
		"try=1 xcom_empty=1 prev=- run_files=0\n"
		"try=2 xcom_empty=1 prev=try-1 run_files=1\n");
	/* both tries' return.json survive, and are read back */
	assert_int_equal(r->ops[0].nevidence, 2);
	release(&o, s);
}

static void test_exit_100_stops(void **state)
{
	struct suite *s = make_suite("100,0", "", 3);
	struct outcome o;

	(void)state;
	run_schedule(s, "clean", &o);
	assert_int_equal(o.rec->nattempts, 1);
	assert_int_equal(o.rec->ops[0].task, TASK_FAILED);
	release(&o, s);
}

static void test_retries_exhausted(void **state)
{
	struct suite *s = make_suite("75", "", 2);
	struct outcome o;

	(void)state;
	run_schedule(s, "clean", &o);
	assert_int_equal(o.rec->nattempts, 3);
	assert_int_equal(o.rec->ops[0].task, TASK_RETRIES_EXHAUSTED);
	release(&o, s);
}

static void test_lose_pod_and_xcom(void **state)
{
	struct suite *s = make_suite("75,0", "", 3);
	struct outcome o;

	(void)state;
	run_schedule(s, "x@1;l@1", &o);
	assert_true(o.rec->fired[0] && o.rec->fired[1]);
	/* try 2 found its run dir empty; try 1's XCom did not survive */
	assert_non_null(strstr(o.log, "try=2 xcom_empty=1 prev=try-1 run_files=0"));
	assert_int_equal(o.rec->ops[0].nevidence, 1);
	assert_int_equal(o.rec->ops[0].evidence[0].try_number, 2);
	release(&o, s);
}

static void test_kill_and_fail_at_failpoints(void **state)
{
	struct suite *s = make_suite("0", "a,b", 3);
	struct outcome o;
	const struct rec_schedule *r;

	(void)state;
	run_schedule(s, "k:b@1;f:a@2", &o);
	r = o.rec;
	assert_int_equal(r->nattempts, 3);
	assert_int_equal(r->attempts[0].signal, 9);
	assert_true(r->attempts[0].killed);
	assert_int_equal(r->attempts[0].nhits, 2);
	assert_int_equal(r->attempts[0].hits[0].answer, 'c');
	assert_int_equal(r->attempts[0].hits[1].answer, 'k');
	assert_int_equal(r->attempts[1].exit_code, 75);
	assert_int_equal(r->attempts[1].hits[0].answer, 'f');
	assert_int_equal(r->attempts[2].exit_code, 0);
	assert_true(r->fired[0] && r->fired[1]);
	assert_int_equal(r->napplied, 2);
	release(&o, s);
}

/* A paused try becomes a zombie; the next try decides the task; the zombie
 * resumes after it and its exit is recorded but does not count. */
static void test_zombie_after_next(void **state)
{
	struct suite *s = make_suite("100,0", "a", 3);
	struct outcome o;
	const struct rec_schedule *r;

	(void)state;
	run_schedule(s, "p:a@1>next", &o);
	r = o.rec;
	assert_int_equal(r->nattempts, 2);
	assert_true(r->attempts[0].zombie && r->attempts[0].resumed);
	assert_true(r->attempts[0].counted);
	assert_int_equal(r->attempts[0].exit_code, 100); /* did not count */
	assert_int_equal(r->ops[0].task, TASK_SUCCESS);
	/* the zombie ended after the try that replaced it */
	assert_true(r->attempts[0].end_ms >= r->attempts[1].end_ms);
	assert_true(r->fired[0]);
	release(&o, s);
}

/* Resume at a failpoint of the next try: that try waits there until the
 * zombie has ended. */
static void test_zombie_at_failpoint(void **state)
{
	struct suite *s = make_suite("0", "a,b", 3);
	struct outcome o;
	const struct rec_schedule *r;

	(void)state;
	run_schedule(s, "p:a@1>b", &o);
	r = o.rec;
	assert_int_equal(r->nattempts, 2);
	assert_true(r->attempts[0].resumed);
	assert_true(r->attempts[0].end_ms <= r->attempts[1].end_ms);
	assert_true(r->attempts[0].end_ms >= r->attempts[1].hits[1].at_ms);
	assert_true(r->fired[0]);
	release(&o, s);
}

static void test_never_resumed(void **state)
{
	struct suite *s = make_suite("0", "a", 3);
	struct outcome o;

	(void)state;
	run_schedule(s, "p:a@1>never", &o);
	assert_true(o.rec->attempts[0].zombie);
	assert_false(o.rec->attempts[0].resumed);
	assert_true(o.rec->attempts[0].killed);
	assert_int_equal(o.rec->ops[0].task, TASK_SUCCESS);
	release(&o, s);
}

/* A fault whose failpoint never comes is reported as not fired. */
static void test_unfired(void **state)
{
	struct suite *s = make_suite("0", "a", 3);
	struct outcome o;

	(void)state;
	run_schedule(s, "k:zzz@1;p:a@1>zzz", &o);
	assert_false(o.rec->fired[0]);
	assert_false(o.rec->fired[1]); /* paused, but its resume never came */
	release(&o, s);
}

static void test_change_source(void **state)
{
	struct suite *s = make_suite("75,0", "", 3);
	struct outcome o;

	(void)state;
	run_schedule(s, "s@1", &o);
	assert_true(o.rec->fired[0]);
	assert_int_equal(o.rec->ops[0].source_changed_after, 1);
	release(&o, s);
}

static void test_route_missing(void **state)
{
	struct suite *s = make_suite("0", "", 3);
	struct outcome o;

	(void)state;
	free(s->routes[0].command[0]);
	s->routes[0].command[0] = strdup("/nonexistent/route");
	run_schedule(s, "clean", &o);
	assert_int_equal(o.rec->status, FC_IO);
	assert_non_null(strstr(o.rec->error, "cannot run"));
	assert_true(o.rec->attempts[0].spawn_failed);
	release(&o, s);
}

/* The wait set names every failpoint any fault acts at in that try, once,
 * and the resume_at of the previous try's pause; nothing else. */
static void test_wait_set(void **state)
{
	const char *sched = "k:b@1;p:a@1>c;f:b@2/op2;d:a@1=m2;x@1;r:e@1=px";
	struct orch_params p = { 0 };
	struct fault *f = NULL;
	char err[256], *set;

	(void)state;
	assert_int_equal(schedule_parse(sched, &f, &p.nfaults, err,
					sizeof(err)), 0);
	p.faults = f;
	set = orch__wait_set(&p, 1, 1);
	assert_string_equal(set, "b,a,e"); /* the member's "a" only once */
	free(set);
	set = orch__wait_set(&p, 1, 2);
	assert_string_equal(set, "c"); /* f:b@2 is op 2's */
	free(set);
	set = orch__wait_set(&p, 2, 2);
	assert_string_equal(set, "c,b"); /* in the order of the faults */
	free(set);
	set = orch__wait_set(&p, 1, 3);
	assert_string_equal(set, "");
	free(set);
	assert_true(orch__fault_acts_at(&p, 1, 1, "a", 1));
	assert_false(orch__fault_acts_at(&p, 1, 1, "a", 2));
	assert_true(orch__fault_acts_at(&p, 2, 2, "b", 1));
	assert_false(orch__fault_acts_at(&p, 1, 2, "b", 1));
	/* a zombie resuming at "c" is the loop's half, not a fault's */
	assert_false(orch__fault_acts_at(&p, 1, 2, "c", 1));
	free(f);
}

/* The journal entry the route wrote, under its own id, is the
 * operation's: found by listing the journal, never by the canonical id. */
static void test_own_ids(void **state)
{
	struct suite *s;
	struct outcome o;
	const struct rec_operation *op;

	(void)state;
	route_id = "myloader:stable";
	s = make_suite("75,0", "", 3);
	route_id = "";
	run_schedule(s, "clean", &o);
	op = &o.rec->ops[0];
	assert_int_equal(o.rec->status, 0);
	assert_string_equal(op->operation_id, "myloader:stable");
	assert_string_not_equal(op->canonical_id, "");
	assert_string_not_equal(op->canonical_id, op->operation_id);
	assert_int_equal(op->nentries, 1);
	/* one operation: only the end lists the journal (collect.c) */
	assert_int_equal(op->entries[0].seen_after, -1);
	assert_int_equal(op->entries[0].status, 0);
	assert_int_equal(op->entries[0].entry.state, FC_PREPARING);
	assert_int_equal(op->entries[0].nhistory, 1);
	release(&o, s);
}

/* A route that names its operation anew on each try: two entries, in
 * the order made, and the checker's stable-identity says so. */
static void test_new_id_each_try(void **state)
{
	struct suite *s;
	struct outcome o;
	struct check_result res;
	bool found = false;

	(void)state;
	route_id = "myloader:try%d";
	s = make_suite("75,0", "", 3);
	route_id = "";
	run_schedule(s, "clean", &o);
	assert_int_equal(o.rec->status, 0);
	assert_int_equal(o.rec->ops[0].nentries, 2);
	assert_string_equal(o.rec->ops[0].operation_id, "myloader:try1");
	assert_string_equal(o.rec->ops[0].entries[1].operation_id,
			    "myloader:try2");
	assert_int_equal(check_schedule(o.rec, true, &res), 0);
	for (size_t i = 0; i < res.nviolations; i++)
		found |= res.violations[i].invariant == INV_STABLE_IDENTITY;
	assert_true(found);
	check_result_release(&res);
	release(&o, s);
}

/* `journal: none`: the route gets no FENCECERT_JOURNAL (the scripted route
 * exits 64 when it does, which the second run shows), nothing is listed. */
static void test_journal_none(void **state)
{
	struct suite *s;
	struct outcome o;

	(void)state;
	suite_journal = "none";
	route_no_journal = "1";
	s = make_suite("0", "", 3);
	suite_journal = "sqlite:{dir}/journal.db";
	assert_true(s->routes[0].no_journal);
	run_schedule(s, "clean", &o);
	assert_int_equal(o.rec->status, 0);
	assert_int_equal(o.rec->ops[0].task, TASK_SUCCESS);
	assert_int_equal(o.rec->ops[0].nentries, 0);
	release(&o, s);
	s = make_suite("0", "", 3);
	route_no_journal = "";
	assert_false(s->routes[0].no_journal);
	run_schedule(s, "clean", &o);
	assert_int_equal(o.rec->status, FC_USAGE); /* it had a journal URL */
	release(&o, s);
}

/* A journal URL the same for every schedule cannot tell this schedule's
 * entries from another's: the schedule is not judged. */
static void test_shared_journal(void **state)
{
	struct suite *s;
	struct outcome o;

	(void)state;
	suite_journal = "sqlite:/tmp/fc-orch-shared-journal.db";
	s = make_suite("0", "", 3);
	suite_journal = "sqlite:{dir}/journal.db";
	run_schedule(s, "clean", &o);
	assert_int_equal(o.rec->status, FC_USAGE);
	assert_non_null(strstr(o.rec->error, "is the same for every schedule"));
	assert_int_equal(o.rec->nattempts, 0);
	release(&o, s);
}

static int teardown(void **state)
{
	char cmd[4200];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
	return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tries_and_dirs),
		cmocka_unit_test(test_exit_100_stops),
		cmocka_unit_test(test_retries_exhausted),
		cmocka_unit_test(test_lose_pod_and_xcom),
		cmocka_unit_test(test_kill_and_fail_at_failpoints),
		cmocka_unit_test(test_zombie_after_next),
		cmocka_unit_test(test_zombie_at_failpoint),
		cmocka_unit_test(test_never_resumed),
		cmocka_unit_test(test_unfired),
		cmocka_unit_test(test_change_source),
		cmocka_unit_test(test_route_missing),
		cmocka_unit_test(test_wait_set),
		cmocka_unit_test(test_own_ids),
		cmocka_unit_test(test_new_id_each_try),
		cmocka_unit_test(test_journal_none),
		cmocka_unit_test(test_shared_journal),
	};
	ssize_t n;

	if (argc == 2 && strcmp(argv[1], "route") == 0)
		return route_main();
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0 || !mkdtemp(tmp_root))
		return 1;
	self_exe[n] = '\0';
	return cmocka_run_group_tests(tests, NULL, teardown);
}
