/*
 * orchestrator_family.c -- the fault families in event order, and the
 * calls that hand one event to each of them (orchestrator_family.h).
 */
#include <stddef.h>

#include "harness/run/orchestrator_family.h"

/*
 * The order their hooks run in for one event; it is behaviour (the order
 * of what they record).  Members act at a failpoint before proxies are
 * armed there; proxies are armed before a try's seccomp plan is made.
 */
static const struct orch_family *const families[ORCH_FAMILIES] = {
	&orch__members, &orch__proxies, &orch__syscalls, &orch__operator,
};

static int index_of(enum fault_action a)
{
	for (int i = 0; i < ORCH_FAMILIES; i++)
		if (families[i]->owns(a))
			return i;
	return -1;
}

const struct orch_family *orch__family_of(enum fault_action a)
{
	int i = index_of(a);

	return i < 0 ? NULL : families[i];
}

/* Does the schedule have a fault of a family whose flag at `offset` (a
 * bool of struct orch_family) is set? */
static bool any_family(const struct orch_params *p, size_t offset)
{
	for (size_t i = 0; i < p->nfaults; i++) {
		const struct orch_family *f = orch__family_of(p->faults[i].action);
		if (f && *(const bool *)((const char *)f + offset))
			return true;
	}
	return false;
}

bool orch__families_exclusive(const struct orch_params *p)
{
	return any_family(p, offsetof(struct orch_family, exclusive));
}

bool orch__families_read_entries(const struct orch_params *p)
{
	return any_family(p, offsetof(struct orch_family, reads_entries));
}

int orch__families_init(struct orch_families *fs, struct orch_sched *s,
			char *err, size_t errlen)
{
	for (int i = 0; i < ORCH_FAMILIES; i++) {
		int rc = families[i]->init ?
			 families[i]->init(s, &fs->state[i], err, errlen) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

int orch__families_try_starts(struct orch_families *fs, struct orch_sched *s,
			      int idx, struct sv_spawn *req, char *err,
			      size_t errlen)
{
	for (int i = 0; i < ORCH_FAMILIES; i++) {
		int rc = families[i]->try_starts ?
			 families[i]->try_starts(fs->state[i], s, idx, req, err,
						 errlen) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

void orch__families_hit(struct orch_families *fs, struct orch_sched *s,
			int idx, const char *fp, int nth)
{
	for (int i = 0; i < ORCH_FAMILIES; i++)
		if (families[i]->hit)
			families[i]->hit(fs->state[i], s, idx, fp, nth);
}

int orch__families_holding(struct orch_families *fs, struct orch_sched *s,
			   int idx, bool *armed)
{
	*armed = false;
	for (int i = 0; i < ORCH_FAMILIES; i++) {
		bool more = false;
		int fi = families[i]->holding ?
			 families[i]->holding(fs->state[i], s, idx, &more) : -1;

		*armed |= more;
		if (fi >= 0)
			return fi;
	}
	return -1;
}

void orch__families_exited(struct orch_families *fs, struct orch_sched *s,
			   int idx, const sv_proc *proc)
{
	for (int i = 0; i < ORCH_FAMILIES; i++)
		if (families[i]->exited)
			families[i]->exited(fs->state[i], s, idx, proc);
}

void orch__families_gone(struct orch_families *fs, struct orch_sched *s,
			 int idx, bool zombie)
{
	for (int i = 0; i < ORCH_FAMILIES; i++)
		if (families[i]->gone)
			families[i]->gone(fs->state[i], s, idx, zombie);
}

void orch__families_try_over(struct orch_families *fs, struct orch_sched *s,
			     int idx)
{
	for (int i = 0; i < ORCH_FAMILIES; i++)
		if (families[i]->try_over)
			families[i]->try_over(fs->state[i], s, idx);
}

void orch__families_release(struct orch_families *fs, struct orch_sched *s)
{
	for (int i = 0; i < ORCH_FAMILIES; i++) {
		if (families[i]->release)
			families[i]->release(fs->state[i], s);
		fs->state[i] = NULL;
	}
}

void orch__families_resume(struct orch_families *fs, struct orch_sched *s,
			   int fi)
{
	int i = index_of(s->p->faults[fi].action);

	families[i]->resume(fs->state[i], s, fi);
}

void orch__families_between(struct orch_families *fs, struct orch_sched *s,
			    int fi, struct orch_between *b)
{
	int i = index_of(s->p->faults[fi].action);

	families[i]->between(fs->state[i], s, fi, b);
}
