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
 *
 * This is the stored format, not journal_json.h's shape for readers
 * (which has null for "no lease" and no write_id): it lists the same
 * fields, but it must not change when that one does.
 */
#include <jansson.h>
#include <string.h>

#include "common/clock.h"
#include "journal/journal_etcd_impl.h"

/* meta or evidence text (validated by journal.c) as an object; NULL
 * makes the json_pack() it is handed to fail (and drop it). */
static json_t *object_from(const char *text)
{
	return json_loads(text, 0, NULL);
}

/* obj (a json_pack() answer, NULL when it failed) as compact text. */
static char *dump(json_t *obj)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;

	json_decref(obj);
	return text;
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

/*
 * text as a JSON object: fields() decodes the record's own fields into
 * rec, then the write_id every stored value carries goes to wid.  0, or
 * -1 when anything is missing or mistyped.
 */
static int decode(const char *text, int (*fields)(json_t *o, void *rec),
		  void *rec, char wid[JE_WRITE_ID_LEN + 1])
{
	json_t *o = json_loads(text, 0, NULL);
	int bad = !json_is_object(o) || fields(o, rec) ||
		  string_to(json_object_get(o, "write_id"), wid,
			    JE_WRITE_ID_LEN + 1);

	json_decref(o);
	return bad ? -1 : 0;
}

char *journal_etcd__entry_encode(const struct journal_entry *e, const char *wid)
{
	return dump(json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:I, s:I, s:I, "
			      "s:o, s:o, s:s}",
			      "operation_id", e->operation_id,
			      "intent_digest", e->intent_digest,
			      "state", state_name(e->state),
			      "version", (json_int_t)e->version,
			      "lease_epoch", (json_int_t)e->lease_epoch,
			      "lease_owner", e->lease_owner,
			      "lease_expires_at", (json_int_t)e->lease_expires_at,
			      "created_at", (json_int_t)e->created_at,
			      "updated_at", (json_int_t)e->updated_at,
			      "meta", object_from(e->meta),
			      "evidence", object_from(e->evidence),
			      "write_id", wid));
}

static int entry_fields(json_t *o, void *rec)
{
	struct journal_entry *e = rec;

	return string_to(json_object_get(o, "operation_id"), e->operation_id,
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
	       object_to(json_object_get(o, "evidence"), e->evidence);
}

int journal_etcd__entry_decode(const char *text, struct journal_entry *e,
			       char wid[JE_WRITE_ID_LEN + 1])
{
	memset(e, 0, sizeof(*e));
	return decode(text, entry_fields, e, wid);
}

char *journal_etcd__transition_encode(const struct journal_transition *t,
				      const char *wid)
{
	return dump(json_pack("{s:s, s:I, s:s, s:s, s:I, s:I, s:o, s:s}",
			      "operation_id", t->operation_id,
			      "version", (json_int_t)t->version,
			      "from", state_name(t->from),
			      "to", state_name(t->to),
			      "epoch", (json_int_t)t->epoch,
			      "at", (json_int_t)t->at,
			      "evidence", object_from(t->evidence),
			      "write_id", wid));
}

static int transition_fields(json_t *o, void *rec)
{
	struct journal_transition *t = rec;

	return string_to(json_object_get(o, "operation_id"), t->operation_id,
			 sizeof(t->operation_id)) ||
	       int_to(json_object_get(o, "version"), &t->version) ||
	       state_to(json_object_get(o, "from"), 1, &t->from) ||
	       state_to(json_object_get(o, "to"), 0, &t->to) ||
	       int_to(json_object_get(o, "epoch"), &t->epoch) ||
	       int_to(json_object_get(o, "at"), &t->at) ||
	       object_to(json_object_get(o, "evidence"), t->evidence);
}

int journal_etcd__transition_decode(const char *text,
				    struct journal_transition *t,
				    char wid[JE_WRITE_ID_LEN + 1])
{
	memset(t, 0, sizeof(*t));
	return decode(text, transition_fields, t, wid);
}

char *journal_etcd__tombstone_encode(const struct journal_entry *e,
				     const char *wid)
{
	return dump(json_pack("{s:s, s:s, s:I, s:s}",
			      "operation_id", e->operation_id,
			      "intent_digest", e->intent_digest,
			      "purged_at", (json_int_t)clock_wall_ms(),
			      "write_id", wid));
}
