/*
 * journal_etcd_codec.c -- the values the etcd journal stores, as JSON text
 * (jansson): entries, transitions and tombstones.
 *
 * An entry or transition holds every field of its struct plus write_id,
 * the tag of the txn that wrote it (journal_etcd_write.c).  meta and
 * evidence are embedded as objects: journal.c hands them over in compact
 * form with key order kept, and dumping them compact again gives back the
 * same text, so a round trip is exact.  Decoding is strict: a missing or
 * mistyped field is a malformed value, never a default.
 */
#include <jansson.h>
#include <string.h>

#include "common/clock.h"
#include "journal/journal_etcd_impl.h"

/* json_object_set_new() steals even on failure; count failures once. */
static int set(json_t *obj, const char *key, json_t *value)
{
	return value ? json_object_set_new(obj, key, value) : -1;
}

/* meta or evidence text (validated by journal.c) as an object. */
static json_t *object_from(const char *text)
{
	return json_loads(text, 0, NULL);
}

static int object_to(json_t *v, char out[JOURNAL_JSON_MAX])
{
	size_t n;

	if (!json_is_object(v))
		return -1;
	n = json_dumpb(v, out, JOURNAL_JSON_MAX - 1, JSON_COMPACT);
	if (n == 0 || n >= JOURNAL_JSON_MAX)
		return -1;
	out[n] = '\0';
	return 0;
}

static int string_to(json_t *v, char *out, size_t len)
{
	const char *s = json_string_value(v);

	if (!s || strlen(s) >= len)
		return -1;
	strcpy(out, s);
	return 0;
}

static int int_to(json_t *v, long long *out)
{
	if (!json_is_integer(v))
		return -1;
	*out = (long long)json_integer_value(v);
	return 0;
}

static int state_to(json_t *v, int allow_none, enum fc_state *out)
{
	const char *s = json_string_value(v);

	if (s && allow_none && strcmp(s, "NONE") == 0) {
		*out = FC_STATE_NONE;
		return 0;
	}
	return s && !state_parse(s, out) ? 0 : -1;
}

char *journal_etcd__entry_encode(const struct journal_entry *e, const char *wid)
{
	json_t *obj = json_object();
	int failed = !obj;
	char *text;

	if (failed)
		return NULL;
	failed |= set(obj, "operation_id", json_string(e->operation_id));
	failed |= set(obj, "intent_digest", json_string(e->intent_digest));
	failed |= set(obj, "state", json_string(state_name(e->state)));
	failed |= set(obj, "version", json_integer(e->version));
	failed |= set(obj, "lease_epoch", json_integer(e->lease_epoch));
	failed |= set(obj, "lease_owner", json_string(e->lease_owner));
	failed |= set(obj, "lease_expires_at",
		      json_integer(e->lease_expires_at));
	failed |= set(obj, "created_at", json_integer(e->created_at));
	failed |= set(obj, "updated_at", json_integer(e->updated_at));
	failed |= set(obj, "meta", object_from(e->meta));
	failed |= set(obj, "evidence", object_from(e->evidence));
	failed |= set(obj, "write_id", json_string(wid));
	text = failed ? NULL : json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	return text;
}

int journal_etcd__entry_decode(const char *text, struct journal_entry *e,
			       char wid[JE_WRITE_ID_LEN + 1])
{
	json_t *o = json_loads(text, 0, NULL);
	int bad;

	memset(e, 0, sizeof(*e));
	bad = !json_is_object(o) ||
	      string_to(json_object_get(o, "operation_id"), e->operation_id,
			sizeof(e->operation_id)) ||
	      string_to(json_object_get(o, "intent_digest"), e->intent_digest,
			sizeof(e->intent_digest)) ||
	      state_to(json_object_get(o, "state"), 0, &e->state) ||
	      int_to(json_object_get(o, "version"), &e->version) ||
	      int_to(json_object_get(o, "lease_epoch"), &e->lease_epoch) ||
	      string_to(json_object_get(o, "lease_owner"), e->lease_owner,
			sizeof(e->lease_owner)) ||
	      int_to(json_object_get(o, "lease_expires_at"),
		     &e->lease_expires_at) ||
	      int_to(json_object_get(o, "created_at"), &e->created_at) ||
	      int_to(json_object_get(o, "updated_at"), &e->updated_at) ||
	      object_to(json_object_get(o, "meta"), e->meta) ||
	      object_to(json_object_get(o, "evidence"), e->evidence) ||
	      string_to(json_object_get(o, "write_id"), wid,
			JE_WRITE_ID_LEN + 1);
	json_decref(o);
	return bad ? -1 : 0;
}

char *journal_etcd__transition_encode(const struct journal_transition *t,
				      const char *wid)
{
	json_t *obj = json_object();
	int failed = !obj;
	char *text;

	if (failed)
		return NULL;
	failed |= set(obj, "operation_id", json_string(t->operation_id));
	failed |= set(obj, "version", json_integer(t->version));
	failed |= set(obj, "from", json_string(state_name(t->from)));
	failed |= set(obj, "to", json_string(state_name(t->to)));
	failed |= set(obj, "epoch", json_integer(t->epoch));
	failed |= set(obj, "at", json_integer(t->at));
	failed |= set(obj, "evidence", object_from(t->evidence));
	failed |= set(obj, "write_id", json_string(wid));
	text = failed ? NULL : json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	return text;
}

int journal_etcd__transition_decode(const char *text,
				    struct journal_transition *t,
				    char wid[JE_WRITE_ID_LEN + 1])
{
	json_t *o = json_loads(text, 0, NULL);
	int bad;

	memset(t, 0, sizeof(*t));
	bad = !json_is_object(o) ||
	      string_to(json_object_get(o, "operation_id"), t->operation_id,
			sizeof(t->operation_id)) ||
	      int_to(json_object_get(o, "version"), &t->version) ||
	      state_to(json_object_get(o, "from"), 1, &t->from) ||
	      state_to(json_object_get(o, "to"), 0, &t->to) ||
	      int_to(json_object_get(o, "epoch"), &t->epoch) ||
	      int_to(json_object_get(o, "at"), &t->at) ||
	      object_to(json_object_get(o, "evidence"), t->evidence) ||
	      string_to(json_object_get(o, "write_id"), wid,
			JE_WRITE_ID_LEN + 1);
	json_decref(o);
	return bad ? -1 : 0;
}

char *journal_etcd__tombstone_encode(const struct journal_entry *e,
				     const char *wid)
{
	json_t *obj = json_pack("{s:s, s:s, s:I, s:s}", "operation_id",
				e->operation_id, "intent_digest",
				e->intent_digest, "purged_at",
				(json_int_t)clock_wall_ms(), "write_id", wid);
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;

	json_decref(obj);
	return text;
}
