/*
 * orchestrator_wait.c -- which failpoints of an attempt must wait for an
 * answer (FENCECERT_FAILPOINT_WAIT, docs/failpoints.md), and the check that
 * nothing was meant to happen at one that did not wait.
 *
 * Invariants:
 *  1. The wait set of try k of op names every failpoint at which the
 *     orchestrator can act in that try: each fault given a failpoint for
 *     (op, k) -- kill, pause, fail, member and proxy actions alike -- and the
 *     resume_at of each fault of try k-1 that resumes "at the next
 *     failpoint".  It may name more; it never names fewer.
 *  2. orch__acts_at() is the orchestrator's own view of "something happens
 *     here"; a PASS line where it is true means the wait set (or the route)
 *     is wrong, and the schedule is recorded as an error, never as passed.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/run/orchestrator_impl.h"

static bool resumes_in_try(const struct fault *f, int op, int k)
{
	return f->resume == RESUME_AT_NEXT_FAILPOINT && f->attempt + 1 == k &&
	       orch__fault_for_op(f, op);
}

static bool acts_in_try(const struct fault *f, int op, int k)
{
	return fault_at_failpoint(f) && f->attempt == k &&
	       orch__fault_for_op(f, op);
}

/* Append ",name" unless the list has it already. */
static int add_name(char **set, size_t *len, const char *name)
{
	size_t n = strlen(name);
	char *grown;

	for (const char *s = *set; s && (s = strstr(s, name)); s += n)
		if ((s == *set || s[-1] == ',') && (s[n] == ',' || !s[n]))
			return 0;
	grown = realloc(*set, *len + n + 2);
	if (!grown)
		return FC_NOMEM;
	if (*len)
		grown[(*len)++] = ',';
	memcpy(grown + *len, name, n + 1);
	*len += n;
	*set = grown;
	return 0;
}

char *orch__wait_set(const struct orch *o, int op, int k)
{
	char *set = calloc(1, 1);
	size_t len = 0;
	int rc = set ? 0 : FC_NOMEM;

	for (size_t i = 0; i < o->p->nfaults && !rc; i++) {
		const struct fault *f = &o->p->faults[i];

		if (acts_in_try(f, op, k))
			rc = add_name(&set, &len, f->failpoint);
		if (!rc && resumes_in_try(f, op, k))
			rc = add_name(&set, &len, f->resume_at);
	}
	if (rc) {
		free(set);
		return NULL;
	}
	return set;
}

bool orch__zombie_resumes_at(const struct orch *o, int zi, int idx,
			     const char *fp)
{
	const struct run *z = &o->runs[zi], *b = &o->runs[idx];
	const struct fault *f;

	if (!z->given_up || z->resumed || z->ended || z->op != b->op ||
	    z->try_number + 1 != b->try_number || z->pause_fault < 0)
		return false;
	f = &o->p->faults[z->pause_fault];
	return f->resume == RESUME_AT_NEXT_FAILPOINT &&
	       strcmp(f->resume_at, fp) == 0;
}

bool orch__acts_at(const struct orch *o, int idx, const char *fp, int nth)
{
	const struct run *r = &o->runs[idx];

	for (size_t i = 0; i < o->p->nfaults; i++) {
		const struct fault *f = &o->p->faults[i];

		/* member and proxy actions match here too (a proxy's
		 * `hit: N` is the same N) */
		if (orch__fault_here(f, r->op, r->try_number, fp, nth))
			return true;
	}
	for (size_t zi = 0; zi < o->nruns; zi++)
		if (orch__zombie_resumes_at(o, (int)zi, idx, fp))
			return true;
	return false;
}
