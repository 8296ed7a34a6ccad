/*
 * journal_adapter.c -- what the port lends every adapter (journal_impl.h):
 * the error slot of a handle, the CAS rules, the create and lease rules
 * and the redaction of URLs in messages.
 *
 * It sits below both the port (journal.c, which dispatches to the
 * adapters) and the adapters, so neither calls back into the other.
 *
 * Invariants:
 *  1. journal__check_cas() is the only place that decides whether a CAS
 *     may be applied; adapters call it inside their atomic step.
 *  2. Messages never carry a URL password (journal_redact_url()).
 *  3. Intent and lease conflicts are decided, and worded, by
 *     journal__check_intent() and journal__check_lease() for every
 *     adapter; an adapter that builds a new entry in C (SQLite, etcd)
 *     builds it with journal__new_entry().
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "journal/journal_impl.h"

int journal__fail(journal *j, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->errmsg, sizeof(j->errmsg), fmt, ap);
	va_end(ap);
	return code;
}

/* ---- the CAS rules ------------------------------------------------------ */

static void set_names(state_set set, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int s = FC_PREPARING; s < FC_STATE_COUNT; s++) {
		if (!(set & STATE_BIT(s)) || used >= len)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 used ? "," : "",
					 state_name((enum fc_state)s));
	}
}

/*
 * The order matters and is part of the contract: a caller that lost a race
 * learns CAS_CONFLICT (re-read and decide again) before it learns that its
 * request would also be illegal, and a stale epoch is reported only for a
 * request that would otherwise have been applied.
 */
int journal__check_cas(journal *j, const struct journal_entry *cur,
		       const struct journal_cas *req)
{
	const char *op = cur->operation_id;
	char names[160];

	if (cur->version != req->expected_version)
		return journal__fail(j, FC_CAS_CONFLICT, "version mismatch on "
				     "'%s': expected %lld, found %lld (%s)", op,
				     req->expected_version, cur->version,
				     state_name(cur->state));
	if (req->expected_states &&
	    !(req->expected_states & STATE_BIT(cur->state))) {
		set_names(req->expected_states, names, sizeof(names));
		return journal__fail(j, FC_CAS_CONFLICT, "state mismatch on "
				     "'%s': expected %s, found %s", op, names,
				     state_name(cur->state));
	}
	if (!state_transition_legal(cur->state, req->next))
		return journal__fail(j, FC_ILLEGAL_TRANSITION, "illegal "
				     "transition on '%s': %s -> %s", op,
				     state_name(cur->state),
				     state_name(req->next));
	if (req->epoch != 0 && req->epoch != cur->lease_epoch)
		return journal__fail(j, FC_LEASE_LOST, "lease lost on '%s': "
				     "epoch %lld is not the current epoch %lld "
				     "(owner '%s')", op, req->epoch,
				     cur->lease_epoch, cur->lease_owner);
	return 0;
}

/* ---- create and lease --------------------------------------------------- */

void journal__new_entry(struct journal_entry *e, const char *op,
			const char *intent, const char *meta)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->operation_id, sizeof(e->operation_id), "%s", op);
	snprintf(e->intent_digest, sizeof(e->intent_digest), "%s", intent);
	snprintf(e->meta, sizeof(e->meta), "%s", meta);
	strcpy(e->evidence, "{}");
	e->state = FC_PREPARING;
	e->version = 1;
	e->created_at = e->updated_at = clock_wall_ms();
}

int journal__check_intent(journal *j, const struct journal_entry *cur,
			  const char *intent)
{
	if (strcmp(cur->intent_digest, intent) != 0)
		return journal__fail(j, FC_INTENT_CONFLICT, "intent conflict on "
				     "'%s': journal holds '%s', caller has '%s'",
				     cur->operation_id, cur->intent_digest,
				     intent);
	return 0;
}

int journal__check_lease(journal *j, const struct journal_entry *cur,
			 const char *owner, long long now)
{
	if (cur->lease_owner[0] && strcmp(cur->lease_owner, owner) != 0 &&
	    cur->lease_expires_at > now)
		return journal__fail(j, FC_LEASE_HELD, "lease on '%s' is held by "
				     "'%s' (epoch %lld) for another %lld ms",
				     cur->operation_id, cur->lease_owner,
				     cur->lease_epoch,
				     cur->lease_expires_at - now);
	return 0;
}

/* ---- helpers ------------------------------------------------------------ */

/* Append n bytes of s to out (always NUL-terminated, truncating). */
static void put(char *out, size_t outlen, size_t *used, const char *s,
		size_t n)
{
	if (*used + 1 >= outlen)
		return;
	if (n > outlen - 1 - *used)
		n = outlen - 1 - *used;
	memcpy(out + *used, s, n);
	*used += n;
	out[*used] = '\0';
}

/*
 * Two places carry a password in the URLs we accept: the userinfo of
 * "scheme://user:pass@host" and a "password=" query parameter (libpq).
 */
void journal_redact_url(const char *url, char *out, size_t outlen)
{
	const char *p, *auth, *auth_end, *at = NULL, *colon = NULL;
	size_t used = 0;

	if (!out || !outlen)
		return;
	out[0] = '\0';
	if (!url)
		return;
	p = url;
	auth = strstr(url, "://");
	if (auth) {
		auth += 3;
		auth_end = auth + strcspn(auth, "/?#");
		for (const char *c = auth; c < auth_end; c++)
			if (*c == '@')
				at = c;
		if (at)
			colon = memchr(auth, ':', (size_t)(at - auth));
		if (colon) {
			put(out, outlen, &used, url, (size_t)(colon + 1 - url));
			put(out, outlen, &used, "***", 3);
			p = at;
		}
	}
	while (*p) {
		const char *key = strstr(p, "password=");

		if (!key) {
			put(out, outlen, &used, p, strlen(p));
			break;
		}
		if (key == url || !strchr("?&;", key[-1])) {
			put(out, outlen, &used, p, (size_t)(key + 1 - p));
			p = key + 1;
			continue;
		}
		key += strlen("password=");
		put(out, outlen, &used, p, (size_t)(key - p));
		put(out, outlen, &used, "***", 3);
		p = key + strcspn(key, "&;#");
	}
}
