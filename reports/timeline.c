/*
 * timeline.c -- the SVG timeline of one schedule (timeline.h).
 *
 * Two passes: layout() turns the schedule object into a time scale and
 * lanes (with their duplicate / loss annotations and heights); the
 * draw_*() functions then place marks on those lanes, packing transition
 * labels greedily left to right as they go.  Everything is read through
 * rview's getters, so a report with missing or odd members still draws.
 *
 * Invariants:
 *  1. Every attempt of the schedule gets a lane (up to LANES_MAX; the SVG
 *     says how many were left out), in operation order, then start order.
 *  2. A journal transition is drawn on a lane of its own operation: the
 *     attempt alive at that time whose matching after_<state> hit is
 *     nearest, else the nearest attempt of the operation.
 *  3. The attempt blamed for duplicates is the one whose row_deltas show
 *     a row growing to two copies or more (first inserts, 0 -> 1, are only
 *     counted, in rows_added); the faults named are those applied
 *     to its operation (resumes aside) before that attempt ended.  How
 *     many rows it duplicated and added comes from the attempt's counts
 *     (row_deltas_duplicated, row_deltas_gained), which cover the rows a
 *     truncated row_deltas leaves out; a report older than them has its
 *     list complete, and the list is counted instead.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/protocol.h"
#include "journal/states.h"
#include "reports/rview.h"
#include "reports/timeline.h"

#define WIDTH 1080
#define X0 190.0           /* left end of the time axis */
#define X1 900.0           /* right end; the rest holds end labels */
#define AXIS_H 28.0
#define ORCH_H 30.0
#define LANE_H 56.0
#define NOTE_H 16.0        /* extra height of a lane with an annotation */
#define BAR_Y 32.0         /* bar top, relative to the lane */
#define BAR_H 12.0
#define LABEL_ROW1 12.0    /* baselines of the two state-label rows */
#define LABEL_ROW2 24.0
#define CHAR_W 5.5         /* 9px monospace advance */
#define LANES_MAX 64
#define DUP_KEYS_MAX 3     /* row keys named before "…" */

struct lane {
	const json_t *a;
	long long op, index;
	long long start, end;
	double y, h;
	double label_end[2];
	size_t dup, added;
	size_t dup_listed;     /* of dup, those row_deltas names */
	const char *dup_keys[DUP_KEYS_MAX];
	const char *dup_last;  /* the last one it names */
	char cause[200];       /* faults applied before the end, or "" */
	long long missing;     /* rows missing at the end (last lane of op) */
	const json_t *op_obj;
};

struct layout {
	const json_t *s;
	struct lane *lanes;
	size_t n, dropped;
	long long tmax;
	long long offset;
	bool have_offset, exact;
	bool orch;
	double height;
};

static double xt(const struct layout *L, long long t)
{
	if (t < 0)
		t = 0;
	if (t > L->tmax)
		t = L->tmax;
	return X0 + (X1 - X0) * (double)t / (double)L->tmax;
}

/* --- layout ---------------------------------------------------------------------- */

static int lane_cmp(const void *pa, const void *pb)
{
	const struct lane *a = pa, *b = pb;

	if (a->op != b->op)
		return a->op < b->op ? -1 : 1;
	return (a->index > b->index) - (a->index < b->index);
}

static long long max_time(const json_t *s)
{
	long long m = 1;
	json_t *a, *h, *ap;
	size_t i, k;

	json_array_foreach(rview_arr(s, "attempts"), i, a) {
		if (rview_int(a, "end_ms", 0) > m)
			m = rview_int(a, "end_ms", 0);
		json_array_foreach(rview_arr(a, "failpoints"), k, h)
			if (rview_int(h, "at_ms", 0) > m)
				m = rview_int(h, "at_ms", 0);
	}
	json_array_foreach(rview_arr(s, "applied"), i, ap)
		if (rview_int(ap, "at_ms", 0) > m)
			m = rview_int(ap, "at_ms", 0);
	return m + m / 40 + 1; /* a little room after the last event */
}

/* Does failpoint `fp` follow the journal entering `state`?  after_<state>
 * in lower case; PREPARING is entered by after_intent or after_restart. */
static bool hit_matches(const char *fp, const char *state)
{
	enum fc_state s;
	size_t i;

	if (state_parse(state, &s) == 0 && s == FC_PREPARING)
		return strcmp(fp, FP_AFTER_INTENT) == 0 ||
		       strcmp(fp, FP_AFTER_RESTART) == 0;
	if (strncmp(fp, FP_AFTER_PREFIX, strlen(FP_AFTER_PREFIX)) != 0)
		return false;
	fp += strlen(FP_AFTER_PREFIX);
	for (i = 0; state[i] && fp[i]; i++)
		if (fp[i] != (state[i] >= 'A' && state[i] <= 'Z' ?
			      state[i] - 'A' + 'a' : state[i]))
			return false;
	return !state[i] && !fp[i];
}

/*
 * The wall-clock time of the schedule's start.  Exact from wall_start_ms;
 * else every (transition, matching hit of its operation) pair votes for
 * at - hit_ms, and the value with most votes within 3 ms wins (the true
 * pairs agree, the accidental ones scatter).
 */
static int estimate_offset(struct layout *L)
{
	json_t *ops = rview_arr(L->s, "operations"), *op, *t, *a, *h;
	long long *cand = NULL;
	size_t n = 0, cap = 0, i, k, j, m;
	size_t best_votes = 0;

	if (json_is_integer(json_object_get(L->s, "wall_start_ms"))) {
		L->offset = rview_int(L->s, "wall_start_ms", 0);
		L->have_offset = L->exact = true;
		return 0;
	}
	json_array_foreach(ops, i, op) {
		long long opi = rview_int(op, "index", 0);
		json_array_foreach(rview_arr(op, "history"), k, t) {
			json_array_foreach(rview_arr(L->s, "attempts"), j, a) {
				if (rview_int(a, "operation", 0) != opi)
					continue;
				json_array_foreach(rview_arr(a, "failpoints"), m, h) {
					if (!hit_matches(rview_str(h, "name"),
							 rview_str(t, "to")))
						continue;
					if (n == cap) {
						size_t nc = cap ? 2 * cap : 64;
						long long *p = realloc(cand, nc * sizeof(*p));
						if (!p) {
							free(cand);
							return FC_NOMEM;
						}
						cand = p;
						cap = nc;
					}
					cand[n++] = rview_int(t, "at", 0) -
						    rview_int(h, "at_ms", 0);
				}
			}
		}
	}
	for (i = 0; i < n; i++) {
		size_t votes = 0;
		for (j = 0; j < n; j++)
			votes += llabs(cand[j] - cand[i]) <= 3;
		if (votes > best_votes ||
		    (votes == best_votes && cand[i] > L->offset)) {
			best_votes = votes;
			L->offset = cand[i];
		}
	}
	L->have_offset = n > 0;
	free(cand);
	return 0;
}

/* The lane a transition of operation op at time t is drawn on. */
static struct lane *lane_for(struct layout *L, long long op, long long t,
			     const char *state)
{
	struct lane *best = NULL;
	long long best_d = 0;

	for (size_t i = 0; i < L->n; i++) {
		struct lane *ln = &L->lanes[i];
		long long d;
		json_t *h;
		size_t k;

		if (ln->op != op)
			continue;
		d = t < ln->start ? ln->start - t : t > ln->end ? t - ln->end : 0;
		if (d == 0) {
			/* alive: prefer the one that reported this step */
			long long near = -1;
			json_array_foreach(rview_arr(ln->a, "failpoints"), k, h) {
				long long dh = llabs(rview_int(h, "at_ms", 0) - t);
				if (hit_matches(rview_str(h, "name"), state) &&
				    (near < 0 || dh < near))
					near = dh;
			}
			d = near < 0 ? 1 : -1000000 + near;
		}
		if (!best || d < best_d) {
			best = ln;
			best_d = d;
		}
	}
	return best;
}

static bool is_resume(const json_t *ap)
{
	return strncmp(rview_str(ap, "what"), "resumed", 7) == 0;
}

/* The faults of the lane's operation applied before it ended, oldest
 * first ("kill at after_target_commit#1 in try 1, lost XCom ..."). */
static void cause_of(const struct layout *L, struct lane *ln)
{
	json_t *ap;
	size_t i, n = 0;
	const char *last = "";

	json_array_foreach(rview_arr(L->s, "applied"), i, ap) {
		const char *what = rview_str(ap, "what");
		if (is_resume(ap) || rview_int(ap, "at_ms", 0) > ln->end ||
		    rview_int(ap, "operation", ln->op) != ln->op ||
		    strcmp(what, last) == 0)
			continue;
		n += snprintf(ln->cause + n, sizeof(ln->cause) - n, "%s%s",
			      n ? ", " : "", what);
		if (n >= sizeof(ln->cause))
			break;
		last = what;
	}
}

/* A count of the attempt's, never below 0; `listed` when the report is
 * older than the counts. */
static size_t attempt_count(const json_t *a, const char *key, long long listed)
{
	long long n = rview_int(a, key, listed);

	return n > 0 ? (size_t)n : 0;
}

static void blame(struct layout *L, struct lane *ln)
{
	json_t *d;
	size_t i;
	long long gained = 0;

	json_array_foreach(rview_arr(ln->a, "row_deltas"), i, d) {
		long long before = rview_int(d, "before", 0);
		long long after = rview_int(d, "after", 0);
		if (after > before)
			gained += after - before;
		if (after > before && after >= 2) {
			if (ln->dup_listed < DUP_KEYS_MAX)
				ln->dup_keys[ln->dup_listed] = rview_str(d, "row_key");
			ln->dup_last = rview_str(d, "row_key");
			ln->dup_listed++;
		}
	}
	ln->dup = attempt_count(ln->a, "row_deltas_duplicated",
				(long long)ln->dup_listed);
	if (ln->dup_listed > ln->dup)
		ln->dup_listed = ln->dup;
	ln->added = attempt_count(ln->a, "rows_added", 0) +
		    attempt_count(ln->a, "row_deltas_gained", gained);
	if (ln->dup)
		cause_of(L, ln);
}

static void mark_losses(struct layout *L)
{
	json_t *op;
	size_t i;

	json_array_foreach(rview_arr(L->s, "operations"), i, op) {
		long long miss = rview_int(json_object_get(op, "target"),
					   "rows_missing", 0);
		struct lane *last = NULL;
		for (size_t k = 0; k < L->n; k++)
			if (L->lanes[k].op == rview_int(op, "index", 0))
				last = &L->lanes[k];
		if (last && miss > 0) {
			last->missing = miss;
			last->op_obj = op;
		}
	}
}

static int layout(struct layout *L, const json_t *s)
{
	json_t *attempts = rview_arr(s, "attempts"), *a, *ap;
	size_t total = json_array_size(attempts), i;
	double y;
	int rc;

	memset(L, 0, sizeof(*L));
	L->s = s;
	L->tmax = max_time(s);
	L->n = total > LANES_MAX ? LANES_MAX : total;
	L->dropped = total - L->n;
	L->lanes = calloc(L->n ? L->n : 1, sizeof(*L->lanes));
	if (!L->lanes)
		return FC_NOMEM;
	json_array_foreach(attempts, i, a) {
		struct lane *ln;
		if (i >= L->n)
			break;
		ln = &L->lanes[i];
		ln->a = a;
		ln->op = rview_int(a, "operation", 0);
		ln->index = rview_int(a, "index", (long long)i + 1);
		ln->start = rview_int(a, "start_ms", 0);
		ln->end = rview_int(a, "end_ms", ln->start);
	}
	if (L->n > 1)
		qsort(L->lanes, L->n, sizeof(*L->lanes), lane_cmp);
	json_array_foreach(rview_arr(s, "applied"), i, ap)
		if (json_is_null(json_object_get(ap, "attempt")))
			L->orch = true;
	y = AXIS_H + (L->orch ? ORCH_H : 0);
	for (i = 0; i < L->n; i++) {
		struct lane *ln = &L->lanes[i];
		blame(L, ln);
	}
	mark_losses(L);
	for (i = 0; i < L->n; i++) {
		struct lane *ln = &L->lanes[i];
		ln->y = y;
		ln->h = LANE_H + (ln->dup || ln->missing ? NOTE_H : 0);
		ln->label_end[0] = ln->label_end[1] = 0;
		y += ln->h;
	}
	L->height = y + (L->dropped || !L->n ? 20 : 6);
	if (json_array_size(rview_arr(s, "operations")) &&
	    !json_is_integer(json_object_get(s, "wall_start_ms")))
		L->height += 14; /* room for the "estimated" note */
	rc = estimate_offset(L);
	if (rc)
		free(L->lanes);
	return rc;
}

/* --- drawing --------------------------------------------------------------------- */

static void text(FILE *out, double x, double y, const char *cls,
		 const char *anchor, const char *s)
{
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"%s\"%s%s%s>", x, y, cls,
		anchor ? " text-anchor=\"" : "", anchor ? anchor : "",
		anchor ? "\"" : "");
	rview_xml(out, s, false);
	fputs("</text>\n", out);
}

static void title(FILE *out, const char *s)
{
	fputs("<title>", out);
	rview_xml(out, s, false);
	fputs("</title>", out);
}

/* A tick step of 1, 2 or 5 x 10^k giving about eight ticks. */
static long long tick_step(long long tmax)
{
	long long step = 1;

	for (;;) {
		if (tmax / step <= 8)
			return step;
		if (tmax / (step * 2) <= 8)
			return step * 2;
		if (tmax / (step * 5) <= 8)
			return step * 5;
		step *= 10;
	}
}

static void draw_axis(FILE *out, const struct layout *L)
{
	long long step = tick_step(L->tmax);
	char buf[48];

	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		"class=\"axis\"/>\n", X0, AXIS_H - 8, X1, AXIS_H - 8);
	for (long long t = 0; t <= L->tmax; t += step) {
		double x = xt(L, t);
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"class=\"grid\"/>\n", x, AXIS_H - 8, x, L->height - 4);
		snprintf(buf, sizeof(buf), "%lld", t);
		text(out, x, AXIS_H - 12, "tick", "middle", buf);
	}
	text(out, X0 - 8, AXIS_H - 12, "tick", "end", "ms since start");
}

/* Fault symbols, centred on (x, y). */
static void sym_kill(FILE *out, double x, double y)
{
	fprintf(out, "<path d=\"M%.1f %.1fl10 10m0 -10l-10 10\" class=\"kill\"/>",
		x - 5, y - 5);
}

static void sym_pause(FILE *out, double x, double y)
{
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"3.5\" height=\"12\" "
		"class=\"pause\"/><rect x=\"%.1f\" y=\"%.1f\" width=\"3.5\" "
		"height=\"12\" class=\"pause\"/>", x - 5, y - 6, x + 1.5, y - 6);
}

static void sym_resume(FILE *out, double x, double y)
{
	fprintf(out, "<path d=\"M%.1f %.1fl10 6l-10 6z\" class=\"resume\"/>",
		x - 4, y - 6);
}

static void sym_fail(FILE *out, double x, double y)
{
	fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6.5\" class=\"fail\"/>"
		"<text x=\"%.1f\" y=\"%.1f\" class=\"failmark\" "
		"text-anchor=\"middle\">!</text>", x, y, x, y + 3.5);
}

/* Between-try faults: a labelled flag ("XCom lost", ...). */
static void sym_flag(FILE *out, double x, double y, const char *label)
{
	double w = strlen(label) * CHAR_W + 8;

	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		"class=\"flagpole\"/><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		"height=\"13\" rx=\"3\" class=\"flag\"/>", x, y - 8, x, y + 8, x,
		y - 8, w);
	text(out, x + 4, y + 2, "flagtext", NULL, label);
}

static void draw_fault(FILE *out, const json_t *ap, double x, double y)
{
	const char *f = rview_str(ap, "fault");
	const char *what = rview_str(ap, "what");

	fputs("<g class=\"fault\">", out);
	title(out, what);
	if (is_resume(ap))
		sym_resume(out, x, y);
	else if (f[0] == 'k')
		sym_kill(out, x, y);
	else if (f[0] == 'p')
		sym_pause(out, x, y);
	else if (f[0] == 'f')
		sym_fail(out, x, y);
	else if (f[0] == 'x')
		sym_flag(out, x, y, "XCom lost");
	else if (f[0] == 'l')
		sym_flag(out, x, y, "pod lost");
	else if (f[0] == 's')
		sym_flag(out, x, y, "source changed");
	else if (f[0] == 'o')
		sym_flag(out, x, y, strstr(what, " refused ") ?
			 "operator refused" : "operator recover");
	else
		sym_flag(out, x, y, what);
	fputs("</g>\n", out);
}

static void draw_orchestrator(FILE *out, const struct layout *L)
{
	double y = AXIS_H + ORCH_H / 2;
	double last_x = -100;
	json_t *ap;
	size_t i;

	if (!L->orch)
		return;
	text(out, 8, y + 4, "lanelabel", NULL, "orchestrator");
	json_array_foreach(rview_arr(L->s, "applied"), i, ap) {
		double x;
		if (!json_is_null(json_object_get(ap, "attempt")))
			continue;
		x = xt(L, rview_int(ap, "at_ms", 0));
		/* the same fault applied to every operation at once: draw once */
		if (x - last_x < 2)
			continue;
		draw_fault(out, ap, x, y);
		last_x = x;
	}
}

static void draw_pause_spans(FILE *out, const struct layout *L,
			     const struct lane *ln, int id)
{
	json_t *ap;
	size_t i;
	long long paused = -1;

	json_array_foreach(rview_arr(L->s, "applied"), i, ap) {
		if (rview_int(ap, "attempt", -1) != ln->index)
			continue;
		if (rview_str(ap, "fault")[0] == 'p' && !is_resume(ap)) {
			paused = rview_int(ap, "at_ms", 0);
		} else if (is_resume(ap) && paused >= 0) {
			double x = xt(L, paused);
			fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				"height=\"%.1f\" fill=\"url(#hatch-%d)\"/>\n", x,
				ln->y + BAR_Y, xt(L, rview_int(ap, "at_ms", 0)) - x,
				BAR_H, id);
			paused = -1;
		}
	}
	if (paused >= 0 && paused < ln->end)
		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			"height=\"%.1f\" fill=\"url(#hatch-%d)\"/>\n", xt(L, paused),
			ln->y + BAR_Y, xt(L, ln->end) - xt(L, paused), BAR_H, id);
}

static void draw_hits(FILE *out, const struct layout *L, const struct lane *ln)
{
	json_t *h;
	size_t i;
	char tip[160];

	json_array_foreach(rview_arr(ln->a, "failpoints"), i, h) {
		double x = xt(L, rview_int(h, "at_ms", 0));
		snprintf(tip, sizeof(tip), "%s at %lld ms (answer %s)",
			 rview_str(h, "name"), rview_int(h, "at_ms", 0),
			 rview_str(h, "answer"));
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"class=\"hit\">", x, ln->y + BAR_Y - 3, x,
			ln->y + BAR_Y + BAR_H + 3);
		title(out, tip);
		fputs("</line>\n", out);
	}
}

static const char *state_class(const char *state)
{
	static const char *const cls[FC_STATE_COUNT] = {
		[FC_PREPARING] = "st-prep",
		[FC_PREPARED] = "st-prep",
		[FC_COMMITTING] = "st-commit",
		[FC_COMMIT_UNKNOWN] = "st-unknown",
		[FC_TARGET_COMMITTED] = "st-tc",
		[FC_COMMITTED_INCOMPLETE] = "st-unknown",
		[FC_COMPLETE] = "st-complete",
		[FC_FAILED_PRE_COMMIT] = "st-failed",
	};
	enum fc_state s;

	if (state_parse(state, &s) != 0 || !cls[s])
		return "st-prep";
	return cls[s];
}

/* A transition: a dot on the bar's top edge and a label in the row where
 * it lands closest to its time, joined by a leader when pushed right. */
static void draw_transition(FILE *out, const struct layout *L,
			    struct lane *ln, const json_t *t)
{
	const char *state = rview_str(t, "to");
	long long at = rview_int(t, "at", 0) - L->offset;
	double x = xt(L, at), w = strlen(state) * CHAR_W;
	double lx0 = ln->label_end[0] > x ? ln->label_end[0] : x;
	double lx1 = ln->label_end[1] > x ? ln->label_end[1] : x;
	int row = lx1 < lx0 ? 1 : 0;
	double lx = row ? lx1 : lx0;
	double ly = ln->y + (row ? LABEL_ROW2 : LABEL_ROW1);
	char tip[200];

	if (lx + w > WIDTH - 4) /* pushed off the edge: overlap rather than clip */
		lx = WIDTH - 4 - w;
	snprintf(tip, sizeof(tip), "journal v%lld: %s -> %s (epoch %lld) at "
		 "%lld ms%s", rview_int(t, "version", 0), rview_str(t, "from"),
		 state, rview_int(t, "epoch", 0), at,
		 L->exact ? "" : " (time estimated)");
	fprintf(out, "<g class=\"tr\" data-attempt=\"%lld\">", ln->index);
	title(out, tip);
	if (lx - x > 2)
		fprintf(out, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1f\" "
			"class=\"leader\"/>", x, ln->y + BAR_Y - 1, x,
			ly + 2, lx, ly + 2);
	fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.2\" class=\"%s\"/>",
		x, ln->y + BAR_Y - 1, state_class(state));
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"state %s\">", lx + 1,
		ly, state_class(state));
	rview_xml(out, state, false);
	fputs("</text></g>\n", out);
	ln->label_end[row] = lx + w + 6;
}

static void draw_transitions(FILE *out, struct layout *L)
{
	json_t *op, *t;
	size_t i, k;

	if (!L->have_offset)
		return;
	json_array_foreach(rview_arr(L->s, "operations"), i, op) {
		long long opi = rview_int(op, "index", 0);
		json_array_foreach(rview_arr(op, "history"), k, t) {
			long long at = rview_int(t, "at", 0) - L->offset;
			struct lane *ln = lane_for(L, opi, at, rview_str(t, "to"));
			if (ln)
				draw_transition(out, L, ln, t);
		}
	}
}

static void lane_label(FILE *out, const struct lane *ln)
{
	char buf[192], left[48] = "";
	const json_t *a = ln->a;
	long long killed = rview_int(a, "descendants_killed", 0);

	snprintf(buf, sizeof(buf), "op %lld · try %lld", ln->op,
		 rview_int(a, "try", 0));
	text(out, 8, ln->y + BAR_Y + 4, "lanelabel", NULL, buf);
	if (killed > 0)
		snprintf(left, sizeof(left), " · %lld left running, killed",
			 killed);
	snprintf(buf, sizeof(buf), "attempt %lld · pid %lld%s%s%s%s", ln->index,
		 rview_int(a, "pid", 0),
		 json_is_true(json_object_get(a, "zombie")) ? " · zombie" : "",
		 json_is_true(json_object_get(a, "timed_out")) ? " · timeout" : "",
		 rview_int(a, "concurrent", 0) > 0 ? " · concurrent" : "", left);
	text(out, 8, ln->y + BAR_Y + 17, "lanesub", NULL, buf);
}

static void end_label(FILE *out, const struct layout *L, const struct lane *ln)
{
	char buf[96];
	const char *end = rview_str(ln->a, "end");
	bool bad = json_is_true(json_object_get(ln->a, "killed")) ||
		   !json_is_integer(json_object_get(ln->a, "exit")) ||
		   rview_int(ln->a, "exit", 0) != 0;

	if (ln->added)
		snprintf(buf, sizeof(buf), "%s · +%zu rows", *end ? end : "?",
			 ln->added);
	else
		snprintf(buf, sizeof(buf), "%s", *end ? end : "?");
	text(out, xt(L, ln->end) + 6, ln->y + BAR_Y + BAR_H - 2,
	     bad ? "endlabel bad" : "endlabel", NULL, buf);
}

static void note_line(FILE *out, const struct lane *ln)
{
	char buf[600];
	size_t k = 0;
	int n;

	if (ln->dup) {
		n = snprintf(buf, sizeof(buf), "+%zu duplicate row%s: ", ln->dup,
			     ln->dup == 1 ? "" : "s");
		for (k = 0; k < ln->dup_listed && k < DUP_KEYS_MAX &&
			    n < (int)sizeof(buf); k++)
			n += snprintf(buf + n, sizeof(buf) - n, "%s%s", k ? ", " : "",
				      ln->dup_keys[k]);
		/* the last one only when the list names them all */
		if (ln->dup > DUP_KEYS_MAX && ln->dup_listed == ln->dup &&
		    n < (int)sizeof(buf))
			n += snprintf(buf + n, sizeof(buf) - n, " … %s", ln->dup_last);
		else if (ln->dup > k && n < (int)sizeof(buf))
			n += snprintf(buf + n, sizeof(buf) - n, "%s…",
				      k ? " " : "");
		if (ln->cause[0] && n < (int)sizeof(buf))
			snprintf(buf + n, sizeof(buf) - n, " — after %s", ln->cause);
	} else {
		json_t *j = json_object_get(ln->op_obj, "journal");
		snprintf(buf, sizeof(buf), "−%lld row%s missing at the end "
			 "(journal %s, task %s)", ln->missing,
			 ln->missing == 1 ? "" : "s",
			 json_is_object(j) ? rview_str(j, "state") : "empty",
			 rview_str(ln->op_obj, "task"));
	}
	text(out, X0, ln->y + BAR_Y + BAR_H + 15, "note", NULL, buf);
}

static void draw_lane(FILE *out, const struct layout *L, struct lane *ln,
		      size_t i, int id)
{
	double xs = xt(L, ln->start), xe = xt(L, ln->end);
	json_t *ap;
	size_t k;

	fprintf(out, "<g class=\"lane\" data-attempt=\"%lld\">\n", ln->index);
	if (ln->dup || ln->missing)
		fprintf(out, "<rect x=\"2\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
			"rx=\"4\" class=\"%s\"/>\n", ln->y + 2, WIDTH - 4,
			ln->h - 4, ln->dup ? "dupband" : "lossband");
	else if (ln->op % 2 == 0)
		fprintf(out, "<rect x=\"2\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
			"class=\"opband\"/>\n", ln->y, WIDTH - 4, ln->h);
	if (i > 0 && L->lanes[i - 1].op != ln->op)
		fprintf(out, "<line x1=\"0\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
			"class=\"opsep\"/>\n", ln->y, WIDTH, ln->y);
	lane_label(out, ln);
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		"rx=\"2\" class=\"bar%s\"/>\n", xs, ln->y + BAR_Y,
		xe - xs < 1.5 ? 1.5 : xe - xs, BAR_H,
		json_is_true(json_object_get(ln->a, "zombie")) ? " zombie" : "");
	draw_pause_spans(out, L, ln, id);
	draw_hits(out, L, ln);
	json_array_foreach(rview_arr(L->s, "applied"), k, ap)
		if (rview_int(ap, "attempt", -1) == ln->index)
			draw_fault(out, ap, xt(L, rview_int(ap, "at_ms", 0)),
				   ln->y + BAR_Y + BAR_H / 2);
	end_label(out, L, ln);
	if (ln->dup || ln->missing)
		note_line(out, ln);
	fputs("</g>\n", out);
}

int timeline_svg(FILE *out, const json_t *schedule, int id)
{
	struct layout L;
	char buf[160];
	int rc = layout(&L, schedule);

	if (rc)
		return rc;
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"tl\" "
		"width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" role=\"img\" "
		"aria-label=\"", WIDTH, L.height, WIDTH, L.height);
	rview_xml(out, rview_str(schedule, "scenario"), true);
	fputs(" ", out);
	rview_xml(out, rview_str(schedule, "schedule"), true);
	fprintf(out, "\">\n<defs><pattern id=\"hatch-%d\" width=\"6\" height=\"6\" "
		"patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
		"<rect width=\"6\" height=\"6\" class=\"hatchbg\"/>"
		"<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" class=\"hatchline\"/>"
		"</pattern></defs>\n", id);
	draw_axis(out, &L);
	draw_orchestrator(out, &L);
	for (size_t i = 0; i < L.n; i++)
		draw_lane(out, &L, &L.lanes[i], i, id);
	draw_transitions(out, &L);
	if (L.dropped) {
		snprintf(buf, sizeof(buf), "%zu more attempts not drawn", L.dropped);
		text(out, X0, L.height - 6, "lanesub", NULL, buf);
	} else if (!L.n) {
		text(out, X0, L.height - 6, "lanesub", NULL,
		     "no attempt was started");
	}
	if (L.have_offset && !L.exact)
		text(out, WIDTH - 6, L.height - 5, "tick", "end",
		     "journal times estimated from failpoint hits");
	fputs("</svg>\n", out);
	free(L.lanes);
	return ferror(out) ? FC_IO : 0;
}
