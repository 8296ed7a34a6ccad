/*
 * explore.h -- expand one scenario into the schedules to run.
 *
 * A fixed scenario is one schedule.  An `explore:` scenario is expanded in
 * waves, because what to try depends on what the route reaches:
 *
 *   discovery   no faults; learns the failpoints try 1 reaches, with the
 *               number of hits of each (point = failpoint + hit number)
 *   try 1       every point x every action (kill, pause, fail) in try 1;
 *               the kill schedules are also the discovery runs of the
 *               recovery path (which points try 2 reaches after a kill at X)
 *   retry       every point x action in try 2 after a kill at X in try 1,
 *               for every X when explorer_retry_every_kill() was called
 *               (the route's state is in files, so the kills that leave
 *               equal states are told apart from the others by their
 *               digests and judged once: crash_states.h), else for one X
 *               of each distinct recovery path (kills that leave try 2
 *               walking the same failpoints are one case: a guess at
 *               equal states, all a route on a service allows)
 *   interleave  (interleavings: true) worker A paused at X while worker B
 *               runs to completion ("p:X@1>next"), and paused at X until B
 *               reaches Y ("p:X@1>Y") for every Y that B reaches
 *   random      (random: {schedules: N, seed: S, faults: M}) N seeded
 *               schedules of up to M faults in consecutive tries, drawn from
 *               the points discovered, with lost XCom / pods in between
 *
 * A syscall exploration (explore.syscalls) has two waves instead: its
 * discovery counts the calls of op 1 try 1 per (syscall, scope glob)
 * (kind "discovery", orchestrator param sys_discover), then every
 * occurrence x action is one schedule "y@1/op1=SYSCALL#N:ACTION@GLOB"
 * (kind "syscall"); kill_after
 * only where inject_seccomp_syscall_info() supports it.  The retry after
 * each fault runs without faults: it must recover.
 *
 * A proxy exploration (explore.proxy) likewise: its discovery counts the
 * COMMITs (the proxy's triggers, tcp_proxy.h) that proxy relays during op
 * 1 try 1 (kind "discovery", orchestrator param proxy_discover), then
 * every COMMIT x action of explore.proxy_actions is one schedule
 * "c@1#N/op1=PROXY" (cut_after_commit) or "h@1#N/op1=PROXY" (hold_commit)
 * (kind "proxy").
 *
 * The waves run depend on what the scenario asks for: a scenario with
 * `interleavings` or `random` runs those (and the discovery they need:
 * pauses resp. kills in try 1), not the exhaustive try-1 and retry waves;
 * a scenario with neither is the exhaustive exploration.  Write one
 * scenario per kind.
 *
 * Explored faults target operation 1, and an explore scenario runs 1
 * operation unless it says `operations:`.  Every schedule is unique by its
 * string form.  Random schedules may name faults that a schedule never
 * reaches (their tries depend on earlier faults); their jobs are marked not
 * strict so such a fault is reported but does not make the route
 * unverified.  Everything else is strict.
 *
 * Bounded by construction (docs/harness.md, "Bounds"): what a route
 * reports decides how many schedules an exploration plans, so the
 * explorer plans at most EXPLORE_SCHEDULES_MAX per scenario, from at most
 * EXPLORE_NAMES_MAX distinct failpoint names per try (the first ones that
 * try reached) and the failpoints a trace kept (record.h's
 * RECORD_HITS_KEPT).  Past a bound the rest is not planned and
 * explorer_bounded() says why: the scenario is unverified.
 *
 * Usage: explorer_next() hands out jobs in a stable order; jobs with
 * wants_trace must be answered with explorer_feed() before later waves
 * appear.  Ownership: jobs and their strings belong to the explorer.
 *
 * Owns: the waves and the order jobs come in (a run is reproducible from
 * its seed).  It sits on the schedule string and the record (schedule.h,
 * record.h) and calls nothing of the loader.  Who includes it:
 * harness/certify (and tests/).
 */
#ifndef FENCECERT_EXPLORE_H
#define FENCECERT_EXPLORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "harness/model/scenario.h"
#include "harness/model/schedule.h"

typedef struct explorer explorer;

#define EXPLORE_SCHEDULES_MAX 10000 /* schedules planned per scenario */
#define EXPLORE_NAMES_MAX 64        /* distinct failpoint names per try */

struct explore_job {
	int id;                  /* 0, 1, 2, ... in the order handed out */
	const struct fault *faults;
	size_t nfaults;
	const char *schedule;    /* string form (schedule_format) */
	int operations;          /* 0: the suite's workload.operations */
	bool strict;             /* an unfired fault makes it unverified */
	bool wants_trace;
	const char *kind;        /* "fixed", "discovery", "try1", "retry",
				    "interleave", "random", "syscall",
				    "proxy", "replay" */
};

/* One (syscall, path glob) a syscall discovery counted. */
struct explore_syscall {
	const char *syscall;
	const char *path;        /* a glob, "{dir}/..." */
	unsigned long count;
};

/* What one attempt of a finished job reached, for explorer_feed(). */
struct explore_attempt {
	int operation;
	int try_number;
	const char *const *hits; /* failpoint names in the order hit */
	size_t nhits;
	size_t hits_total;       /* failpoints it reported in all, when more
				    than the nhits kept; 0: nhits */
	const struct explore_syscall *syscalls; /* syscall discovery */
	size_t nsyscalls;
	unsigned long commits;   /* proxy discovery: COMMITs relayed */
};

/* `seed`: when non-NULL, replaces the scenario's random seed. */
int explorer_new(const struct suite *s, const struct scenario *sc,
		 const uint64_t *seed, explorer **out, char *err, size_t errlen)
	FC_MUST_CHECK;

/* One job replaying the schedule string `schedule` of scenario sc. */
int explorer_new_replay(const struct suite *s, const struct scenario *sc,
			const char *schedule, explorer **out, char *err,
			size_t errlen) FC_MUST_CHECK;

/* Whether the scenario has a retry wave: an exhaustive failpoint
 * exploration (not syscalls, proxy, interleavings or random). */
bool explorer_has_retry_wave(const explorer *ex);

/* The retry wave follows every try-1 kill, not one per recovery path.
 * Call before the first explorer_next(). */
void explorer_retry_every_kill(explorer *ex);

void explorer_free(explorer *ex); /* NULL is a no-op */

enum explore_next {
	EXPLORE_JOB,   /* *job is the next job to run */
	EXPLORE_WAIT,  /* nothing until a pending trace is fed */
	EXPLORE_DONE,
};

enum explore_next explorer_next(explorer *ex, const struct explore_job **job);

/* The attempts of job `id` (any order).  FC_NOMEM, or FC_USAGE for an id
 * that did not want a trace. */
int explorer_feed(explorer *ex, int id, const struct explore_attempt *a,
		  size_t n) FC_MUST_CHECK;

/* A job fed no trace because it failed to run: later waves built on it are
 * skipped, and the scenario is marked incomplete. */
void explorer_feed_failed(explorer *ex, int id);

/* Failpoints the scenario names (explore.failpoints) that discovery never
 * reached, NULL-terminated; and whether a wave could not be built. */
const char *const *explorer_unreached(const explorer *ex);
bool explorer_incomplete(const explorer *ex);

/* Why the exploration planned less than the route's traces ask for (a
 * bound of the header comment was met: "exploration capped at ..."), or
 * NULL.  The scenario is then unverified. */
const char *explorer_bounded(const explorer *ex);

/* Jobs handed out so far, and a lower bound of the total (grows). */
size_t explorer_jobs(const explorer *ex);

#endif
