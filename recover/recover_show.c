/*
 * recover_show.c -- the read-only subcommands of the recovery tool
 * (recover_tool.h): inspect (entry, lease, history, the fence's probe),
 * plan (which actions are safe now and why, and the apply command to
 * run) and list (operations that stopped or went stale), in text or JSON.
 *
 * Nothing here writes (recover_tool.h invariant 1): the facts come from
 * recover_facts.c, which opens the journal read-only and probes hands off;
 * the decision is recover_plan_compute()'s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/clock.h"
#include "common/cli.h"
#include "journal/journal_json.h"
#include "recover/recover_impl.h"
#include "recover/recover_tool.h"

/* ---- inspect ---------------------------------------------------------- */

static json_t *history_json(struct journal_transition *h, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++) {
		if (json_array_append_new(arr,
					  journal_transition_to_json(&h[i]))) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static void print_history(const struct journal_transition *h, size_t n)
{
	char t[40];

	printf("history\n");
	for (size_t i = 0; i < n; i++) {
		char from_to[64];

		snprintf(from_to, sizeof(from_to), "%s -> %s",
			 state_name(h[i].from), state_name(h[i].to));
		printf("  v%-3lld %-40s epoch %-3lld %s  %s\n", h[i].version,
		       from_to, h[i].epoch,
		       recover__fmt_time(h[i].at, t, sizeof(t)), h[i].evidence);
	}
}

static int run_inspect(struct recover_ctx *c)
{
	struct journal_transition *h;
	size_t n;
	int rc;

	if ((rc = recover__gather(c)))
		return rc;
	rc = journal_history(c->j, c->r->op, &h, &n);
	if (rc)
		return cli_fail(rc, "%s", journal_errmsg(c->j));
	if (c->r->json) {
		rc = recover__print_json(json_pack(
			"{s:s, s:s, s:o, s:o, s:o, s:o}",
			"journal", c->journal_shown, "target", c->target_shown,
			"entry", journal_entry_to_json(&c->e),
			"lease", recover__lease_json(&c->e, c->now),
			"history", history_json(h, n),
			"fence", recover__fence_json(c)));
		free(h);
		return rc;
	}
	recover__print_entry_head(c);
	printf("meta       %s\n", c->e.meta);
	recover__print_lease_line(c);
	recover__print_fence_line(c);
	print_history(h, n);
	free(h);
	return recover__flush_text();
}

/* ---- plan ------------------------------------------------------------- */

/* The first action a person should take, if any: a safe one, else a
 * forceable one. */
static int suggested(const struct recover_plan *plan, bool *force)
{
	for (int pass = 0; pass < 2; pass++)
		for (int a = 0; a < RECOVER_ACTION_COUNT; a++)
			if (plan->options[a].verdict ==
			    (pass ? RECOVER_FORCE_ONLY : RECOVER_SAFE)) {
				*force = pass;
				return a;
			}
	return -1;
}

static char *next_command(const struct recover_ctx *c,
			  const struct recover_plan *plan)
{
	bool force = false;
	int a = suggested(plan, &force);
	char *cmd;

	if (a < 0)
		return NULL;
	if (asprintf(&cmd, "fencecert recover apply --journal '%s' --target "
		     "'%s' --op %s --action %s --expect-version %lld --actor "
		     "NAME --reason TEXT%s", c->journal_shown, c->target_shown,
		     c->e.operation_id, recover_action_name(a), c->e.version,
		     force ? " --force" : "") < 0)
		return NULL;
	return cmd;
}

static json_t *plan_json(const struct recover_ctx *c,
			 const struct recover_plan *plan)
{
	json_t *opts = json_array();
	char *cmd = next_command(c, plan);
	json_t *root;

	for (int a = 0; opts && a < RECOVER_ACTION_COUNT; a++) {
		const struct recover_option *o = &plan->options[a];

		if (json_array_append_new(opts, json_pack(
			"{s:s, s:s, s:s, s:b, s:s}",
			"action", recover_action_name(a),
			"verdict", recover_verdict_name(o->verdict),
			"next_state", state_name(o->next),
			"fences_first", o->fences_first, "why", o->why))) {
			json_decref(opts);
			opts = NULL;
		}
	}
	root = json_pack("{s:s, s:s, s:I, s:o, s:o, s:o, s:s, s:o}",
			 "operation_id", c->e.operation_id,
			 "state", state_name(c->e.state),
			 "version", (json_int_t)c->e.version,
			 "lease", recover__lease_json(&c->e, c->now),
			 "fence", recover__fence_json(c),
			 "actions", opts, "summary", plan->summary,
			 "next", recover__str_or_null(cmd));
	free(cmd);
	return root;
}

static void print_plan(const struct recover_ctx *c,
		       const struct recover_plan *plan)
{
	char *cmd = next_command(c, plan);

	recover__print_entry_head(c);
	recover__print_lease_line(c);
	recover__print_fence_line(c);
	printf("\n%s\n\nactions\n", plan->summary);
	for (int a = 0; a < RECOVER_ACTION_COUNT; a++) {
		const struct recover_option *o = &plan->options[a];

		printf("  %-23s %-15s %s\n", recover_action_name(a),
		       recover_verdict_name(o->verdict), o->why);
	}
	if (cmd)
		printf("\nnext\n  %s\n", cmd);
	free(cmd);
}

static int run_plan(struct recover_ctx *c)
{
	struct recover_plan plan;
	int rc;

	if ((rc = recover__gather(c)))
		return rc;
	recover_plan_compute(&c->facts, &plan);
	if (c->r->json)
		return recover__print_json(plan_json(c, &plan));
	print_plan(c, &plan);
	return recover__flush_text();
}

/* ---- list ------------------------------------------------------------- */

/* Why an entry counts as stopped; NULL when it does not. */
static const char *stopped_why(const struct journal_entry *e, long long now,
			       long long stale_ms)
{
	if (e->state == FC_COMMIT_UNKNOWN)
		return "outcome unknown: needs an operator";
	if (e->state == FC_COMPLETE || now - e->updated_at < stale_ms)
		return NULL;
	return recover__lease_live(e, now) ?
	       "no change for a while, lease running" :
	       "no change for a while, no live lease";
}

static int run_list(struct recover_ctx *c)
{
	const state_set all = STATE_SET_ALL & ~STATE_BIT(FC_COMPLETE);
	struct journal_filter f = {
		.states = c->r->states ? c->r->states : all,
	};
	long long stale = c->r->stale_ms;
	struct journal_entry *e;
	json_t *arr = json_array();
	size_t n, shown = 0;
	int rc;

	if ((rc = recover__open_journal(c))) {
		json_decref(arr);
		return rc;
	}
	c->now = clock_wall_ms();
	rc = journal_list(c->j, &f, &e, &n);
	if (rc) {
		json_decref(arr);
		return cli_fail(rc, "%s", journal_errmsg(c->j));
	}
	if (!(c->r->json))
		printf("%-20s %-8s %-10s %-26s %s\n", "STATE", "VERSION",
		       "IDLE", "LEASE", "OPERATION");
	for (size_t i = 0; i < n; i++) {
		const char *why = stopped_why(&e[i], c->now, stale);
		char idle[32], lease[JOURNAL_OWNER_MAX + 16];

		if (!why)
			continue;
		shown++;
		recover__fmt_span(c->now - e[i].updated_at, idle, sizeof(idle));
		if (c->r->json) {
			if (json_array_append_new(arr, json_pack(
				"{s:s, s:s, s:I, s:I, s:I, s:o, s:s}",
				"operation_id", e[i].operation_id,
				"state", state_name(e[i].state),
				"version", (json_int_t)e[i].version,
				"updated_at", (json_int_t)e[i].updated_at,
				"idle_ms", (json_int_t)(c->now - e[i].updated_at),
				"lease", recover__lease_json(&e[i], c->now),
				"why", why)))
				break;
			continue;
		}
		snprintf(lease, sizeof(lease), "%s%s",
			 e[i].lease_owner[0] ? e[i].lease_owner : "-",
			 recover__lease_live(&e[i], c->now) ? " (running)" : "");
		printf("%-20s %-8lld %-10s %-26s %s\n", state_name(e[i].state),
		       e[i].version, idle, lease, e[i].operation_id);
	}
	free(e);
	if (c->r->json)
		return recover__print_json(arr);
	json_decref(arr);
	printf("%zu stopped operation%s\n", shown, shown == 1 ? "" : "s");
	return recover__flush_text();
}

/* ---- the calls ------------------------------------------------------- */

int recover_inspect(const struct recover_request *r)
{
	return recover__run(r, run_inspect);
}

int recover_plan(const struct recover_request *r)
{
	return recover__run(r, run_plan);
}

int recover_list(const struct recover_request *r)
{
	return recover__run(r, run_list);
}
