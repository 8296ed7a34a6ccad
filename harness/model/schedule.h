/*
 * schedule.h -- the compact, reproducible string form of a schedule.
 *
 * A schedule is the list of faults one run applies.  Its string form is what
 * reports print and `fencecert certify --schedule STRING` replays, so it must
 * round-trip exactly: schedule_parse(schedule_format(f)) == f (schedule.c
 * states this and its other invariants).
 *
 * Owns: the string form and the one-letter action names; the faults and
 * their long names are fault.h's, the failpoint name rule fault.h's.
 * schedule.c calls only fault.c, the template checker of the model (a
 * syscall rule's glob is a template) and harness/inject's rule parser (a
 * syscall rule is an inject_seccomp rule), never the suite loader, so the
 * loader can use it.  schedule_check.c (whether a replayed string names
 * what exists) sits on schedule.c and the loaded suite (suite.c).  Who includes it: the model (scenario_faults.c,
 * explore.h, record.h), harness/run, harness/certify and tests/.
 *
 * Grammar (faults separated by ';', no spaces; "clean" = no faults):
 *   ACTION ':' FAILPOINT '@' ATTEMPT ['#' HIT] ['/op' N] ['>' RESUME]
 *        for kill (k), pause (p), fail (f), power_loss (b, "blackout");
 *        power_loss also takes the form below ("b@1": once try 1 ended);
 *        RESUME is "next" (after the next
 *        attempt), "never", or a failpoint name the next attempt must reach
 *   ACTION '@' AFTER_ATTEMPT ['/op' N]
 *        for lose_xcom (x), lose_pod (l), change_source (s)
 *   stop_member (d) and start_member (u) take either form, then
 *        '=' [SERVICE '/'] MEMBER: "d:after_lease@1=m2", "u@2=etcd/m2"
 *   'o:' DECISION '@' AFTER_ATTEMPT ['/op' N] ['+force'] ['+wrong_target']
 *        for recover; DECISION is committed or failed_pre_commit
 *   'y' '@' ATTEMPT ['/op' N] '=' RULE
 *        for a syscall fault: RULE is an inject_seccomp rule string
 *        (inject_seccomp.h) running to the next ';' or the end
 *   proxy actions happen during try ATTEMPT and end with '=' PROXY:
 *        cut_after_commit (c), hold_commit (h): ACTION '@' ATTEMPT ['#' HIT]
 *        delay (w):  'w' '@' ATTEMPT '*' MS
 *        refuse (r): 'r' '@' ATTEMPT, or the failpoint form "r:FP@2" (from
 *        that hit on); then ['/op' N] '=' PROXY: "c@1=pg", "r:after_claim@2=pgj"
 * e.g. "k:after_target_commit@1", "p:after_committing@1#1>next;x@1/op2",
 * "o:committed@2", "y@1/op1=fsync#2:kill_after@{dir}/journal.db".
 */
#ifndef FENCECERT_SCHEDULE_H
#define FENCECERT_SCHEDULE_H

#include <stddef.h>

#include "harness/model/scenario.h"

#define SCHEDULE_STR_MAX 1024

/* Write the string form into out.  FC_USAGE if it does not fit. */
int schedule_format(const struct fault *faults, size_t n, char *out,
		    size_t outlen) FC_MUST_CHECK;

/* Parse a string form into a heap array (caller frees).  FC_USAGE with a
 * message naming the offending character position. */
int schedule_parse(const char *s, struct fault **faults, size_t *n,
		   char *err, size_t errlen) FC_MUST_CHECK;

/*
 * Check a syscall fault's rule string (FAULT_SYSCALL): it parses as an
 * inject_seccomp rule, holds no ';', its glob's placeholders are valid
 * ("{dir}", "{env:NAME}") and it fits FAULT_RULE_MAX.  0 or FC_USAGE with
 * a message.
 */
int schedule_rule_check(const char *rule, char *err, size_t errlen)
	FC_MUST_CHECK;

/* Write the rule "SYSCALL#HIT:ACTION[@GLOB]" (glob NULL or "": none) and
 * check it as above. */
int schedule_rule_make(char *out, size_t outlen, const char *syscall,
		       unsigned long hit, const char *action, const char *glob,
		       char *err, size_t errlen) FC_MUST_CHECK;

/* ---- does a schedule name what exists (schedule_check.c) ---------- */

/* The operations a schedule of scenario sc runs: its own `operations:`,
 * else 1 for an exploration and the workload's for a fixed scenario. */
int schedule_operations(const struct suite *s, const struct scenario *sc);

/*
 * Before a replay (`certify --schedule`): every fault of f[0..n) must be
 * able to fire in scenario sc of suite s -- its try within the
 * orchestrator's tries, its operation within the scenario's, its member
 * and proxy the suite's (the loader's rules for a suite's own faults).
 * FC_USAGE with a message naming the fault.
 */
int schedule_check_suite(const struct suite *s, const struct scenario *sc,
			 const struct fault *f, size_t n, char *err,
			 size_t errlen) FC_MUST_CHECK;

/* What one attempt of a finished run reached. */
struct schedule_attempt {
	int operation, try_number;
	const char *const *hits;  /* failpoint names in the order hit */
	size_t nhits;
	bool ran_to_end;          /* it exited by itself: no fault, timeout or
				     end of the schedule stopped it */
};

/*
 * After a replay ran: a failpoint fault of f that did not fire (fired[i]
 * false) because the occurrence it names does not exist -- its try ran to
 * its own end and reported that failpoint fewer than `hit` times, or never
 * started though the schedule finished -- is FC_USAGE with a message
 * naming what that try does reach.  0 when every unfired fault may still
 * exist (e.g. an earlier fault stopped its try first).
 */
int schedule_check_reached(const struct fault *f, size_t n, const bool *fired,
			   int operations, const struct schedule_attempt *a,
			   size_t na, char *err, size_t errlen) FC_MUST_CHECK;

#endif
