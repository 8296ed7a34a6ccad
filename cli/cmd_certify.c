/*
 * cmd_certify.c -- `fencecert certify SUITE.yaml`: load the suite, run the
 * certification (certify.c), write OUT/report.json, print the verdict
 * table, exit with a documented status:
 *
 *   0  every route met its `expect`
 *   1  some route did not (and it is not merely unverified)
 *   2  usage error, the suite file is unreadable or invalid, or --out
 *      holds an earlier run's reports and --force was not given
 *   3  some route is unverified, and nothing worse
 *   130 interrupted (SIGINT/SIGTERM/SIGHUP): no report, work dir removed
 *
 * --out is never mixed (reports/outdir.h): it is checked before the suite
 * is even loaded, the reports are rendered into a staging directory
 * beside it and renamed into place once the run is complete; an earlier
 * run's reports are removed first, and only with --force.  An interrupted
 * or failed run leaves no report.json in --out.
 *
 * With --shard I/N a shard's verdicts cover its own schedules only, so
 * expectations are judged after `fencecert merge`: a shard exits 1 only
 * when a route expected to certify has a violation in it (no merge can
 * undo that), else 0.
 *
 * Schedule directories live under a fresh work dir: /dev/shm/fencecert-XXXXXX
 * when /dev/shm is writable (kill faults test process death, not power
 * loss, so tmpfs is honest), else $TMPDIR or /tmp.  It is removed at the
 * end unless --keep, also when the run is interrupted or SIGKILLed (a
 * janitor process removes it then).  The servers a suite declares
 * (`services:`) are started before the first schedule, in WORKDIR-services,
 * and torn down at the end, also when the run is killed (services.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "cli/commands.h"
#include "common/error.h"
#include "reports/outdir.h"
#include "reports/render.h"
#include "reports/sign.h"
#include "harness/certify/report_json.h"
#include "harness/certify/certify.h"
#include "harness/check/report_summary.h"
#include "common/cli.h"
#include "common/sanitizer.h"
#include "common/fsutil.h"
#include "harness/model/record.h"
#include "harness/model/scenario.h"
#include "harness/proc/child_env.h"
#include "harness/proc/supervise.h"
#include "common/fds.h"

#define EXIT_MET 0
#define EXIT_NOT_MET 1
#define EXIT_USAGE 2
#define EXIT_UNVERIFIED 3

static void usage(FILE *to)
{
	fprintf(to,
		"usage: fencecert certify SUITE.yaml [options]\n"
		"\n"
		"Run every route of the suite under its scenarios' faults, check\n"
		"the invariants from the journal and the target, give verdicts.\n"
		"\n"
		"  --route NAME      certify only this route (repeatable)\n"
		"  --only SCENARIO   run only this scenario (repeatable)\n"
		"  --schedule S      replay one schedule of --only SCENARIO\n"
		"                    (the 'reproduce' command of a report)\n"
		"  --shard I/N       run shard I of N (1 <= I <= N <= 1000): the\n"
		"                    same exploration in every shard, each keeps\n"
		"                    its 1/N of the schedules; combine the shard\n"
		"                    reports with 'fencecert merge'\n"
		"  --jobs N          schedules that use the CPU at once (default 2)\n"
		"  --workers M       schedules under way at once, M >= N (default\n"
		"                    3N: others run while one waits out a lease;\n"
		"                    --jobs 1 --workers 1 runs one at a time)\n"
		"  --no-pin          let the kernel place the workers and routes\n"
		"                    (default: each of the N keeps to a CPU of\n"
		"                    its own, with the route it runs, when there\n"
		"                    are N CPUs to use)\n"
		"  --seed S          seed of random exploration (default: each\n"
		"                    scenario's own)\n"
		"  --out DIR         write the reports there (default certify-out):\n"
		"                    report.json, report.junit.xml, summary.md,\n"
		"                    report.html; signed when FENCECERT_SIGNING_KEY\n"
		"                    is set.  They appear when the run is complete;\n"
		"                    a DIR holding an earlier run's reports is\n"
		"                    refused (exit 2) unless --force\n"
		"  --force           replace the earlier reports in --out, whole\n"
		"  --format LIST     only these of json,junit,md,html\n"
		"  --work-dir DIR    create the schedule dirs under DIR\n"
		"                    (default /dev/shm, else $TMPDIR or /tmp)\n"
		"  --keep            keep the schedule dirs\n"
		"  --full-deltas     list every row an attempt changed in the\n"
		"                    report's row_deltas (default: the first %d\n"
		"                    besides first inserts, and counts of all)\n"
		"  --full-report     keep every schedule's attempts, operations\n"
		"                    and failpoints in report.json (default: the\n"
		"                    first %d of each class per route; the others\n"
		"                    are summarized)\n"
		"  --pass-env NAME   pass NAME on from this environment to the\n"
		"                    routes, fork servers and observe commands\n"
		"                    (repeatable).  They get nothing else of it\n"
		"                    but PATH, HOME, LANG, LANGUAGE, LC_*, TZ,\n"
		"                    TMPDIR, USER, LOGNAME, TERM, ASAN_OPTIONS,\n"
		"                    UBSAN_OPTIONS and LSAN_OPTIONS (besides the\n"
		"                    protocol's variables and the suite's env:);\n"
		"                    never FENCECERT_SIGNING_KEY\n"
		"  --uncontained     accepted for old scripts; no effect: every\n"
		"                    attempt is contained, at the strongest level\n"
		"                    the kernel allows (sandbox, uid or reaper:\n"
		"                    docs/security.md), named in the report\n"
		"  --reexecute       run every schedule whole, from its first try;\n"
		"                    default: a failpoint exploration of a route\n"
		"                    whose state lives in its files records each\n"
		"                    try once and starts the schedules that kill\n"
		"                    or cut power there from the state recorded\n"
		"                    (docs/crash-states.md)\n"
		"  --no-dedup        run every such schedule, also those that\n"
		"                    start from a state an earlier one started\n"
		"                    from with the same later faults (default:\n"
		"                    judged once, the others inherit its outcome)\n"
		"  --recheck PCT     run this percentage of the inheriting\n"
		"                    schedules anyway and report a different\n"
		"                    outcome as a finding (default %d; the first\n"
		"                    of each scenario always runs)\n"
		"  --state-store-max SIZE\n"
		"                    the most the recorded states may take in\n"
		"                    the work dir (bytes, or with K, M or G);\n"
		"                    past it, or when its file system would\n"
		"                    keep less than a tenth free, a state is\n"
		"                    not recorded and the schedules that would\n"
		"                    start there run whole (the report counts\n"
		"                    them); default: a quarter of that file\n"
		"                    system\n"
		"  --quiet           no progress output\n"
		"  --help            this text\n"
		"\n"
		"exit status: 0 every route met its expectation, 1 some did not,\n"
		"2 usage or suite file error (or --out holds reports, no --force),\n"
		"3 some route is unverified (nothing worse), 130 interrupted (no\n"
		"report written); a --shard run: 1 when a route expected to\n"
		"certify has a violation in this shard, else 0\n",
		RECORD_DELTAS_KEPT, REPORT_DETAIL_KEPT, CERTIFY_RECHECK_PCT);
}

static void on_stop(int sig)
{
	(void)sig;
	certify_interrupted = 1;
}

/* ^C or a TERM stops the run cleanly: workers die (default action), the
 * coordinator removes the work dir.  No SA_RESTART, so its wait returns. */
static void catch_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/*
 * The work dir and the staging dir of the reports must not outlive us,
 * even when we are SIGKILLed: a janitor process waits for EOF on a pipe
 * only we hold.  A byte on the pipe means "taken care of"; EOF without it
 * means we died, and once the routes are gone (their watchdogs kill them
 * at once) it removes the dirs (NULL entries are skipped).
 */
#define JANITOR_DIRS 2
static int start_janitor(const char *const dirs[JANITOR_DIRS], pid_t *pid)
{
	int p[2];
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	*pid = fork();
	if (*pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (*pid == 0) {
		setpgid(0, 0);
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		dup2(p[0], 3);
		fds_close_from(4);
		if (read(3, &c, 1) == 1)
			_exit(0);
		for (int i = 0; i < 20; i++) {
			int left = 0;

			usleep(100 * 1000);
			for (int k = 0; k < JANITOR_DIRS; k++)
				left += dirs[k] && fs_remove_tree(dirs[k]) != 0;
			if (!left)
				break;
		}
		_exit(0);
	}
	close(p[0]);
	return p[1];
}

static void stop_janitor(int fd, pid_t pid)
{
	if (fd < 0)
		return;
	if (write(fd, "k", 1) != 1) {
		/* it is gone already */
	}
	close(fd);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* Is s a number from lo to hi?  Then *out holds it. */
static bool int_in(const char *s, int lo, int hi, int *out)
{
	long long n;

	if (cli_parse_ll(s, &n) || n < lo || n > hi)
		return false;
	*out = (int)n;
	return true;
}

static int cusage(const char *fmt, const char *arg)
{
	fprintf(stderr, "fencecert: USAGE: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see 'fencecert certify --help')\n");
	return EXIT_USAGE;
}

/* A fresh fencecert-XXXXXX under parent (or the default places). */
static char *make_work_dir(const char *parent)
{
	const char *cands[3] = { parent, NULL, NULL };
	char *dir;

	if (!parent) {
		cands[0] = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NULL;
		cands[1] = getenv("TMPDIR");
		cands[2] = "/tmp";
	}
	for (int i = 0; i < 3; i++) {
		if (!cands[i] || !*cands[i])
			continue;
		if (asprintf(&dir, "%s/fencecert-XXXXXX", cands[i]) < 0)
			return NULL;
		if (mkdtemp(dir)) {
			/* traversable, not listable: at the `uid` level a
			 * route of another uid must reach its schedule dir
			 * below it (docs/security.md) */
			if (chmod(dir, 0711) < 0) {
				/* stays 0700: only the harness's uid gets in */
			}
			/* absolute and without a symlink: the sandbox binds
			 * schedule dirs by path, and the harness opens what
			 * routes wrote there refusing any symlink */
			char *real = realpath(dir, NULL);

			if (real) {
				free(dir);
				return real;
			}
			return dir;
		}
		free(dir);
		if (parent)
			break;
	}
	return NULL;
}

static void print_table(json_t *report)
{
	json_t *routes = json_object_get(report, "routes"), *r;
	size_t i;

	printf("%-24s %-22s %-22s %9s %10s  %s\n", "route", "expected",
	       "verdict", "schedules", "violations", "failpoints decl/reach/fault");
	json_array_foreach(routes, i, r) {
		json_t *c = json_object_get(r, "coverage");
		const char *verdict = json_string_value(json_object_get(r, "verdict"));
		bool met = json_is_true(json_object_get(r, "expectation_met"));
		printf("%-24s %-22s %-22s %9zu %10zu  %lld/%lld/%lld%s\n",
		       json_string_value(json_object_get(r, "name")),
		       json_string_value(json_object_get(r, "expected")),
		       verdict,
		       json_array_size(json_object_get(r, "schedules")),
		       json_array_size(json_object_get(r, "violations")),
		       (long long)json_integer_value(json_object_get(c, "failpoints_declared")),
		       (long long)json_integer_value(json_object_get(c, "failpoints_reached")),
		       (long long)json_integer_value(json_object_get(c, "failpoints_faulted")),
		       met ? "" : "   <-- expectation not met");
	}
}

/* "I/N" with 1 <= I <= N <= SHARDS_MAX, digits only. */
#define SHARDS_MAX 1000
static bool parse_shard(const char *arg, int *index, int *count)
{
	const char *slash = strchr(arg, '/');
	char num[16];
	long long i, n;

	if (!slash || (size_t)(slash - arg) >= sizeof(num))
		return false;
	memcpy(num, arg, (size_t)(slash - arg));
	num[slash - arg] = '\0';
	if (cli_parse_ll(num, &i) || cli_parse_ll(slash + 1, &n) ||
	    i < 1 || n < 1 || i > n || n > SHARDS_MAX)
		return false;
	*index = (int)i;
	*count = (int)n;
	return true;
}

static int exit_status(json_t *report, bool sharded)
{
	json_t *routes = json_object_get(report, "routes"), *r;
	bool unverified = false, missed = false;
	size_t i;

	json_array_foreach(routes, i, r) {
		const char *v = json_string_value(json_object_get(r, "verdict"));
		const char *e = json_string_value(json_object_get(r, "expected"));
		if (sharded) {
			missed |= v && e && strcmp(v, "rejected") == 0 &&
				  strcmp(e, "rejected") != 0;
			continue;
		}
		if (json_is_true(json_object_get(r, "expectation_met")))
			continue;
		if (v && strcmp(v, "unverified") == 0)
			unverified = true;
		else
			missed = true;
	}
	if (missed)
		return EXIT_NOT_MET;
	return unverified ? EXIT_UNVERIFIED : EXIT_MET;
}

/* The first violation of each rejected route, so a reader sees why. */
static void print_reasons(json_t *report)
{
	json_t *routes = json_object_get(report, "routes"), *r;
	size_t i;

	json_array_foreach(routes, i, r) {
		json_t *v = json_array_get(json_object_get(r, "violations"), 0);
		json_t *notes = json_object_get(json_object_get(r, "coverage"),
						"unverified");
		if (v)
			printf("\n%s: invariant %lld (%s) in %s '%s': %s\n  reproduce: %s\n",
			       json_string_value(json_object_get(r, "name")),
			       (long long)json_integer_value(json_object_get(v, "invariant")),
			       json_string_value(json_object_get(v, "name")),
			       json_string_value(json_object_get(v, "scenario")),
			       json_string_value(json_object_get(v, "schedule")),
			       json_string_value(json_object_get(v, "detail")),
			       json_string_value(json_object_get(v, "reproduce")));
		else if (json_array_size(notes)) {
			json_t *n;
			size_t k;

			printf("\n");
			json_array_foreach(notes, k, n)
				printf("%s: unverified: %s\n",
				       json_string_value(json_object_get(r, "name")),
				       json_string_value(n));
		}
	}
}

int cmd_certify(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "route", required_argument, NULL, 'r' },
		{ "only", required_argument, NULL, 'o' },
		{ "schedule", required_argument, NULL, 's' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "workers", required_argument, NULL, 'W' },
		{ "no-pin", no_argument, NULL, 'A' },
		{ "shard", required_argument, NULL, 'x' },
		{ "seed", required_argument, NULL, 'S' },
		{ "out", required_argument, NULL, 'O' },
		{ "work-dir", required_argument, NULL, 'w' },
		{ "keep", no_argument, NULL, 'k' },
		{ "full-deltas", no_argument, NULL, 'D' },
		{ "full-report", no_argument, NULL, 'R' },
		{ "force", no_argument, NULL, 'F' },
		{ "pass-env", required_argument, NULL, 'P' },
		{ "uncontained", no_argument, NULL, 'U' },
		{ "reexecute", no_argument, NULL, 'E' },
		{ "no-dedup", no_argument, NULL, 'N' },
		{ "recheck", required_argument, NULL, 'C' },
		{ "state-store-max", required_argument, NULL, 'M' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct certify_opts o = { .jobs = 2, .recheck_pct = CERTIFY_RECHECK_PCT };
	const char *routes[65] = { NULL }, *scenarios[65] = { NULL };
	const char *pass_env[65] = { NULL }, *why;
	size_t nroutes = 0, nscenarios = 0, npass = 0;
	char contain_why[200];
	const char *out_dir = "certify-out", *parent = NULL;
	const char *formats = RENDER_FORMATS_ALL;
	struct suite *s = NULL;
	outdir *out = NULL;
	bool force = false;
	uint64_t seed;
	long long n;
	char err[1024], *work = NULL, *svc_dir = NULL;
	services *svc = NULL;
	json_t *report = NULL;
	long long t0;
	pid_t janitor_pid = 0;
	int c, rc, janitor;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (nroutes == 64)
				return cusage("%s", "at most 64 --route options");
			routes[nroutes++] = optarg;
			o.routes = routes;
			break;
		case 'o':
			if (nscenarios == 64)
				return cusage("%s", "at most 64 --only options");
			scenarios[nscenarios++] = optarg;
			o.scenarios = scenarios;
			break;
		case 's': o.schedule = optarg; break;
		case 'j':
			if (!int_in(optarg, 1, 64, &o.jobs))
				return cusage("--jobs must be 1 to 64, not '%s'", optarg);
			break;
		case 'W':
			if (!int_in(optarg, 1, 64, &o.workers))
				return cusage("--workers must be 1 to 64, not '%s'",
					      optarg);
			break;
		case 'x':
			if (!parse_shard(optarg, &o.shard_index, &o.shard_count))
				return cusage("--shard takes I/N with 1 <= I <= N <= "
					      "1000 (shards count from 1), not '%s'",
					      optarg);
			break;
		case 'S':
			if (cli_parse_ll(optarg, &n))
				return cusage("--seed must be a number, not '%s'", optarg);
			seed = (uint64_t)n;
			o.seed = &seed;
			break;
		case 'O': out_dir = optarg; break;
		case 'w': parent = optarg; break;
		case 'k': o.keep = true; break;
		case 'D': o.full_deltas = true; break;
		case 'R': o.full_report = true; break;
		case 'F': force = true; break;
		case 'P':
			if (npass == 64)
				return cusage("%s", "at most 64 --pass-env options");
			if ((why = child_env_pass_refused(optarg))) {
				snprintf(err, sizeof(err), "--pass-env '%.64s': %s",
					 optarg, why);
				return cusage("%s", err);
			}
			pass_env[npass++] = optarg;
			o.pass_env = pass_env;
			break;
		case 'U': o.uncontained = true; break;
		case 'E': o.reexecute = true; break;
		case 'N': o.no_dedup = true; break;
		case 'A': o.no_pin = true; break;
		case 'C':
			if (!int_in(optarg, 0, 100, &o.recheck_pct))
				return cusage("--recheck must be 0 to 100, not '%s'",
					      optarg);
			break;
		case 'M':
			if (cli_parse_size(optarg, &o.state_store_max) ||
			    !o.state_store_max)
				return cusage("--state-store-max must be a size in "
					      "bytes (with K, M or G), at least 1, "
					      "not '%s'", optarg);
			break;
		case 'q': o.quiet = true; break;
		case 'f':
			if (render_formats_check(optarg, err, sizeof(err)))
				return cusage("%s", err);
			formats = optarg;
			break;
		case 'h': usage(stdout); return 0;
		default: return cusage("%s", "unknown option");
		}
	}
	if (optind != argc - 1)
		return cusage("%s", "give exactly one SUITE.yaml");
	if (o.workers && o.workers < o.jobs)
		return cusage("%s", "--workers must be at least --jobs");
	/* before any route runs, not when the report is signed */
	{
		struct sign_key key;
		if (sign_key_from_env(&key) == FC_USAGE)
			return cusage("%s is set but empty: a secret that did "
				      "not expand would leave the report "
				      "unsigned; unset it or give the key",
				      SIGN_KEY_ENV);
	}
	/* a route's descendants end with its attempt, or the run says so */
	if (supervisor_containment(contain_why, sizeof(contain_why)) ==
	    CHILD_CONTAIN_NONE) {
		if (!o.uncontained)
			return cusage("cannot run routes in a PID namespace of "
				      "their own (%s); --uncontained runs them "
				      "anyway, and then what an attempt leaves "
				      "running outlives it", contain_why);
		/* (the report says so: supervisor_containment()) */
		fprintf(stderr, "fencecert: warning: routes run uncontained "
			"(%s)\n", contain_why);
	}
	o.suite_path = argv[optind];
	rc = outdir_open(out_dir, force, &out, err, sizeof(err));
	if (!rc)
		rc = suite_load(o.suite_path, &s, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "fencecert: %s: %s\n", error_name(rc), err);
		outdir_free(out);
		return EXIT_USAGE;
	}
	work = make_work_dir(parent);
	if (!work) {
		fprintf(stderr, "fencecert: IO: cannot create a work dir under '%s': "
			"%s\n", parent ? parent : "/dev/shm, $TMPDIR or /tmp",
			strerror(errno));
		suite_free(s);
		outdir_free(out);
		return EXIT_USAGE;
	}
	o.work_dir = work;
	o.progress_tty = isatty(STDERR_FILENO);
	catch_stop_signals();
	if ((rc = outdir_stage(out, err, sizeof(err))) != 0) {
		fprintf(stderr, "fencecert: %s: %s\n", error_name(rc), err);
		if (fs_remove_tree(work))
			fprintf(stderr, "fencecert: IO: cannot remove '%s'\n", work);
		free(work);
		suite_free(s);
		outdir_free(out);
		return EXIT_USAGE;
	}
	janitor = start_janitor((const char *const[JANITOR_DIRS]){
			o.keep ? NULL : work, outdir_staging(out) }, &janitor_pid);
	t0 = clock_mono_ms();
	if (asprintf(&svc_dir, "%s-services", work) < 0) {
		svc_dir = NULL;
		snprintf(err, sizeof(err), "out of memory");
		rc = FC_NOMEM;
	} else {
		rc = services_start(s, svc_dir, &svc, err, sizeof(err));
	}
	o.services = svc;
	if (!rc)
		rc = certify_run(s, &o, &report, err, sizeof(err));
	services_free(svc);
	free(svc_dir);
	if (!rc && report_json_finish(report, clock_mono_ms() - t0)) {
		snprintf(err, sizeof(err), "out of memory finishing the report");
		rc = FC_NOMEM;
	}
	if (!rc)
		rc = report_render_all(report, outdir_staging(out), formats, err,
				       sizeof(err));
	if (!rc && certify_interrupted) {
		snprintf(err, sizeof(err), "interrupted before the reports were "
			 "in place");
		rc = FC_IO;
	}
	if (!rc)
		rc = outdir_publish(out, err, sizeof(err));
	if (o.keep)
		fprintf(stderr, "fencecert: schedule dirs kept in '%s'\n", work);
	else if (fs_remove_tree(work))
		fprintf(stderr, "fencecert: IO: cannot remove '%s'\n", work);
	outdir_free(out);
	stop_janitor(janitor, janitor_pid);
	free(work);
	if (rc) {
		fprintf(stderr, "fencecert: %s: %s\n", error_name(rc), err);
		json_decref(report);
		suite_free(s);
		if (certify_interrupted)
			return 128 + SIGINT;
		return rc == FC_USAGE ? EXIT_USAGE : EXIT_NOT_MET;
	}
	if (o.shard_count)
		printf("shard %d/%d: verdicts over this shard's schedules only; "
		       "'fencecert merge' the shards for the suite's verdicts\n\n",
		       o.shard_index, o.shard_count);
	print_table(report);
	print_reasons(report);
	printf("\nreports in %s/ (%s)\n", out_dir, formats);
	rc = exit_status(report, o.shard_count > 0);
	/* The process ends with this command, and the report with it: a
	 * big run's is a tree of millions of allocations (every-failpoint
	 * with --full-report: 6 MB of JSON), and freeing it one by one was
	 * 40 ms of the run's last, single-threaded part.  A sanitized build
	 * frees it, so that its leak check sees what else is left. */
	if (FC_SANITIZED) {
		json_decref(report);
		suite_free(s);
	}
	return rc;
}
