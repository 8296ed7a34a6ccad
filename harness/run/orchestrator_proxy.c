/*
 * orchestrator_proxy.c -- the proxies family (orchestrator_family.h): a
 * schedule's fault proxies (tcp_proxy.h), one per suite `proxies:` entry,
 * started before the route's templates are expanded ({proxy:NAME} is its
 * URL) and stopped with the schedule; cut_after_commit, hold_commit,
 * refuse and delay faults are rules armed on them.
 *
 * Invariants:
 *   1. A proxy fault is armed only while its try runs: from before the try
 *      is spawned (or from its failpoint, for a refuse given one) until the
 *      try ended or was given up as a zombie, then the proxy forwards
 *      again, so no other try meets the fault.
 *   2. A fault fired only if the proxy says so: a cut answer, a held or
 *      swallowed COMMIT, a refused connection, a delayed message.  The
 *      proxy's own words go into the record's applied faults.
 *   3. A held COMMIT makes its try a zombie like a pause does (`holding`),
 *      and is released (not SIGCONTed) when the zombie is resumed.  The
 *      hold has fired once the COMMIT was held: the next try then runs
 *      while it is in flight, which is the point.  A server (or a probe)
 *      may still end the held session before the release; the zombie then
 *      ends on its own and there is nothing left to release.
 *   4. Proxy discovery (orch_params.proxy_discover) counts the triggers
 *      (COMMITs, autocommit writes: tcp_proxy.h) the explored proxy relays
 *      from just before op 1 try 1 is spawned until that try is over, the
 *      unit a cut_after_commit or hold_commit `hit` counts in.  The route
 *      waits for each COMMIT's answer, which the proxy relays only after
 *      counting it, so every COMMIT the try saw answered is counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/inject/tcp_proxy.h"
#include "harness/run/orchestrator_family.h"

/* The family's state: the suite's proxies, in suite order. */
struct proxies {
	const struct orch_params *p;
	tcp_proxy **proxy;
	char **url;          /* {proxy:NAME} */
	int *fault;          /* per proxy: the fault armed on it, -1 */
	size_t n;
	/* proxy discovery (invariant 4): the try counted, -1, and the
	 * explored proxy's trigger count when it started */
	int counting;
	long counted_from;
};

static int proxy_index(const struct proxies *px, const char *name)
{
	const struct suite *s = px->p->suite;

	for (size_t i = 0; i < px->n; i++)
		if (strcmp(s->proxies[i].name, name) == 0)
			return (int)i;
	return -1;
}

static const char *proxy_url(const void *ctx, const char *name)
{
	const struct proxies *px = ctx;
	int i = proxy_index(px, name);

	return i < 0 ? NULL : px->url[i];
}

static void release(void *st, struct orch_sched *s)
{
	struct proxies *px = st;

	if (!px)
		return;
	if (s->vars.proxy_ctx == px) { /* no {proxy:} after this */
		s->vars.proxy = NULL;
		s->vars.proxy_ctx = NULL;
	}
	for (size_t i = 0; i < px->n; i++) {
		tcp_proxy_free(px->proxy[i]);
		free(px->url[i]);
	}
	free(px->proxy);
	free(px->url);
	free(px->fault);
	free(px);
}

/* Start proxy i toward its upstream ({service:} expanded). */
static int start_one(struct proxies *px, struct orch_sched *s, size_t i,
		     char *err, size_t errlen)
{
	const struct proxy_spec *sp = &s->p->suite->proxies[i];
	char *up = NULL, msg[300];
	int rc = scenario_expand(sp->upstream, &s->vars, &up, msg, sizeof(msg));

	px->n = i + 1;
	px->fault[i] = -1;
	if (!rc)
		rc = tcp_proxy_start(up, tcp_proxy_protocol_of(up),
				     &px->proxy[i], msg, sizeof(msg));
	if (!rc && !(px->url[i] = tcp_proxy_rewrite_url(up,
				tcp_proxy_port(px->proxy[i]))))
		rc = FC_NOMEM;
	free(up);
	if (rc)
		snprintf(err, errlen, "proxy '%s': %s", sp->name, msg);
	return rc;
}

static int init(struct orch_sched *s, void **state, char *err, size_t errlen)
{
	size_t n = s->p->suite->nproxies;
	struct proxies *px = calloc(1, sizeof(*px));
	int rc = 0;

	*state = NULL;
	if (!px)
		return FC_NOMEM;
	px->p = s->p;
	px->counting = -1;
	if (n) {
		px->proxy = calloc(n, sizeof(*px->proxy));
		px->url = calloc(n, sizeof(*px->url));
		px->fault = calloc(n, sizeof(*px->fault));
		if (!px->proxy || !px->url || !px->fault)
			rc = FC_NOMEM;
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = start_one(px, s, i, err, errlen);
	if (rc) {
		release(px, s);
		return rc;
	}
	if (n) {
		s->vars.proxy = proxy_url;
		s->vars.proxy_ctx = px;
	}
	*state = px;
	return 0;
}

static void arm(struct proxies *px, int fi)
{
	const struct fault *f = &px->p->faults[fi];
	int i = proxy_index(px, f->proxy);
	struct tcp_proxy_rule rule = { TCP_PROXY_FORWARD, 0, 0 };

	if (i < 0)
		return; /* the loader refuses this; a replayed string may not */
	switch (f->action) {
	case FAULT_CUT_AFTER_COMMIT:
		rule = (struct tcp_proxy_rule){ TCP_PROXY_CUT_REPLY, f->hit, 0 };
		break;
	case FAULT_HOLD_COMMIT:
		rule = (struct tcp_proxy_rule){ TCP_PROXY_HOLD, f->hit, 0 };
		break;
	case FAULT_REFUSE:
		rule.action = TCP_PROXY_REFUSE;
		break;
	default:
		rule.delay_ms = f->delay_ms;
		break;
	}
	tcp_proxy_arm(px->proxy[i], &rule);
	px->fault[i] = fi;
}

/* Is f a proxy fault of try k of op? */
static bool for_try(const struct fault *f, int op, int k)
{
	return fault_is_proxy_action(f->action) && f->attempt == k &&
	       orch__fault_for_op(f, op);
}

static bool for_attempt(const struct orch_sched *s, const struct fault *f,
			int idx)
{
	const struct rec_attempt *a = &s->rec->attempts[idx];

	return for_try(f, a->operation, a->try_number);
}

/* The proxy a discovery counts on, or -1 (invariant 4). */
static int discovered(const struct proxies *px)
{
	const struct explore_spec *e = px->p->proxy_discover;

	return e ? proxy_index(px, e->proxy) : -1;
}

/* Arm try idx's proxy faults that hold from its start; start counting
 * op 1 try 1's COMMITs for a discovery. */
static int try_starts(void *st, struct orch_sched *s, int idx,
		      struct sv_spawn *req, char *err, size_t errlen)
{
	struct proxies *px = st;
	const struct rec_attempt *a = &s->rec->attempts[idx];
	struct tcp_proxy_stats stats;
	int d = discovered(px);

	for (size_t i = 0; i < s->p->nfaults; i++)
		if (for_attempt(s, &s->p->faults[i], idx) &&
		    !fault_at_failpoint(&s->p->faults[i]))
			arm(st, (int)i);
	if (d >= 0 && a->operation == 1 && a->try_number == 1) {
		tcp_proxy_stats(px->proxy[d], &stats);
		px->counting = idx;
		px->counted_from = stats.triggers;
	}
	return 0;
}

/* A discovery's try is over: what it committed through the proxy. */
static void count_commits(struct proxies *px, struct orch_sched *s, int idx)
{
	struct tcp_proxy_stats stats;
	int d = discovered(px);

	if (d < 0 || px->counting != idx)
		return;
	tcp_proxy_stats(px->proxy[d], &stats);
	if (stats.triggers > px->counted_from)
		s->rec->attempts[idx].proxy_commits =
			(unsigned long)(stats.triggers - px->counted_from);
	px->counting = -1;
}

/* Arm a refuse given this failpoint. */
static void hit(void *st, struct orch_sched *s, int idx, const char *fp,
		int nth)
{
	for (size_t i = 0; i < s->p->nfaults; i++) {
		const struct fault *f = &s->p->faults[i];

		if (for_attempt(s, f, idx) && fault_at_failpoint(f) &&
		    strcmp(f->failpoint, fp) == 0 && f->hit == nth)
			arm(st, (int)i);
	}
}

/* The fault armed on some proxy for attempt idx with this action. */
static int armed_for(const struct proxies *px, const struct orch_sched *s,
		     int idx, enum fault_action a, int *which)
{
	for (size_t i = 0; i < px->n; i++) {
		int fi = px->fault[i];

		if (fi >= 0 && s->p->faults[fi].action == a &&
		    for_attempt(s, &s->p->faults[fi], idx)) {
			*which = (int)i;
			return fi;
		}
	}
	return -1;
}

/* A hold_commit armed for idx holds its COMMIT now (invariant 3). */
static int holding(void *st, struct orch_sched *s, int idx, bool *armed)
{
	struct proxies *px = st;
	struct tcp_proxy_stats stats;
	int i, fi = armed_for(px, s, idx, FAULT_HOLD_COMMIT, &i);

	*armed = fi >= 0;
	if (fi < 0)
		return -1;
	tcp_proxy_stats(px->proxy[i], &stats);
	return stats.fired > 0 ? fi : -1;
}

/* Let the COMMIT held for fault fi go on. */
static void resume(void *st, struct orch_sched *s, int fi)
{
	struct proxies *px = st;
	int i = proxy_index(px, s->p->faults[fi].proxy);

	if (i >= 0)
		tcp_proxy_release(px->proxy[i]);
}

/* Record what idx's proxy faults did and disarm them (invariants 1, 2). */
static void try_over(void *st, struct orch_sched *s, int idx)
{
	struct proxies *px = st;
	int op = s->rec->attempts[idx].operation;
	int k = s->rec->attempts[idx].try_number;

	count_commits(px, s, idx);
	for (size_t i = 0; i < px->n; i++) {
		int fi = px->fault[i];
		const struct fault *f;
		struct tcp_proxy_stats stats;

		if (fi < 0)
			continue;
		f = &s->p->faults[fi];
		if (!for_try(f, op, k))
			continue;
		tcp_proxy_disarm(px->proxy[i]);
		px->fault[i] = -1;
		tcp_proxy_stats(px->proxy[i], &stats);
		if (f->action == FAULT_DELAY && stats.delayed > 0)
			snprintf(stats.last, sizeof(stats.last),
				 "delayed %ld messages by %d ms", stats.delayed,
				 f->delay_ms);
		else if (stats.fired == 0)
			continue;
		s->rec->fired[fi] = true;
		orch__note_applied(s, fi, idx, op, "proxy %s: %s in op %d try %d",
				   f->proxy, stats.last, op, k);
	}
}

static bool owns(enum fault_action a)
{
	return fault_is_proxy_action(a);
}

const struct orch_family orch__proxies = {
	.owns = owns,
	.init = init,
	.try_starts = try_starts,
	.hit = hit,
	.holding = holding,
	.resume = resume,
	.try_over = try_over,
	.release = release,
};
