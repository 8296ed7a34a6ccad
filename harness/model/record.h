/*
 * record.h -- what one schedule run left behind, as plain data.
 *
 * orchestrator.c writes a record while it runs a schedule (attempts,
 * failpoints hit, faults applied, target observations) and, at the end,
 * reads the journal and the surviving evidence into it.  check.c proves the
 * invariants from it alone (no I/O), and harness/certify/report_json.c
 * prints it, so a test can build a record by hand and check it.
 *
 * Owns: the record's types and their release (record.c); of the rest of
 * the model it calls only the row store (obs_store.h).  Who includes it: harness/run (which writes records),
 * harness/check and harness/certify (which read them) and tests/; never
 * reports/, which reads the printed report instead.
 *
 * Invariant: a record is plain data -- no handle, no fd, no pointer into
 * another object -- so it can be built, checked and freed anywhere, except
 * for its rows: the workload's row keys and what each observation of the
 * target held live in `rows`, an obs_store the record owns (a scratch
 * database in the schedule's work dir), so a record's memory does not grow
 * with the rows of the target.  A test gives a record an in-memory store.
 *
 * Times: *_ms fields are monotonic ms relative to the schedule's start;
 * *_wall_ms fields are Unix ms, comparable with journal timestamps.
 *
 * Ownership: record_free() releases a record and every array and string in
 * it, and closes its row store; arrays grow with record__push(); strings
 * are heap copies.
 */
#ifndef FENCECERT_RECORD_H
#define FENCECERT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"
#include "journal/journal.h"
#include "harness/model/obs_store.h"
#include "harness/model/scenario.h"
#include "harness/model/schedule.h"

/* The orchestrator's view of one task (one operation). */
enum task_state {
	TASK_NOT_RUN,
	TASK_SUCCESS,           /* a try exited 0 */
	TASK_FAILED,            /* a try exited 100: Airflow does not retry */
	TASK_RETRIES_EXHAUSTED, /* every try ended otherwise */
};

struct rec_hit {
	char name[FAILPOINT_NAME_MAX];
	long long at_ms;
	char answer; /* 'c' continue, 'f' fail, 'k' killed, 'p' paused here,
			'b' power lost here */
};

/*
 * Bounds on what one attempt keeps (docs/harness.md, "Bounds"): a route
 * decides how many failpoint lines it writes and what row keys it leaves
 * in the target, so neither may decide the size of a record or a report.
 * Past each bound the rest is counted, never kept:
 *
 *   RECORD_HITS_KEPT      failpoint lines kept in rec_attempt.hits (the
 *                         report's `failpoints`); hits_total counts all
 *   RECORD_HIT_NAMES_MAX  distinct failpoint names an attempt counts hits
 *                         of (record_hit()'s nth); a later name is counted
 *                         in hits_total only, and its nth is 0
 *   RECORD_ROW_KEY_MAX    bytes kept of one changed row's key (cut at a
 *                         UTF-8 boundary; rec_deltas.keys_cut counts them)
 *   RECORD_ROW_KEYS_BYTES bytes of row keys one attempt keeps in all: past
 *                         it changes are only counted (row_deltas_truncated)
 */
#define RECORD_HITS_KEPT 1000
#define RECORD_HIT_NAMES_MAX 256
#define RECORD_ROW_KEY_MAX 256
#define RECORD_ROW_KEYS_BYTES (64 * 1024)

/* How many times an attempt reached one failpoint name (record_hit()). */
struct rec_hit_count {
	char name[FAILPOINT_NAME_MAX];
	int n;
};

/* A state digest as harness/run/snapshot.h writes it (hex SHA-256). */
#define REC_STATE_LEN 65

/*
 * Crash-state exploration: at a HIT of the recorded try (orch_params.record)
 * the schedule's files were snapshotted -- `kill` is the state a kill there
 * leaves, `power` the state a power loss there leaves ("" when durability
 * was not tracked).  Another schedule that kills there is seeded from it.
 */
struct rec_snap {
	int operation, try_number;
	char failpoint[FAILPOINT_NAME_MAX];
	int hit;
	long long wall_ms;     /* when: a lease taken before runs from here */
	long long start_wall_ms; /* when the recorded try started */
	char kill[REC_STATE_LEN];
	char power[REC_STATE_LEN];
	char model[REC_STATE_LEN]; /* the power model's digest
				      (snap_take_model), "" without one */
	/* a recorded syscall discovery: the rule whose kill leaves `kill`
	 * ("fdatasync#3:kill_before@{dir}/journal.db"; failpoint "", hit = failpoints
	 * reached before the call) and the words of that kill ("kill_before
	 * at fdatasync on {dir}/journal.db (#3 there)") */
	char rule[FAULT_RULE_MAX];
	char what[200];
};

/* Discovery: how often op 1 try 1 made an intercepted syscall on paths
 * matching one scope glob of the exploration (a template: "{dir}/..."). */
struct rec_syscall {
	char syscall[32];
	char *path;
	unsigned long count;
};

struct rec_delta {
	char *row_key;
	long long before, after;
};

/* Changes other than first inserts an attempt keeps by key; the rest are
 * only counted (certify --full-deltas keeps them all). */
#define RECORD_DELTAS_KEPT 20

/*
 * The rows whose count changed between the observation before an
 * attempt's end and the one right after it (other live attempts may share
 * the credit): every change counted by kind, the first ones kept.  The
 * memory is bounded by `keep`, never by the rows of the target.
 *
 * Kinds (counts are never negative, so they cover every change):
 *   first insert  0 -> 1, the ordinary load of a row
 *   duplicated    the row grew to two or more copies (1 -> 2, 0 -> 2, ...)
 *   lost          the row's count fell (1 -> 0, 2 -> 1, ...)
 */
struct rec_deltas {
	size_t changed;         /* every changed row, first inserts included */
	size_t first_inserts;
	size_t duplicated;
	size_t lost;
	long long gained;       /* copies the duplicated rows gained together */
	struct rec_delta first; /* the first change in key order, first
				   inserts included; row_key NULL: none */
	struct rec_delta *kept; /* the first changes other than first
				   inserts, in key order */
	size_t nkept;
	size_t key_bytes;       /* of the kept keys (first's included), at
				   most RECORD_ROW_KEYS_BYTES */
	size_t keys_cut;        /* kept keys cut to RECORD_ROW_KEY_MAX */
};

struct rec_attempt {
	int operation;         /* 1-based */
	int try_number;
	pid_t pid;
	long long start_ms, end_ms;
	long long start_wall_ms, end_wall_ms;
	bool spawn_failed;     /* could not be started at all */
	int exit_code;         /* -1 when ended by a signal */
	int signal;            /* 0 when it exited */
	bool timed_out;        /* killed at the attempt timeout */
	bool killed;           /* killed by a fault or at the end */
	bool zombie;           /* paused and given up on: exit does not count */
	bool resumed;          /* a zombie that was resumed */
	bool counted;          /* its end decided the task's try */
	struct rec_hit *hits;  /* the first RECORD_HITS_KEPT */
	size_t nhits;
	size_t hits_total;     /* failpoint lines record_hit() counted, kept
				  or not (record_hits_total()) */
	struct rec_hit_count *hit_names; /* record_hit()'s counts by name, at
				  most RECORD_HIT_NAMES_MAX */
	size_t nhit_names;
	struct rec_deltas deltas; /* record_credit_delta() */
	int concurrent;        /* other attempts alive during its lifetime */
	int obs_after;         /* index of the observation at its end; -1 */
	char *stdout_path, *stderr_path;
	struct rec_syscall *syscalls; /* discovery statistics, else none */
	size_t nsyscalls;
	unsigned long proxy_commits; /* proxy discovery: COMMITs the explored
					proxy relayed during this try */
	bool journal_failed;   /* a syscall fault failed a call on the
				  journal's files (a dead journal) */
	bool contained;        /* it ran in a PID namespace of its own */
	int descendants_killed; /* sv_status's: processes it left running,
				   killed when it ended; -1 not counted */
	char seeded[REC_STATE_LEN]; /* not run here: another schedule's
				   recorded try, which left this state
				   (orch_params.seed); "" when run here */
};

/* A fault as it was applied; `fault` indexes rec_schedule.faults. */
struct rec_applied {
	int fault;
	int attempt;           /* index into attempts, -1 for between-try faults */
	int operation;
	long long at_ms;
	char what[256];        /* "killed at after_target_commit#1", ... */
	bool moved;            /* recover: the operator's apply moved the
				  operation (exit 0) */
};

struct rec_fence {
	char operation_id[JOURNAL_ID_MAX];
	long long applied_epoch;  /* 0: not applied */
	long long prepared_epoch; /* 0: none */
	long long rows;
};

struct rec_observation {
	long long at_ms;
	int after_attempt;        /* attempt index whose end triggered it; -1 */
	size_t applied_before;    /* napplied when it was taken: applied[i]
				     came before it iff i < this (at_ms may
				     tie within a millisecond) */
	int status;               /* 0, or the observer's error; a failed
				     observation has no rows in the store */
	bool fences_observed;     /* false: the target has no fence observer */
	struct rec_fence *fences;
	size_t nfences;
};

/*
 * A journal entry the route wrote for an operation, under the id the route
 * gave it.  The harness never recomputes an id to find it: it lists the
 * journal after every attempt ended and attributes each entry that
 * appeared, or whose version moved, to the operation of that attempt
 * (harness/run/collect.h), then reads each one's entry and history at the
 * end.
 */
struct rec_entry {
	char operation_id[JOURNAL_ID_MAX]; /* as the route named it */
	int seen_after;           /* attempt index whose end's listing first
				     showed it; -1: only the final listing did
				     (attributed by its creation time) */
	long long created_at;     /* as the journal says (Unix ms) */
	int status;               /* 0, or the error reading it at the end */
	struct journal_entry entry;
	struct journal_transition *history;
	size_t nhistory;
	size_t history_total;     /* past collect.h's bounds: the transitions
				     the journal holds (none kept, status
				     FC_NOSPACE); else 0 */
};

/* A return.json that survived in an XCom dir at the end. */
struct rec_evidence {
	int try_number;
	bool valid;               /* parsed as an object */
	char operation_id[JOURNAL_ID_MAX];
	char intent_digest[JOURNAL_ID_MAX];
	char state[32];
	long long rows_written;   /* -1 when absent */
	long long epoch;
	char path[256];
};

struct rec_operation {
	int index;                /* 1-based */
	/* The id the route used: its first entry's ("" while it has none).
	 * Violations and fence lookups use it. */
	char operation_id[JOURNAL_ID_MAX];
	/* docs/identity.md's id of the workload's identity fields: a hint
	 * for the report, never a key (routes may name operations their
	 * own way). */
	char canonical_id[JOURNAL_ID_MAX];
	char intent_digest[JOURNAL_ID_MAX]; /* of the source the first try saw */
	size_t nrows;             /* how many rows the workload asks for;
				     their keys are in the record's store */
	enum task_state task;
	int source_changed_after; /* change_source applied after this try; 0 */
	int journal_status;       /* 0 (entries read, maybe none), or why the
				     journal could not be read */
	struct rec_entry *entries; /* attributed to it, in the order seen */
	size_t nentries;
	struct rec_evidence *evidence;
	size_t nevidence;
};

struct rec_schedule {
	char route[SCENARIO_NAME_MAX];
	char scenario[SCENARIO_NAME_MAX];
	char schedule[SCHEDULE_STR_MAX];
	struct fault *faults;     /* requested */
	size_t nfaults;
	bool *fired;              /* per requested fault */
	long long wall_start_ms;
	long long duration_ms;
	struct rec_operation *ops;
	size_t nops;
	struct rec_attempt *attempts; /* in start order */
	size_t nattempts;
	struct rec_observation *obs; /* observation k's rows: `rows`, n = k */
	size_t nobs;
	obs_store *rows;          /* owned; NULL: no rows known */
	struct rec_applied *applied;
	size_t napplied;
	struct rec_snap *snaps;   /* orch_params.record: one per HIT */
	size_t nsnaps;
	size_t snaps_refused;     /* HITs (or calls) whose state the store
				     refused (FC_NOSPACE): not recorded, so
				     their schedules run whole */
	char refused_why[256];    /* the first refusal's reason */
	int status;               /* 0, or why the harness could not finish */
	char error[512];
};

struct rec_schedule *record_new(void);
void record_free(struct rec_schedule *r); /* NULL is a no-op */

/* Grow *arr (of *n elements of size sz) by one zeroed element; returns it
 * or NULL when out of memory (then nothing changed).  Arrays grow in
 * powers of two, so *n alone says the capacity. */
void *record__push(void **arr, size_t *n, size_t sz);
#define RECORD_PUSH(arr, n) \
	((__typeof__(arr))record__push((void **)&(arr), &(n), sizeof(*(arr))))

/* The fence of op in an observation, or NULL. */
const struct rec_fence *record_fence(const struct rec_observation *o,
				     const char *op);

/* "exit 0", "exit 100", "SIGKILL", "timeout (SIGKILL)", "spawn failed". */
void record_attempt_end(const struct rec_attempt *a, char *out, size_t len);

/* Count in a->deltas every row whose count differs between observations
 * prev (< 0: nothing was there) and now of the store, keeping the first
 * `keep` changes other than first inserts (SIZE_MAX: all of them).  0,
 * FC_NOMEM or the store's error (then a->deltas may hold part of the
 * changes). */
int record_credit_delta(struct rec_attempt *a, obs_store *rows, int prev,
			int now, size_t keep) FC_MUST_CHECK;

/* Count one change of row `key` in a->deltas, keeping it as above: its
 * first RECORD_ROW_KEY_MAX bytes, while the attempt's kept keys stay
 * within RECORD_ROW_KEYS_BYTES (else only counted).  0 or FC_NOMEM (then
 * nothing changed). */
int record_add_delta(struct rec_attempt *a, const char *key, long long before,
		     long long after, size_t keep) FC_MUST_CHECK;

/* Count one failpoint line `name` of attempt a (hits_total) and keep it
 * in a->hits while fewer than RECORD_HITS_KEPT are kept; *kept is the
 * kept hit (answer 'c', for the caller to change), or NULL.  *nth is how
 * many times a reached `name` so far, this one included, counted past
 * the kept ones too; 0 when a already counts RECORD_HIT_NAMES_MAX other
 * names.  Costs O(RECORD_HIT_NAMES_MAX), never O(hits).  0, or FC_NOMEM
 * (then nothing changed). */
int record_hit(struct rec_attempt *a, const char *name, long long at_ms,
	       struct rec_hit **kept, int *nth) FC_MUST_CHECK;

/* Failpoint lines a reported in all: hits_total, or nhits when the hits
 * were pushed without record_hit(). */
size_t record_hits_total(const struct rec_attempt *a);

/* Changes other than first inserts: what the report lists (up to the
 * kept ones) and counts (row_deltas_total). */
size_t record_deltas_listed(const struct rec_deltas *d);

/* True when some changes other than first inserts were only counted. */
bool record_deltas_truncated(const struct rec_deltas *d);

/* Set attempts[].concurrent: how many other attempts overlapped each. */
void record_count_concurrency(struct rec_schedule *r);

/* True when at least one attempt reported at least one failpoint. */
bool record_has_failpoints(const struct rec_schedule *r);

/* Attribute the entry `id` to op (attempt index seen_after, -1 at the end):
 * appended to op->entries unless already there; the first one names the
 * operation (op->operation_id).  The entry's address, or NULL when out of
 * memory (then nothing changed). */
struct rec_entry *record_attribute(struct rec_operation *op, const char *id,
				   int seen_after, long long created_at);

/* op's entry named id, or NULL. */
struct rec_entry *record_entry(const struct rec_operation *op, const char *id);

/* True when no operation has a journal entry: the route kept no journal
 * in this schedule (or the suite said `journal: none`). */
bool record_journal_less(const struct rec_schedule *r);

#endif
