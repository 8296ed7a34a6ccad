/*
 * pool.h -- a fixed set of forked worker processes that each run jobs one
 * at a time and send each result back as one JSON line.
 *
 * The coordinator hands a job (a JSON value) to an idle worker over that
 * worker's job pipe and reads results from the worker's own result pipe
 * (one pipe per worker, so long lines never interleave).  A worker runs
 * `work(ctx, job)` in its own process: a crash or a hang in one schedule
 * costs one worker, which is replaced, never the run.
 *
 * Workers die with the coordinator (PR_SET_PDEATHSIG), and a worker exits
 * when its job pipe reaches EOF (pool_free()).
 *
 * A route may find a worker's result pipe (/proc/<worker>/fd): each line
 * names its job and carries the worker's secret nonce, and a line that
 * does not, or comes when no result is due, ends the run (pool.c
 * invariant 6).  A run whose busy workers show no progress for the
 * stall bound ends too (invariant 7).  Either way pool_collect() fails,
 * every worker is killed, and pool_errmsg() says why.
 *
 * Who includes it: the certification's worker set (harness/certify), and
 * in harness/run the orchestrator's clock waits and the services lock for
 * pool_turn_give() / pool_turn_take().  It knows nothing of supervisors or
 * routes: a job is any JSON value.
 *
 * Invariants: a worker holds only its own two pipe ends (and the turn
 * pipe every worker shares), so EOF on a job
 * pipe reaches exactly one worker and EOF on a result pipe means exactly
 * one worker died; only idle workers get jobs; the coordinator never blocks
 * writing one; at most `turns` workers hold a turn, a dead one's comes
 * back; pinned, each turn keeps to its CPU (pool.c invariants 4 and 5).
 *
 * Ownership: pool_submit() does not take the job; results returned by
 * pool_collect() are new references the caller releases.
 */
#ifndef FENCECERT_POOL_H
#define FENCECERT_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/error.h"

typedef struct pool pool;

/* Runs in the worker; returns a new reference to a JSON object (NULL:
 * out of memory; anything but an object ends the worker, as a crash
 * does).  Its members pool_job, pool_nonce and pool_progress are the
 * pool's own. */
typedef json_t *(*pool_work_fn)(void *ctx, json_t *job);
/* Runs in the worker before it exits (release per-worker state). */
typedef void (*pool_fini_fn)(void *ctx);

/* `workers` processes of which at most `turns` run a job at a time (all
 * of them when turns >= workers); see pool_turn_give().  `pin`: each turn
 * (without turns: each worker) keeps to a CPU of its own while there are
 * enough CPUs this process may use, and a worker runs on its turn's CPU
 * from when it takes it, as do the processes it starts from then on
 * (pool.c invariant 5); else the kernel places them. */
int pool_new(int workers, int turns, bool pin, pool_work_fn work,
	     pool_fini_fn fini, void *ctx, pool **out, char *err,
	     size_t errlen) FC_MUST_CHECK;
/*
 * The run watchdog's bound: a busy pool whose workers send no result and
 * no pool_progress() line, and none of which dies, for this long ends the
 * run.  POOL_STALL_MS unless set (ms <= 0 sets it back).  The pool does
 * not know how long a job may take: its user sets a bound above its
 * longest job, or has the jobs call pool_progress().
 */
#define POOL_STALL_MS (600LL * 1000)
void pool_set_stall_ms(pool *p, long long ms);

/* What ended the run when pool_submit() or pool_collect() failed so
 * ("" before). */
const char *pool_errmsg(const pool *p);

/* NULL is a no-op; waits for the workers.  drop (may be NULL) gets the
 * tag of every job still running, whose result will never be collected. */
void pool_free(pool *p, void (*drop)(void *tag));

bool pool_has_idle(const pool *p);
size_t pool_busy(const pool *p);

/* Give job to an idle worker; `tag` comes back with its result. */
int pool_submit(pool *p, json_t *job, void *tag) FC_MUST_CHECK;

/*
 * Wait up to timeout_ms (negative: no bound but the watchdog's) for one
 * result.  Returns 1 with *result and *tag; *result is NULL when the
 * worker died while running the job (it is replaced).  Returns 0 on
 * timeout or when nothing is busy, a negative code on failure: FC_CORRUPT
 * for a refused line, FC_IO when the watchdog ended the run (then, and
 * from then on, with pool_errmsg()).
 */
int pool_collect(pool *p, long long timeout_ms, json_t **result, void **tag)
	FC_MUST_CHECK;

/*
 * In a worker's job: give up the turn while it waits on the clock alone
 * (nothing of its job needs a CPU until then), and take one again before
 * it goes on; take blocks until a turn is free.  Another worker runs its
 * job meanwhile, so a wait lasts at least as long as asked, maybe more.
 * No-ops outside a worker, without turns, or when already given / held.
 */
void pool_turn_give(void);
void pool_turn_take(void);

/* In a worker's job: tell the coordinator the job is alive (a line on
 * the result pipe, the watchdog's clock starts again).  A no-op outside
 * a job; a worker whose coordinator is gone exits. */
void pool_progress(void);

#endif
