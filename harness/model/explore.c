/*
 * explore.c -- scenario -> schedules, in waves fed by what routes reach
 * (explore.h).
 *
 * Invariants:
 *  1. Deterministic: the jobs and their order depend only on the scenario,
 *     the seed and the traces fed, never on when traces arrive (waves are
 *     built from traces in job order, once every trace of a wave is in).
 *  2. No schedule string is handed out twice.
 *  3. Only points a trace showed are faulted (failpoint + hit number), so
 *     a strict job's faults fire unless the route is nondeterministic.
 *  4. Bounded: at most EXPLORE_SCHEDULES_MAX slots, points of at most
 *     EXPLORE_NAMES_MAX names per trace; once capped, asking for another
 *     job costs O(1), so a wave over a huge trace ends quickly.  What was
 *     left out is said by `bounded` (the first reason).
 *
 *   START --discovery fed--> TRY1 --all kill/pause traces fed--> LATE --> DONE
 *                            (try-1 jobs)  (retry, interleave, random jobs)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/explore.h"
#include "harness/inject/inject_seccomp.h"
#include "harness/model/record.h"

#define EXPLORE_RANDOM_TRIES 8 /* draws per random schedule before giving up */
#define EXPLORE_RANDOM_FAULTS 16 /* point faults in one random schedule */
#define EXPLORE_PROXY_HITS 1000000 /* schedule.c's largest number */
#define STR_(x) #x
#define FC_STR(x) STR_(x) /* a bound's number, in the words of note_bound() */

struct point {
	char name[FAILPOINT_NAME_MAX];
	int hit;
};

struct plist {
	struct point *v;
	size_t n;
};

enum job_role {
	ROLE_PLAIN,
	ROLE_DISCOVERY,
	ROLE_KILL1,  /* kill at a try-1 point: recovery-path discovery */
	ROLE_PAUSE1, /* pause at a try-1 point (resume next): B's points */
};

struct slot {
	struct explore_job job;
	struct fault *faults;
	char schedule[SCHEDULE_STR_MAX];
	enum job_role role;
	int x;              /* index of the try-1 point it faults */
	bool fed;
	struct plist try2;  /* what try 2 reached (KILL1, PAUSE1) */
};

struct explorer {
	const struct suite *s;
	const struct scenario *sc;
	struct slot *slots;
	size_t nslots;
	size_t handed;      /* slots handed out, in order */
	int operations;
	enum { ST_START, ST_TRY1, ST_LATE, ST_DONE } state;
	struct plist try1;
	char **unreached;   /* NULL-terminated */
	size_t nunreached;
	bool incomplete;
	uint64_t seed;
	bool every_kill;    /* retry wave after every try-1 kill */
	bool capped;        /* EXPLORE_SCHEDULES_MAX slots: no more jobs */
	unsigned bounds;    /* BOUND_* met so far */
	char bounded[512];  /* why less was planned than asked for; "" */
	int rc;             /* first allocation failure */
};

/* The bounds an exploration can meet (invariant 4), in the order
 * explorer_bounded() names them: the words depend only on which were
 * met, never on the order traces arrived in (invariant 1). */
enum {
	BOUND_NAMES_TRY1 = 1 << 0,
	BOUND_NAMES_TRY2 = 1 << 1,
	BOUND_HITS_TRY1 = 1 << 2,
	BOUND_HITS_TRY2 = 1 << 3,
	BOUND_SCHEDULES = 1 << 4,
};

static void note_bound(explorer *ex, unsigned bound)
{
	static const char *const words[] = {
		"op 1 try 1 reached more than " FC_STR(EXPLORE_NAMES_MAX)
		" distinct failpoint names (EXPLORE_NAMES_MAX): the others "
		"were not explored",
		"op 1 try 2 reached more than " FC_STR(EXPLORE_NAMES_MAX)
		" distinct failpoint names after a kill (EXPLORE_NAMES_MAX): "
		"the others were not explored",
		"op 1 try 1 reported more than " FC_STR(RECORD_HITS_KEPT)
		" failpoints (RECORD_HITS_KEPT): only the first were explored",
		"op 1 try 2 reported more than " FC_STR(RECORD_HITS_KEPT)
		" failpoints after a kill (RECORD_HITS_KEPT): only the first "
		"were explored",
		"exploration capped at " FC_STR(EXPLORE_SCHEDULES_MAX)
		" schedules (EXPLORE_SCHEDULES_MAX): the rest were not planned",
	};
	size_t used = 0;

	ex->bounds |= bound;
	ex->bounded[0] = '\0';
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if ((ex->bounds & (1u << i)) && used < sizeof(ex->bounded))
			used += (size_t)snprintf(ex->bounded + used,
						 sizeof(ex->bounded) - used,
						 "%s%s", used ? "; " : "",
						 words[i]);
}

/* --- jobs ---------------------------------------------------------------- */

static bool known(const explorer *ex, const char *s)
{
	for (size_t i = 0; i < ex->nslots; i++)
		if (strcmp(ex->slots[i].schedule, s) == 0)
			return true;
	return false;
}

/* Add a job; returns its slot index, or -1 when it is a duplicate, cannot
 * be written, or memory ran out (ex->rc). */
static int add_job(explorer *ex, const struct fault *f, size_t n,
		   const char *kind, bool strict, enum job_role role, int x)
{
	char s[SCHEDULE_STR_MAX];
	struct slot *sl;

	if (ex->capped)
		return -1;
	if (ex->nslots >= EXPLORE_SCHEDULES_MAX) {
		ex->capped = true;
		note_bound(ex, BOUND_SCHEDULES);
		return -1;
	}
	if (schedule_format(f, n, s, sizeof(s)) || known(ex, s))
		return -1;
	sl = RECORD_PUSH(ex->slots, ex->nslots);
	if (!sl) {
		ex->rc = FC_NOMEM;
		return -1;
	}
	sl->faults = malloc((n ? n : 1) * sizeof(*f));
	if (!sl->faults) {
		ex->nslots--;
		ex->rc = FC_NOMEM;
		return -1;
	}
	if (n)
		memcpy(sl->faults, f, n * sizeof(*f));
	memcpy(sl->schedule, s, sizeof(s));
	sl->role = role;
	sl->x = x;
	sl->job = (struct explore_job){
		.id = (int)ex->nslots - 1,
		.nfaults = n,
		.operations = ex->operations,
		.strict = strict,
		.wants_trace = role != ROLE_PLAIN,
		.kind = kind,
	};
	return (int)ex->nslots - 1;
}

static struct fault at_point(enum fault_action a, const struct point *p,
			     int attempt)
{
	struct fault f;

	memset(&f, 0, sizeof(f));
	f.action = a;
	f.attempt = attempt;
	f.hit = p->hit;
	f.operation = 1;
	f.resume = RESUME_AFTER_NEXT_ATTEMPT;
	snprintf(f.failpoint, sizeof(f.failpoint), "%s", p->name);
	return f;
}

/* --- traces --------------------------------------------------------------- */

static int plist_add(struct plist *l, const char *name, int hit)
{
	struct point *p = RECORD_PUSH(l->v, l->n);

	if (!p)
		return FC_NOMEM;
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->hit = hit;
	return 0;
}

/* Hits of each distinct name of one trace, the first EXPLORE_NAMES_MAX
 * names in the order reached. */
struct name_count {
	const char *name;
	int n;
};

/* The point (name, nth hit) of hit `name`, counted in c[0..*nc); false
 * when the name is past EXPLORE_NAMES_MAX. */
static bool count_hit(struct name_count *c, size_t *nc, const char *name,
		      int *nth)
{
	for (size_t i = 0; i < *nc; i++)
		if (strcmp(c[i].name, name) == 0) {
			*nth = ++c[i].n;
			return true;
		}
	if (*nc >= EXPLORE_NAMES_MAX)
		return false;
	c[*nc] = (struct name_count){ name, 1 };
	*nth = 1;
	++*nc;
	return true;
}

/* The points (name, nth hit) of op 1's try `k` in a trace, of its first
 * EXPLORE_NAMES_MAX names (invariant 4). */
static int points_of(explorer *ex, const struct explore_attempt *a, size_t n,
		     int k, struct plist *out)
{
	for (size_t i = 0; i < n; i++) {
		struct name_count c[EXPLORE_NAMES_MAX];
		size_t nc = 0, dropped = 0;

		if (a[i].operation != 1 || a[i].try_number != k)
			continue;
		for (size_t h = 0; h < a[i].nhits; h++) {
			int nth;
			if (!a[i].hits[h] || !count_hit(c, &nc, a[i].hits[h], &nth)) {
				dropped++;
				continue;
			}
			if (plist_add(out, a[i].hits[h], nth))
				return FC_NOMEM;
		}
		if (dropped)
			note_bound(ex, k == 1 ? BOUND_NAMES_TRY1 : BOUND_NAMES_TRY2);
		if (a[i].hits_total > a[i].nhits)
			note_bound(ex, k == 1 ? BOUND_HITS_TRY1 : BOUND_HITS_TRY2);
		break;
	}
	return 0;
}

static bool wanted(const explorer *ex, const char *name)
{
	const struct explore_spec *e = ex->sc->explore;

	if (e->failpoints_all || !e->failpoints)
		return true;
	for (char **f = e->failpoints; *f; f++)
		if (strcmp(*f, name) == 0)
			return true;
	return false;
}

static bool same_names(const struct plist *a, const struct plist *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i].name, b->v[i].name) != 0 ||
		    a->v[i].hit != b->v[i].hit)
			return false;
	return true;
}

/* --- waves -------------------------------------------------------------------- */

/* The process faults first: random schedules draw from those three unless
 * the scenario asks for power_loss, so older seeds keep their schedules. */
static const enum fault_action point_actions[] = { FAULT_KILL, FAULT_PAUSE,
						   FAULT_FAIL, FAULT_POWER_LOSS };
#define NPOINT_ACTIONS (sizeof(point_actions) / sizeof(point_actions[0]))

static void note_unreached(explorer *ex)
{
	const struct explore_spec *e = ex->sc->explore;

	if (e->failpoints_all || !e->failpoints)
		return;
	for (char **f = e->failpoints; *f; f++) {
		bool hit = false;
		for (size_t i = 0; i < ex->try1.n; i++)
			hit |= strcmp(ex->try1.v[i].name, *f) == 0;
		if (hit)
			continue;
		char **nu = realloc(ex->unreached,
				    (ex->nunreached + 2) * sizeof(*nu));
		if (!nu || !(nu[ex->nunreached] = strdup(*f))) {
			if (nu)
				ex->unreached = nu;
			ex->rc = FC_NOMEM;
			return;
		}
		ex->unreached = nu;
		nu[++ex->nunreached] = NULL;
	}
}

/* Exhaustive exploration, unless the scenario asks for interleavings or
 * random schedules: then only what those need is run. */
static bool exhaustive(const explorer *ex)
{
	const struct explore_spec *e = ex->sc->explore;

	return !e->interleavings && !e->random_schedules;
}

/*
 * Try-1 points.  Exhaustive: every point x action.  Kills want traces
 * (they discover the recovery path) and run whenever retry or random
 * waves need them; pauses (resume next) want traces for interleavings.
 */
static void wave_try1(explorer *ex)
{
	const struct explore_spec *e = ex->sc->explore;
	bool all = exhaustive(ex);

	note_unreached(ex);
	for (size_t x = 0; x < ex->try1.n; x++) {
		const struct point *p = &ex->try1.v[x];
		if (!wanted(ex, p->name))
			continue;
		for (size_t a = 0; a < NPOINT_ACTIONS; a++) {
			enum fault_action act = point_actions[a];
			struct fault f = at_point(act, p, 1);
			enum job_role role = ROLE_PLAIN;
			if (act == FAULT_KILL && (all || e->random_schedules))
				role = ROLE_KILL1;
			else if (act == FAULT_PAUSE && e->interleavings)
				role = ROLE_PAUSE1;
			else if (!all || !(e->actions & FAULT_BIT(act)))
				continue;
			add_job(ex, &f, 1, role == ROLE_PAUSE1 ? "interleave" :
				"try1", true, role, (int)x);
		}
	}
	/* power lost once try 1 ended (it succeeded: the discovery run
	 * showed it): what the route promised by exiting 0 must survive */
	if (all && (e->actions & FAULT_BIT(FAULT_POWER_LOSS))) {
		struct fault f = { .action = FAULT_POWER_LOSS, .after_attempt = 1,
				   .operation = 1 };
		add_job(ex, &f, 1, "try1", true, ROLE_PLAIN, -1);
	}
}

/* add_job() may move ex->slots: the waves below copy what they need from
 * a slot (its fault, its try-2 list, whose array does not move) first. */
static void wave_retry(explorer *ex)
{
	const struct explore_spec *e = ex->sc->explore;
	size_t n = ex->nslots;

	for (size_t i = 0; i < n; i++) {
		struct fault kill;
		struct plist t2;
		bool seen = false;

		if (ex->slots[i].role != ROLE_KILL1 || !ex->slots[i].fed)
			continue;
		kill = ex->slots[i].faults[0];
		t2 = ex->slots[i].try2;
		/* one X per distinct recovery path, unless equal states are
		 * judged once downstream (explorer_retry_every_kill()) */
		for (size_t j = 0; j < i && !seen && !ex->every_kill; j++)
			seen = ex->slots[j].role == ROLE_KILL1 && ex->slots[j].fed &&
			       same_names(&ex->slots[j].try2, &t2);
		if (seen)
			continue;
		for (size_t y = 0; y < t2.n; y++) {
			if (!wanted(ex, t2.v[y].name))
				continue;
			for (size_t a = 0; a < NPOINT_ACTIONS; a++) {
				struct fault f[2];
				if (!(e->actions & FAULT_BIT(point_actions[a])))
					continue;
				f[0] = kill;
				f[1] = at_point(point_actions[a], &t2.v[y], 2);
				add_job(ex, f, 2, "retry", true, ROLE_PLAIN, -1);
			}
		}
	}
}

static void wave_interleave(explorer *ex)
{
	size_t n = ex->nslots;

	for (size_t i = 0; i < n; i++) {
		struct fault pause;
		struct plist t2;

		if (ex->slots[i].role != ROLE_PAUSE1 || !ex->slots[i].fed)
			continue;
		pause = ex->slots[i].faults[0];
		t2 = ex->slots[i].try2;
		for (size_t y = 0; y < t2.n; y++) {
			struct fault f = pause;
			if (t2.v[y].hit != 1 || !wanted(ex, t2.v[y].name))
				continue; /* B reaching Y: its first hit */
			f.resume = RESUME_AT_NEXT_FAILPOINT;
			snprintf(f.resume_at, sizeof(f.resume_at), "%s",
				 t2.v[y].name);
			add_job(ex, &f, 1, "interleave", true, ROLE_PLAIN, -1);
		}
	}
}

static uint64_t next_rand(uint64_t *s)
{
	/* splitmix64: a fixed, portable sequence for a given seed */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The points try `k` may reach after the faults drawn so far. */
static const struct plist *random_candidates(const explorer *ex, int k,
					     const struct fault *prev,
					     struct plist *all2)
{
	if (k == 1)
		return &ex->try1;
	if (k == 2 && prev->action == FAULT_KILL) {
		for (size_t i = 0; i < ex->nslots; i++) {
			const struct slot *sl = &ex->slots[i];
			if (sl->role == ROLE_KILL1 && sl->fed &&
			    strcmp(sl->faults[0].failpoint, prev->failpoint) == 0 &&
			    sl->faults[0].hit == prev->hit)
				return &sl->try2;
		}
	}
	return all2;
}

/* A random point of c that the scenario wants, or NULL. */
static const struct point *pick_wanted(const explorer *ex,
				       const struct plist *c, uint64_t *st)
{
	size_t n = 0, k;

	for (size_t i = 0; i < c->n; i++)
		n += wanted(ex, c->v[i].name);
	if (!n)
		return NULL;
	k = next_rand(st) % n;
	for (size_t i = 0; i < c->n; i++)
		if (wanted(ex, c->v[i].name) && k-- == 0)
			return &c->v[i];
	return NULL;
}

static void wave_random(explorer *ex)
{
	const struct explore_spec *e = ex->sc->explore;
	int tries = ex->s->orchestrator.retries + 1;
	int maxf = e->max_faults < tries - 1 ? e->max_faults : tries - 1;
	uint64_t st = ex->seed;
	uint64_t nact = e->actions & FAULT_BIT(FAULT_POWER_LOSS) ? 4 : 3;
	struct plist all2 = { NULL, 0 };
	enum fault_action ending[2];
	size_t nending = 0;

	if (maxf > EXPLORE_RANDOM_FAULTS)
		maxf = EXPLORE_RANDOM_FAULTS;
	if (maxf < 1)
		return;
	for (const char *c = ex->sc->name; *c; c++)
		st = st * 1099511628211ULL ^ (unsigned char)*c;
	for (size_t i = 0; i < ex->nslots; i++)
		if (ex->slots[i].role == ROLE_KILL1 && ex->slots[i].fed)
			for (size_t y = 0; y < ex->slots[i].try2.n; y++)
				if (plist_add(&all2, ex->slots[i].try2.v[y].name,
					      ex->slots[i].try2.v[y].hit))
					ex->rc = FC_NOMEM;
	/* faults before the last must end their try so later ones can fire */
	if (e->actions & FAULT_BIT(FAULT_KILL))
		ending[nending++] = FAULT_KILL;
	if (e->actions & FAULT_BIT(FAULT_PAUSE))
		ending[nending++] = FAULT_PAUSE;
	if (!nending)
		ending[nending++] = FAULT_KILL;
	for (int n = 0; n < e->random_schedules && !ex->rc; n++) {
		for (int draw = 0; draw < EXPLORE_RANDOM_TRIES; draw++) {
			struct fault f[2 * EXPLORE_RANDOM_FAULTS];
			size_t nf = 0, last = 0;
			int want = 1 + (int)(next_rand(&st) % (uint64_t)maxf);
			for (int k = 1; k <= want; k++) {
				const struct plist *c = random_candidates(
					ex, k, nf ? &f[last] : NULL, &all2);
				const struct point *pt = pick_wanted(ex, c, &st);
				enum fault_action act;
				if (!pt)
					break;
				if (k < want) {
					act = ending[next_rand(&st) % nending];
				} else {
					do
						act = point_actions[next_rand(&st) % nact];
					while (!(e->actions & FAULT_BIT(act)));
				}
				last = nf;
				f[nf++] = at_point(act, pt, k);
				if (k < want && next_rand(&st) % 4 == 0) {
					memset(&f[nf], 0, sizeof(f[nf]));
					f[nf].action = next_rand(&st) % 2 ?
						FAULT_LOSE_XCOM : FAULT_LOSE_POD;
					f[nf].after_attempt = k;
					f[nf].operation = 1;
					nf++;
				}
			}
			if (nf && add_job(ex, f, nf, "random", false, ROLE_PLAIN,
					  -1) >= 0)
				break;
		}
	}
	free(all2.v);
}

/* Every discovered occurrence x action of a syscall exploration. */
static void wave_syscalls(explorer *ex, const struct explore_attempt *a,
			  size_t n)
{
	const struct explore_spec *e = ex->sc->explore;
	size_t found = 0;

	for (size_t i = 0; i < n; i++) {
		if (a[i].operation != 1 || a[i].try_number != 1)
			continue;
		for (size_t k = 0; k < a[i].nsyscalls && !ex->rc; k++) {
			const struct explore_syscall *sy = &a[i].syscalls[k];
			bool after = false;

			inject_seccomp_syscall_info(sy->syscall, &after);
			for (unsigned long occ = 1; occ <= sy->count; occ++)
				for (char **act = e->sys_actions; *act; act++) {
					struct fault f = { .action = FAULT_SYSCALL,
							   .attempt = 1,
							   .operation = 1 };
					char why[256];
					if (!after && strcmp(*act, "kill_after") == 0)
						continue;
					if (schedule_rule_make(f.rule, sizeof(f.rule),
							       sy->syscall, occ, *act,
							       sy->path, why,
							       sizeof(why)) == 0 &&
					    add_job(ex, &f, 1, "syscall", true,
						    ROLE_PLAIN, -1) >= 0)
						found++;
				}
		}
	}
	if (!found)
		ex->incomplete = true; /* nothing in scope was ever called */
	ex->state = ST_DONE;
}

/* Every COMMIT x action of a proxy exploration (op 1 try 1's count). */
static void wave_proxy(explorer *ex, const struct explore_attempt *a,
		       size_t n)
{
	static const enum fault_action actions[] = { FAULT_CUT_AFTER_COMMIT,
						     FAULT_HOLD_COMMIT };
	const struct explore_spec *e = ex->sc->explore;
	unsigned long commits = 0;

	for (size_t i = 0; i < n; i++)
		if (a[i].operation == 1 && a[i].try_number == 1)
			commits = a[i].commits;
	if (commits > EXPLORE_PROXY_HITS)
		commits = EXPLORE_PROXY_HITS; /* a hit the string form can say */
	for (unsigned long hit = 1; hit <= commits && !ex->rc; hit++)
		for (size_t k = 0; k < 2; k++) {
			struct fault f = { .action = actions[k], .attempt = 1,
					   .hit = (int)hit, .operation = 1 };

			if (!(e->proxy_actions & FAULT_BIT(actions[k])))
				continue;
			snprintf(f.proxy, sizeof(f.proxy), "%s", e->proxy);
			add_job(ex, &f, 1, "proxy", true, ROLE_PLAIN, -1);
		}
	if (!commits)
		ex->incomplete = true; /* the route committed nothing there */
	ex->state = ST_DONE;
}

/* --- the public face ------------------------------------------------------------ */

static int init(const struct suite *s, const struct scenario *sc,
		explorer **out, char *err, size_t errlen)
{
	explorer *ex = calloc(1, sizeof(*ex));

	*out = NULL;
	if (!ex) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	ex->s = s;
	ex->sc = sc;
	ex->operations = sc->operations ? sc->operations : (sc->explore ? 1 : 0);
	*out = ex;
	return 0;
}

int explorer_new(const struct suite *s, const struct scenario *sc,
		 const uint64_t *seed, explorer **out, char *err, size_t errlen)
{
	explorer *ex;
	int rc = init(s, sc, &ex, err, errlen);

	if (rc)
		return rc;
	if (!sc->explore) {
		if (add_job(ex, sc->faults, sc->nfaults, "fixed", true,
			    ROLE_PLAIN, -1) < 0) {
			snprintf(err, errlen, "scenario '%s': cannot write its "
				 "schedule", sc->name);
			explorer_free(ex);
			return FC_USAGE;
		}
		ex->state = ST_DONE;
	} else {
		ex->seed = seed ? *seed : sc->explore->random_seed;
		add_job(ex, NULL, 0, "discovery", true, ROLE_DISCOVERY, -1);
		ex->state = ST_START;
	}
	if (ex->rc) {
		explorer_free(ex);
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	*out = ex;
	return 0;
}

bool explorer_has_retry_wave(const explorer *ex)
{
	const struct explore_spec *e = ex->sc->explore;

	return e && !e->syscalls && !e->proxy[0] && exhaustive(ex);
}

void explorer_retry_every_kill(explorer *ex)
{
	ex->every_kill = true;
}

int explorer_new_replay(const struct suite *s, const struct scenario *sc,
			const char *schedule, explorer **out, char *err,
			size_t errlen)
{
	struct fault *f = NULL;
	size_t n = 0;
	explorer *ex;
	int rc = schedule_parse(schedule, &f, &n, err, errlen);

	if (rc)
		return rc;
	rc = init(s, sc, &ex, err, errlen);
	if (!rc && add_job(ex, f, n, "replay", true, ROLE_PLAIN, -1) < 0) {
		snprintf(err, errlen, "cannot replay schedule '%s'", schedule);
		explorer_free(ex);
		rc = FC_USAGE;
	}
	free(f);
	if (rc)
		return rc;
	ex->state = ST_DONE;
	*out = ex;
	return 0;
}

void explorer_free(explorer *ex)
{
	if (!ex)
		return;
	for (size_t i = 0; i < ex->nslots; i++) {
		free(ex->slots[i].faults);
		free(ex->slots[i].try2.v);
	}
	free(ex->slots);
	free(ex->try1.v);
	for (size_t i = 0; i < ex->nunreached; i++)
		free(ex->unreached[i]);
	free(ex->unreached);
	free(ex);
}

static bool traces_pending(const explorer *ex)
{
	for (size_t i = 0; i < ex->nslots; i++)
		if (ex->slots[i].job.wants_trace && !ex->slots[i].fed)
			return true;
	return false;
}

/* Build the next wave when every trace the current one needs is in. */
static void advance(explorer *ex)
{
	if (traces_pending(ex))
		return;
	if (ex->state == ST_TRY1) {
		const struct explore_spec *e = ex->sc->explore;
		if (exhaustive(ex))
			wave_retry(ex);
		if (e->interleavings)
			wave_interleave(ex);
		if (e->random_schedules)
			wave_random(ex);
		ex->state = ST_LATE;
	} else if (ex->state == ST_LATE) {
		ex->state = ST_DONE;
	}
}

enum explore_next explorer_next(explorer *ex, const struct explore_job **job)
{
	if (ex->handed < ex->nslots) {
		struct slot *sl = &ex->slots[ex->handed++];
		sl->job.faults = sl->faults;
		sl->job.schedule = sl->schedule;
		*job = &sl->job;
		return EXPLORE_JOB;
	}
	advance(ex);
	if (ex->handed < ex->nslots)
		return explorer_next(ex, job);
	if (ex->state == ST_DONE || ex->rc)
		return EXPLORE_DONE;
	if (traces_pending(ex))
		return EXPLORE_WAIT;
	return EXPLORE_DONE;
}

int explorer_feed(explorer *ex, int id, const struct explore_attempt *a,
		  size_t n)
{
	struct slot *sl;
	int rc;

	if (id < 0 || (size_t)id >= ex->nslots || !ex->slots[id].job.wants_trace)
		return FC_USAGE;
	sl = &ex->slots[id];
	if (sl->fed)
		return 0;
	sl->fed = true;
	if (sl->role == ROLE_DISCOVERY && ex->sc->explore->syscalls) {
		wave_syscalls(ex, a, n);
		return ex->rc;
	}
	if (sl->role == ROLE_DISCOVERY && ex->sc->explore->proxy[0]) {
		wave_proxy(ex, a, n);
		return ex->rc;
	}
	if (sl->role == ROLE_DISCOVERY) {
		rc = points_of(ex, a, n, 1, &ex->try1);
		if (rc)
			return rc;
		ex->state = ST_TRY1;
		wave_try1(ex);
		if (!ex->try1.n)
			ex->incomplete = true; /* the route reports no failpoints */
		return ex->rc;
	}
	rc = points_of(ex, a, n, 2, &sl->try2);
	return rc ? rc : ex->rc;
}

void explorer_feed_failed(explorer *ex, int id)
{
	if (id < 0 || (size_t)id >= ex->nslots)
		return;
	ex->slots[id].fed = true;
	ex->incomplete = true;
	if (ex->slots[id].role == ROLE_DISCOVERY)
		ex->state = ST_DONE;
}

const char *const *explorer_unreached(const explorer *ex)
{
	static const char *const none[] = { NULL };

	return ex->unreached ? (const char *const *)ex->unreached : none;
}

bool explorer_incomplete(const explorer *ex)
{
	return ex->incomplete;
}

const char *explorer_bounded(const explorer *ex)
{
	return ex->bounded[0] ? ex->bounded : NULL;
}

size_t explorer_jobs(const explorer *ex)
{
	return ex->nslots;
}
