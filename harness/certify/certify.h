/*
 * certify.h -- one certification run: every selected route x scenario is
 * expanded into schedules (explore.c), the schedules run in parallel on
 * worker processes (pool.c; each worker has its own supervisor and runs
 * orchestrator + checker per schedule), and the coordinator folds the
 * results into verdicts, coverage and the JSON report.
 *
 * Verdicts are computed (verdict_tally_fold() plus exploration gaps),
 * never taken from a route's `expect`; the expectation is only compared
 * (verdict_meets()).
 *
 * Who includes it: cli/cmd_certify.c (and tests/).  It is the top of the
 * harness: it may use every harness part, never reports/ (the command
 * line renders the formats from the report this returns).
 *
 * Ownership: certify_run() returns the report (a new jansson reference).
 */
#ifndef FENCECERT_CERTIFY_H
#define FENCECERT_CERTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <signal.h>

#include <jansson.h>

#include "common/error.h"
#include "harness/model/scenario.h"
#include "harness/run/services.h"

/* --recheck's default: the share of inheriting schedules run anyway. */
#define CERTIFY_RECHECK_PCT 5

struct certify_opts {
	const char *suite_path;  /* as given, for reproduce commands */
	const char *const *routes;    /* only these routes (NULL-terminated);
					 NULL: all */
	const char *const *scenarios; /* only these scenarios; NULL: all */
	const char *schedule;    /* replay this schedule (needs exactly one
				    scenario) */
	const uint64_t *seed;    /* replaces random seeds; NULL: the suite's */
	int jobs;                /* workers running a schedule at once
				    (turns, certify.c workers_for()) */
	int workers;             /* --workers: worker processes, >= jobs;
				    0: workers_for(jobs) */
	bool no_pin;             /* --no-pin: workers and routes go where
				    the kernel puts them (pool_new()) */
	const char *work_dir;    /* existing directory for schedule dirs */
	bool keep;               /* keep schedule dirs */
	bool full_deltas;        /* --full-deltas: list every changed row of
				    an attempt in row_deltas */
	bool full_report;        /* --full-report: every schedule keeps its
				    detail (report_cap_details()) */
	bool progress_tty;       /* one updating progress line on stderr */
	bool quiet;              /* no progress at all */
	services *services;      /* started by the caller (services_start);
				    NULL when the suite declares none */
	int shard_index;         /* --shard I/N: 1..shard_count */
	int shard_count;         /* 0: not sharded */
	/* --pass-env: names every process a worker starts gets from our
	 * environment besides the allow-list (harness/proc/child_env.h);
	 * NULL-terminated, or NULL */
	const char *const *pass_env;
	bool uncontained;        /* --uncontained: run routes without a PID
				    namespace where none can be made */
	/* Crash-state exploration (harness/certify/crash_states.h) */
	bool reexecute;          /* --reexecute: every schedule runs whole,
				    nothing is recorded or seeded */
	bool no_dedup;           /* --no-dedup: seeded schedules all run, none
				    inherits */
	int recheck_pct;         /* --recheck PCT: inherited schedules run
				    anyway to check, in percent (the first
				    of each scenario always is) */
	unsigned long long state_store_max; /* --state-store-max: bytes the
				    recorded states may take; 0: a quarter of
				    the work dir's file system */
};

/* Set (from a signal handler) to stop a run early: no new schedule starts,
 * certify_run() returns FC_IO with "interrupted". */
extern volatile sig_atomic_t certify_interrupted;

/*
 * Sharding (shard_count > 0): every shard explores identically (discovery
 * runs that later waves depend on run in every shard) and keeps only the
 * schedules it owns: job `id` of the k-th selected route x scenario (k
 * from 0, suite order) belongs to shard ((k + id) mod N) + 1.  Shards
 * must be run with the same suite, --route, --only and --seed; the report
 * carries "shard": {"index", "count"} and its verdicts cover its own
 * schedules only (`fencecert merge` recomputes them over the union).
 */

/* FC_USAGE for an unknown route/scenario or a bad schedule string. */
int certify_run(const struct suite *s, const struct certify_opts *o,
		json_t **report, char *err, size_t errlen) FC_MUST_CHECK;

#endif
