/*
 * orchestrator_proxy.c -- a schedule's fault proxies (tcp_proxy.h): one per
 * suite `proxies:` entry, started before the route's templates are
 * expanded ({proxy:NAME} is its URL) and stopped with the schedule.
 *
 * Invariants:
 *   1. A proxy fault is armed only while its try runs: from before the try
 *      is spawned (or from its failpoint, for a refuse given one) until the
 *      try ended or was given up as a zombie, then the proxy forwards
 *      again, so no other try meets the fault.
 *   2. A fault fired only if the proxy says so: a cut answer, a held or
 *      swallowed COMMIT, a refused connection, a delayed message.  The
 *      proxy's own words go into the record's applied faults.
 *   3. A held COMMIT makes its try a zombie like a pause does, and is
 *      released (not SIGCONTed) when the zombie is resumed.  The hold has
 *      fired once the COMMIT was held: the next try then runs while it is
 *      in flight, which is the point.  A server (or a probe) may still end
 *      the held session before the release; the zombie then ends on its
 *      own and there is nothing left to release.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/run/orchestrator_impl.h"
#include "harness/inject/tcp_proxy.h"

static int proxy_index(const struct orch *o, const char *name)
{
	const struct suite *s = o->p->suite;

	for (size_t i = 0; i < o->nproxies; i++)
		if (strcmp(s->proxies[i].name, name) == 0)
			return (int)i;
	return -1;
}

static const char *proxy_url(const void *ctx, const char *name)
{
	const struct orch *o = ctx;
	int i = proxy_index(o, name);

	return i < 0 ? NULL : o->proxy_urls[i];
}

int orch__proxies_start(struct orch *o, char *err, size_t errlen)
{
	const struct suite *s = o->p->suite;
	size_t n = s->nproxies;

	if (!n)
		return 0;
	o->proxies = calloc(n, sizeof(*o->proxies));
	o->proxy_urls = calloc(n, sizeof(*o->proxy_urls));
	o->proxy_fault = calloc(n, sizeof(*o->proxy_fault));
	if (!o->proxies || !o->proxy_urls || !o->proxy_fault)
		return FC_NOMEM;
	for (size_t i = 0; i < n; i++) {
		char *up = NULL, msg[300];
		int rc = scenario_expand(s->proxies[i].upstream, &o->vars, &up,
					 msg, sizeof(msg));

		o->nproxies = i + 1;
		o->proxy_fault[i] = -1;
		if (!rc)
			rc = tcp_proxy_start(up, tcp_proxy_protocol_of(up),
					     &o->proxies[i], msg, sizeof(msg));
		if (!rc && !(o->proxy_urls[i] = tcp_proxy_rewrite_url(up,
				tcp_proxy_port(o->proxies[i]))))
			rc = FC_NOMEM;
		free(up);
		if (rc) {
			snprintf(err, errlen, "proxy '%s': %s", s->proxies[i].name, msg);
			return rc;
		}
	}
	o->vars.proxy = proxy_url;
	o->vars.proxy_ctx = o;
	return 0;
}

void orch__proxies_free(struct orch *o)
{
	for (size_t i = 0; i < o->nproxies; i++) {
		tcp_proxy_free(o->proxies[i]);
		free(o->proxy_urls[i]);
	}
	free(o->proxies);
	free(o->proxy_urls);
	free(o->proxy_fault);
	o->proxies = NULL;
	o->proxy_urls = NULL;
	o->proxy_fault = NULL;
	o->nproxies = 0;
}

static void arm(struct orch *o, int fi)
{
	const struct fault *f = &o->p->faults[fi];
	int px = proxy_index(o, f->proxy);
	struct tcp_proxy_rule rule = { TCP_PROXY_FORWARD, 0, 0 };

	if (px < 0)
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
	tcp_proxy_arm(o->proxies[px], &rule);
	o->proxy_fault[px] = fi;
}

static bool for_try(const struct fault *f, int op, int k)
{
	return fault_is_proxy_action(f->action) && f->attempt == k &&
	       (f->operation == 0 || f->operation == op);
}

void orch__proxy_try_starts(struct orch *o, int op, int k)
{
	for (size_t i = 0; i < o->p->nfaults; i++)
		if (for_try(&o->p->faults[i], op, k) &&
		    !fault_at_failpoint(&o->p->faults[i]))
			arm(o, (int)i);
}

void orch__proxy_hit(struct orch *o, int idx, const char *fp, int nth)
{
	const struct run *r = &o->runs[idx];

	for (size_t i = 0; i < o->p->nfaults; i++) {
		const struct fault *f = &o->p->faults[i];

		if (for_try(f, r->op, r->try_number) && fault_at_failpoint(f) &&
		    strcmp(f->failpoint, fp) == 0 && f->hit == nth)
			arm(o, (int)i);
	}
}

/* The fault armed on some proxy for attempt idx with this action. */
static int armed_for(const struct orch *o, int idx, enum fault_action a,
		     int *px)
{
	const struct run *r = &o->runs[idx];

	for (size_t i = 0; i < o->nproxies; i++) {
		int fi = o->proxy_fault[i];

		if (fi >= 0 && o->p->faults[fi].action == a &&
		    for_try(&o->p->faults[fi], r->op, r->try_number)) {
			*px = (int)i;
			return fi;
		}
	}
	return -1;
}

int orch__proxy_holding(struct orch *o, int idx, bool *armed)
{
	struct tcp_proxy_stats st;
	int px, fi = armed_for(o, idx, FAULT_HOLD_COMMIT, &px);

	*armed = fi >= 0;
	if (fi < 0)
		return -1;
	tcp_proxy_stats(o->proxies[px], &st);
	return st.fired > 0 ? fi : -1;
}

void orch__proxy_release(struct orch *o, int fi)
{
	int px = proxy_index(o, o->p->faults[fi].proxy);

	if (px >= 0)
		tcp_proxy_release(o->proxies[px]);
}

void orch__proxy_try_ends(struct orch *o, int idx)
{
	const struct run *r = &o->runs[idx];

	for (size_t i = 0; i < o->nproxies; i++) {
		int fi = o->proxy_fault[i];
		const struct fault *f;
		struct tcp_proxy_stats st;

		if (fi < 0)
			continue;
		f = &o->p->faults[fi];
		if (!for_try(f, r->op, r->try_number))
			continue;
		tcp_proxy_disarm(o->proxies[i]);
		o->proxy_fault[i] = -1;
		tcp_proxy_stats(o->proxies[i], &st);
		if (f->action == FAULT_DELAY && st.delayed > 0)
			snprintf(st.last, sizeof(st.last), "delayed %ld messages by %d ms",
				 st.delayed, f->delay_ms);
		else if (st.fired == 0)
			continue;
		o->rec->fired[fi] = true;
		orch__note_applied(o, fi, idx, r->op, "proxy %s: %s in op %d try %d",
				   f->proxy, st.last, r->op, r->try_number);
	}
}
