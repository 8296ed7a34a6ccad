/*
 * journal_json.c -- the JSON shape of journal entries and transitions.
 *
 * Stored meta/evidence text is a JSON object (journal.c validates it on the
 * way in); should a store hand back anything else, it is kept as a string
 * rather than dropped, so a report still shows what was there.
 */
#include <jansson.h>

#include "journal/journal_json.h"

static json_t *object_or_string(const char *text)
{
	json_t *v = json_loads(text, 0, NULL);

	if (v && json_is_object(v))
		return v;
	json_decref(v);
	return json_string(text);
}

/* json_object_set_new() steals even on failure; count failures once. */
static int set(json_t *obj, const char *key, json_t *value)
{
	return value ? json_object_set_new(obj, key, value) : -1;
}

static json_t *finish(json_t *obj, int failed)
{
	if (failed) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

json_t *journal_entry_to_json(const struct journal_entry *e)
{
	json_t *obj = json_object();
	int failed = 0;

	if (!obj)
		return NULL;
	failed |= set(obj, "operation_id", json_string(e->operation_id));
	failed |= set(obj, "intent_digest", json_string(e->intent_digest));
	failed |= set(obj, "state", json_string(state_name(e->state)));
	failed |= set(obj, "version", json_integer(e->version));
	failed |= set(obj, "lease_epoch", json_integer(e->lease_epoch));
	failed |= set(obj, "lease_owner", e->lease_owner[0] ?
		      json_string(e->lease_owner) : json_null());
	failed |= set(obj, "lease_expires_at", e->lease_expires_at ?
		      json_integer(e->lease_expires_at) : json_null());
	failed |= set(obj, "created_at", json_integer(e->created_at));
	failed |= set(obj, "updated_at", json_integer(e->updated_at));
	failed |= set(obj, "meta", object_or_string(e->meta));
	failed |= set(obj, "evidence", object_or_string(e->evidence));
	return finish(obj, failed);
}

json_t *journal_transition_to_json(const struct journal_transition *t)
{
	json_t *obj = json_object();
	int failed = 0;

	if (!obj)
		return NULL;
	failed |= set(obj, "operation_id", json_string(t->operation_id));
	failed |= set(obj, "version", json_integer(t->version));
	failed |= set(obj, "from", json_string(state_name(t->from)));
	failed |= set(obj, "to", json_string(state_name(t->to)));
	failed |= set(obj, "epoch", json_integer(t->epoch));
	failed |= set(obj, "at", json_integer(t->at));
	failed |= set(obj, "evidence", object_or_string(t->evidence));
	return finish(obj, failed);
}
