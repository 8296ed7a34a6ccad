/*
 * orchestrator_wait.c -- the failpoints an attempt waits at
 * (orchestrator_wait.h, whose invariants this file keeps).
 */
#include <stdlib.h>
#include <string.h>

#include "harness/run/orchestrator_sched.h"
#include "harness/run/orchestrator_wait.h"

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

char *orch__wait_set(const struct orch_params *p, int op, int k)
{
	char *set = calloc(1, 1);
	size_t len = 0;
	int rc = set ? 0 : FC_NOMEM;

	for (size_t i = 0; i < p->nfaults && !rc; i++) {
		const struct fault *f = &p->faults[i];

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

bool orch__fault_acts_at(const struct orch_params *p, int op, int k,
			 const char *fp, int nth)
{
	/* member and proxy actions match here too (a proxy's `hit: N` is the
	 * same N) */
	for (size_t i = 0; i < p->nfaults; i++)
		if (orch__fault_here(&p->faults[i], op, k, fp, nth))
			return true;
	return false;
}
