/*
 * recover_facts.c -- the facts every subcommand of the recovery tool
 * decides on (recover_impl.h), the output they share, and recover__run(),
 * which gives each call of recover_tool.h its context and releases it.
 *
 * Invariants:
 *  1. Gathering writes nothing: inspect, plan and list open the journal
 *     read-only (journal_open_readonly(): no schema created, no pragma,
 *     a read-only PostgreSQL session), apply opens it read-write but only
 *     reads while gathering; a sqlite: journal that does not exist is
 *     NOT_FOUND instead of being created; and the fence is only probed,
 *     hands off (fence_hands_off(): a pending transaction is left for
 *     the operator; a probe opens the SQLite target read-only).  tests/integration/
 *     recover.sh compares the bytes before and after inspect and plan.
 *  2. An unreachable target is a fact (answer UNKNOWN, with the reason),
 *     not a failure: the operator still needs to see the journal.
 *  3. Nothing printed carries a URL password (journal_redact_url()), row
 *     values or SQL: only ids, states, epochs, counts and the fence's
 *     own error message.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

#include "common/clock.h"
#include "journal/journal_json.h"
#include "common/cli.h"
#include "recover/recover_impl.h"

/* ---- small helpers ---------------------------------------------------- */

void recover__warn(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fencecert: warning: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* "2026-11-01T12:00:00.000Z", or "-" for 0. */
const char *recover__fmt_time(long long ms, char *buf, size_t len)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	char base[32];

	if (ms <= 0 || !gmtime_r(&secs, &tm) ||
	    !strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%s.%03lldZ", base, ms % 1000);
	return buf;
}

/* "3d4h", "2m10s", "850ms": an age or a remaining time for a person. */
const char *recover__fmt_span(long long ms, char *buf, size_t len)
{
	long long s = ms / 1000;

	if (ms < 0)
		ms = s = 0;
	if (ms < 1000)
		snprintf(buf, len, "%lldms", ms);
	else if (s < 3600)
		snprintf(buf, len, "%lldm%llds", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%lldh%lldm", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, len, "%lldd%lldh", s / 86400, s % 86400 / 3600);
	return buf;
}

int recover__print_json(json_t *v)
{
	int rc;

	if (!v)
		return cli_fail(FC_NOMEM, "out of memory building JSON output");
	rc = json_dumpf(v, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(v);
	if (rc == 0 && putchar('\n') != EOF && fflush(stdout) == 0)
		return 0;
	return cli_fail(FC_IO, "cannot write to standard output");
}

int recover__flush_text(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	return cli_fail(FC_IO, "cannot write to standard output");
}

json_t *recover__str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

static json_t *int_or_null(long long v)
{
	return v > 0 ? json_integer(v) : json_null();
}

bool recover__lease_live(const struct journal_entry *e, long long now)
{
	return e->lease_owner[0] && e->lease_expires_at > now;
}

/* ---- gathering the facts ---------------------------------------------- */

/*
 * Opening a sqlite: journal creates the file when it is missing; a
 * command that only reads must not leave an empty journal behind a typo.
 */
static int journal_must_exist(const char *url)
{
	char path[4096];
	const char *p;
	struct stat st;
	size_t n;

	if (strncmp(url, "sqlite:", 7) != 0)
		return 0;
	p = url + 7;
	if (strncmp(p, "//", 2) == 0)
		p += 2;
	n = strcspn(p, "?");
	if (n == 0 || n >= sizeof(path))
		return 0; /* journal_open() explains a malformed URL */
	memcpy(path, p, n);
	path[n] = '\0';
	if (stat(path, &st) == 0 || errno != ENOENT)
		return 0;
	return cli_fail(FC_NOT_FOUND, "journal '%s' does not exist", path);
}

int recover__open_journal(struct recover_ctx *c)
{
	char err[512];
	int rc;

	journal_redact_url(c->r->journal_url, c->journal_shown,
			   sizeof(c->journal_shown));
	if ((rc = journal_must_exist(c->r->journal_url)))
		return rc;
	rc = (c->writes ? journal_open : journal_open_readonly)(
		c->r->journal_url, &c->j, err, sizeof(err));
	return rc ? cli_fail(rc, "%s", err) : 0;
}

static int load_entry(struct recover_ctx *c)
{
	int rc = journal_get(c->j, c->r->op, &c->e);

	if (rc == FC_NOT_FOUND)
		return cli_fail(rc, "no operation '%s' in journal '%s'",
				c->r->op, c->journal_shown);
	return rc ? cli_fail(rc, "%s", journal_errmsg(c->j)) : 0;
}

/*
 * Is a prepared (in-doubt) transaction of op pending?  Only a fence with
 * FENCE_HAS_IN_DOUBT can hold one (pg-2pc makes them); any other target
 * holds none.  A target that cannot say is taken as holding none: the
 * probe is UNKNOWN then anyway.
 */
static bool target_has_prepared_txn(struct recover_ctx *c)
{
	int n = 0;

	return (fence_features(c->f) & FENCE_HAS_IN_DOUBT) &&
	       fence_in_doubt(c->f, c->r->op, &n) == 0 && n > 0;
}

void recover__probe(struct recover_ctx *c)
{
	memset(&c->p, 0, sizeof(c->p));
	c->probe_err[0] = '\0';
	if (fence_probe(c->f, c->r->op, &c->p)) {
		c->p.answer = FENCE_UNKNOWN;
		snprintf(c->probe_err, sizeof(c->probe_err), "%s",
			 fence_errmsg(c->f));
	}
}

void recover__settle_facts(struct recover_ctx *c)
{
	c->facts.state = c->e.state;
	c->facts.answer = c->p.answer;
	c->facts.intent_matches = c->p.answer == FENCE_APPLIED &&
		strcmp(c->p.intent_digest, c->e.intent_digest) == 0;
	c->facts.prepared_txn = c->f && target_has_prepared_txn(c);
	c->facts.lease_live = recover__lease_live(&c->e, c->now);
}

/*
 * Read the entry and probe the fence.  A target that cannot be reached is
 * a fact (answer UNKNOWN, with the reason), not a failure: the operator
 * still needs to see the journal.  A malformed target URL is a usage error.
 */
int recover__gather(struct recover_ctx *c)
{
	char err[512];
	int rc;

	journal_redact_url(c->r->target_url, c->target_shown,
			   sizeof(c->target_shown));
	if ((rc = recover__open_journal(c)) || (rc = load_entry(c)))
		return rc;
	c->now = clock_wall_ms();
	rc = fence_open(c->r->target_url, &c->f, err, sizeof(err));
	if (rc == FC_USAGE)
		return cli_fail(rc, "%s", err);
	if (rc) {
		memset(&c->p, 0, sizeof(c->p));
		c->p.answer = FENCE_UNKNOWN;
		snprintf(c->probe_err, sizeof(c->probe_err), "%s", err);
	} else {
		/* Looking must not decide: a prepared transaction stays for
		 * the operator's commit-prepared or rollback-prepared. */
		fence_hands_off(c->f);
		recover__probe(c);
	}
	recover__settle_facts(c);
	return 0;
}

int recover__run(const struct recover_request *r,
		 int (*run)(struct recover_ctx *c))
{
	struct recover_ctx c = { .r = r };
	int rc = run(&c);

	fence_close(c.f);
	journal_close(c.j);
	return rc;
}

/* ---- shared output ---------------------------------------------------- */

json_t *recover__lease_json(const struct journal_entry *e, long long now)
{
	if (!e->lease_owner[0])
		return json_pack("{s:n, s:I, s:n, s:n, s:n}", "owner",
				 "epoch", (json_int_t)e->lease_epoch,
				 "expires_at", "expired", "expires_in_ms");
	return json_pack("{s:s, s:I, s:I, s:b, s:I}", "owner", e->lease_owner,
			 "epoch", (json_int_t)e->lease_epoch,
			 "expires_at", (json_int_t)e->lease_expires_at,
			 "expired", !recover__lease_live(e, now), "expires_in_ms",
			 (json_int_t)(recover__lease_live(e, now) ?
				      e->lease_expires_at - now : 0));
}

json_t *recover__fence_json(const struct recover_ctx *c)
{
	bool applied = c->p.answer == FENCE_APPLIED;

	return json_pack("{s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:o}",
		"name", recover__str_or_null(c->f ? fence_name(c->f) : NULL),
		"capability", c->f ? json_string(fence_capability(c->f) ==
			FENCE_CAP_AUTOMATIC ? "automatic" : "fail-closed") :
			json_null(),
		"answer", recover_answer_name(c->p.answer),
		"epoch", applied ? int_or_null(c->p.epoch) : json_null(),
		"rows", applied ? json_integer(c->p.rows) : json_null(),
		"intent_digest", applied ?
			recover__str_or_null(c->p.intent_digest) : json_null(),
		"intent_matches", applied ? json_boolean(c->facts.intent_matches)
					  : json_null(),
		"error", recover__str_or_null(c->probe_err));
}

void recover__print_lease_line(const struct recover_ctx *c)
{
	const struct journal_entry *e = &c->e;
	char t[40], span[32];

	if (!e->lease_owner[0]) {
		printf("lease      none (epoch %lld)\n", e->lease_epoch);
		return;
	}
	if (recover__lease_live(e, c->now))
		recover__fmt_span(e->lease_expires_at - c->now, span,
				  sizeof(span));
	else
		recover__fmt_span(c->now - e->lease_expires_at, span,
				  sizeof(span));
	printf("lease      owner '%s', epoch %lld, until %s (%s %s%s)\n",
	       e->lease_owner, e->lease_epoch,
	       recover__fmt_time(e->lease_expires_at, t, sizeof(t)),
	       recover__lease_live(e, c->now) ? "running, ends in" : "expired",
	       span, recover__lease_live(e, c->now) ? "" : " ago");
}

void recover__print_fence_line(const struct recover_ctx *c)
{
	const char *name = c->f ? fence_name(c->f) : "?";

	switch (c->p.answer) {
	case FENCE_APPLIED:
		printf("fence      %s: APPLIED at epoch %lld, %lld rows, %s\n",
		       name, c->p.epoch, c->p.rows, c->facts.intent_matches ?
		       "intent matches" : "ANOTHER INTENT");
		break;
	case FENCE_ABSENT:
		printf("fence      %s: ABSENT\n", name);
		break;
	default:
		printf("fence      %s: UNKNOWN (%s)\n", name,
		       *c->probe_err ? c->probe_err : "no answer");
	}
}

void recover__print_entry_head(const struct recover_ctx *c)
{
	char t[40], span[32];

	printf("operation  %s\n", c->e.operation_id);
	printf("intent     %s\n", c->e.intent_digest);
	printf("state      %s, version %lld, last change %s (%s ago)\n",
	       state_name(c->e.state), c->e.version,
	       recover__fmt_time(c->e.updated_at, t, sizeof(t)),
	       recover__fmt_span(c->now - c->e.updated_at, span, sizeof(span)));
	printf("journal    %s\n", c->journal_shown);
	printf("target     %s\n", c->target_shown);
}

