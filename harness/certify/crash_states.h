/*
 * crash_states.h -- the coordinator's side of crash-state exploration:
 * which recorded state seeds a schedule, which schedules are judged once
 * for many, and which inherited ones are run anyway to check.
 *
 * A schedule whose first faults are kills (or one power loss) at
 * failpoints of op 1's first tries need not run those tries: a job that
 * ran them without the fault recorded the state a kill or power loss at
 * each HIT leaves (orch_params.record, rec_schedule.snaps).  Such a
 * schedule is *seeded*: its worker restores the state and runs only the
 * tries after it.  Two seeded schedules that start from the same state
 * (equal digest, same next try) and apply the same faults afterwards are
 * the same experiment: the first is run, the others *inherit* its result,
 * and the report says so per schedule.  A seeded sample of inheritors is
 * run anyway (`recheck`); a different outcome is a finding the report
 * shows (the route is not deterministic given its durable state), never
 * hidden.
 *
 * Which tries a state stands for is the recording job's own schedule (its
 * faults are exactly the seed's earlier faults), so a seed never mixes
 * recordings made under different faults.  A power-loss state is only
 * used for try 1 (the model starts with the schedule; a later try's
 * recording starts from a restored state that may hold unsynced data).
 * Faults after the seeded tries must all come later (their try after the
 * last seeded one, or between tries from the last seeded one on), and none
 * may be a power loss unless the last seeded state came with the power
 * model recorded there (snapshot.h, snap_take_model: the discovery's
 * kill states do); then the seed carries the model and the key holds its
 * digest too, so only kills that leave the same files and the same model
 * are judged once.
 *
 * Who includes it: harness/certify/certify.c only.  Ownership: a cs_unit
 * holds references to results it needs later; cs_ready results are new
 * references for the caller.
 *
 * Invariants:
 *  1. A job is inherited only from a job handed out before it with the
 *     same key; the result it gets is that job's, with its own schedule,
 *     faults and an "inherited" note, and no attempts of its own.
 *  2. Every job handed to cs_plan_job() comes back exactly once through a
 *     cs_ready list (its own result, or an inherited one).
 *  3. Deterministic: which jobs are rechecked depends only on the seed,
 *     the unit and the job ids.
 */
#ifndef FENCECERT_CRASH_STATES_H
#define FENCECERT_CRASH_STATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"
#include "harness/model/explore.h"

typedef struct cs_unit cs_unit;

/* `recorded`: the unit's routes keep their state in the schedule's files
 * and the scenario may be recorded (else every job runs whole; `why` says
 * why, for the report).  `power`: its faults include power_loss.
 * `dedup`: inherit (false: --no-dedup, every schedule runs, seeded).
 * `recheck_pct`: the share of inheritors run anyway. */
int cs_unit_new(bool recorded, const char *why, bool power, bool dedup,
		int recheck_pct, uint64_t seed, cs_unit **out) FC_MUST_CHECK;
/* NULL: no-op.  Tags of jobs still waiting go to free_tag (when not
 * NULL): a run cut short. */
void cs_unit_free(cs_unit *u, void (*free_tag)(void *));

/* What to do with a job. */
struct cs_plan {
	bool inherit;      /* judged by its representative: nothing to run */
	json_t *seed;      /* run: the seeded tries for the worker (a new
			      reference) or NULL */
	bool record;       /* run: snapshot the first try it runs */
	bool power;        /* run: the power-loss model on */
};

/* Plan job j (call once, in the order jobs are handed out). */
int cs_plan_job(cs_unit *u, const struct explore_job *j,
		struct cs_plan *out) FC_MUST_CHECK;

/* A result that is final: `res` (a new reference) for the job whose tag
 * it is; `trace` (borrowed from res or from the representative's result)
 * holds the attempts explorer_feed() wants. */
struct cs_ready {
	void *tag;
	int id;
	json_t *res;
	json_t *trace;
};

/*
 * An inherited job (plan.inherit): its result is ready now if its
 * representative's is, else once it is (cs_finished).  Appends to *ready
 * (grown with realloc, *n updated).
 */
int cs_inherit(cs_unit *u, const struct explore_job *j, void *tag,
	       struct cs_ready **ready, size_t *n) FC_MUST_CHECK;

/*
 * Job `id` (tag) ran and returned res (a reference the unit takes): its
 * recorded states are stored ("recorded" is removed from res), then the
 * results now final are appended to *ready: its own, unless it is a
 * recheck whose representative has not finished, and those of jobs that
 * waited for it.  A recheck whose outcome differs from its
 * representative's gets a "nondeterministic" object in its result.
 */
int cs_finished(cs_unit *u, int id, void *tag, json_t *res,
		struct cs_ready **ready, size_t *n) FC_MUST_CHECK;

/* The unit's part of the report: {"mode", "why"?, "schedules",
 * "executed", "seeded", "inherited", "distinct_states", "rechecked",
 * "nondeterministic", "states_recorded"} (a new reference). */
json_t *cs_summary(const cs_unit *u);

/* Jobs still waiting for a representative (0 once the unit is done). */
size_t cs_waiting(const cs_unit *u);

#endif
