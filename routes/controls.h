/*
 * controls.h -- the deliberately wrong route variants (SPEC section 10).
 *
 * Each is a small, plausible-looking route that certification must REJECT;
 * together they show that the harness catches each way of getting retries
 * wrong (no-fsync: once it models power loss; kills alone certify it).  They speak the same failpoint channel with the same names where
 * the step is the same.  docs/controls.md gives, for each, the exact
 * failure it produces.
 *
 *   naive             no journal, no fence: appends on every try
 *   xcom-guard        trusts the previous try's return.json
 *   checkpoint-guard  a local armed/done checkpoint beside the target
 *   journal-no-fence  the journal protocol, but nothing in the target
 *                     proves an apply, so a retry re-applies
 *   split-fence       the journal protocol, but rows and fence record are
 *                     two transactions
 *   pg-fence-row-only the certified route on PostgreSQL with a probe that
 *                     ignores the transaction status
 *   no-fsync          the certified route on a file: target with no
 *                     fsync of the target's files or the evidence: right
 *                     under kills, wrong under power loss
 *
 * Who includes it: the route command (cli/cmd_route.c, `--variant`).
 * Invariant: where a control's step is the certified route's, it stops at
 * the same failpoint (FP_* of common/protocol.h), so one scenario applies
 * to both.
 */
#ifndef FENCECERT_CONTROLS_H
#define FENCECERT_CONTROLS_H

#include <stdbool.h>

#include "routes/runtime.h"

/* True when `variant` names a control route. */
bool controls_known(const char *variant);

/* True when the variant uses the journal (FENCECERT_JOURNAL required). */
bool controls_need_journal(const char *variant);

/* Run one attempt of the variant; returns an exit status (enum route_exit).
 * The failpoint channel must be initialised (failpoint_init). */
int controls_run(const char *variant, const struct route_config *c);

#endif
