/*
 * fence_pg_url.c -- the fencecert-only parameters of a "postgresql://"
 * target URL (fence=, probe=), taken off before the session (and libpq)
 * sees the rest, and the target session opened on what remains.  Shared
 * by the fences (fence_pg.c) and the observer (target_pg.c); the
 * parameters are listed in fence_pg_impl.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/url_query.h"
#include "fences/fence_pg_impl.h"
#include "journal/journal.h"

int pg_target__is_url(const char *url)
{
	return url && (strncmp(url, "postgresql:", 11) == 0 ||
		       strncmp(url, "postgres:", 9) == 0);
}

struct url_take {
	struct pg_target_url *u;
	char *err;
	size_t errlen;
};

/* url_query.h: fence= and probe= are ours. */
static int take_param(void *ctx, const char *item, size_t len)
{
	struct url_take *t = ctx;

	if (len == 12 && strncmp(item, "fence=pg-txn", 12) == 0)
		t->u->kind = PG_FENCE_TXN;
	else if (len == 12 && strncmp(item, "fence=pg-2pc", 12) == 0)
		t->u->kind = PG_FENCE_2PC;
	else if (len == 20 && strncmp(item, "probe=fence-row-only", 20) == 0)
		t->u->row_only = 1;
	else if (strncmp(item, "fence=", 6) == 0 ||
		 strncmp(item, "probe=", 6) == 0) {
		snprintf(t->err, t->errlen, "invalid '%.*s' in target url "
			 "(expected fence=pg-txn, fence=pg-2pc or "
			 "probe=fence-row-only)", (int)len, item);
		return FC_USAGE;
	} else {
		return 0;
	}
	return 1;
}

int pg_target__parse_url(const char *url, struct pg_target_url *u, char *err,
			 size_t errlen)
{
	struct url_take t = { u, err, errlen };
	int rc;

	memset(u, 0, sizeof(*u));
	if (!(u->session_url = calloc(strlen(url) + 1, 1))) {
		snprintf(err, errlen, "out of memory opening a target");
		return FC_NOMEM;
	}
	if ((rc = url_query_split(url, u->session_url, take_param, &t))) {
		pg_target__url_release(u);
		return rc;
	}
	return 0;
}

void pg_target__url_release(struct pg_target_url *u)
{
	if (u->session_url)
		explicit_bzero(u->session_url, strlen(u->session_url));
	free(u->session_url);
	u->session_url = NULL;
}

int pg_target__open_session(const char *session_url, int connect,
			    pg_session **out, char *err, size_t errlen)
{
	char shown[256];
	const struct pg_session_conf conf = {
		.kind = "target",
		.shown = shown,
		.unavailable = FC_FENCE_UNAVAILABLE,
		.connect = connect,
	};

	journal_redact_url(session_url, shown, sizeof(shown));
	return pg_session_open(session_url, &conf, out, err, errlen);
}
