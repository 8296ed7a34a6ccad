/*
 * json_text.c -- a JSON document as jansson writes it, fast (json_text.h).
 *
 * Invariants:
 *  1. The text is jansson's: the separators of JSON_PRESERVE_ORDER
 *     without indentation (", " and ": ", or "," and ":" compact), members
 *     in iteration order, and every value this file does not write itself
 *     written by json_dumps(value, JSON_ENCODE_ANY), whose text for a
 *     scalar does not depend on anything else.
 *  2. Written here: null, true, false, integers (the "%lld" digits), and
 *     strings (values and keys) whose bytes are all between ' ' and '~'
 *     but '"' and '\\' -- exactly the strings jansson copies unchanged.
 *  3. Output goes through one buffer: to the callback when it is full
 *     (json_text_dump), or grown (json_text_dumps).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_text.h"

#define CHUNK (64 * 1024)

struct out {
	char *buf;
	size_t len, cap;
	json_dump_callback_t cb; /* NULL: the buffer grows */
	void *ctx;
	bool compact;            /* "," and ":", not ", " and ": " */
};

static int put(struct out *o, const char *p, size_t n)
{
	if (o->len + n > o->cap) {
		if (o->cb) {
			if (o->len && o->cb(o->buf, o->len, o->ctx))
				return -1;
			o->len = 0;
			if (n > o->cap)
				return o->cb(p, n, o->ctx);
		} else {
			size_t cap = o->cap ? o->cap : CHUNK;
			char *grown;

			while (cap < o->len + n)
				cap *= 2;
			if (!(grown = realloc(o->buf, cap)))
				return -1;
			o->buf = grown;
			o->cap = cap;
		}
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	return 0;
}

/* Invariant 2's strings. */
static bool plain(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
			return false;
	}
	return true;
}

/* Invariant 1: the value written by jansson. */
static int by_jansson(struct out *o, const json_t *v)
{
	char *text = json_dumps(v, JSON_ENCODE_ANY);
	int rc;

	if (!text)
		return -1;
	rc = put(o, text, strlen(text));
	free(text);
	return rc;
}

static int string(struct out *o, const char *s, size_t n, const json_t *v)
{
	json_t *tmp;
	int rc;

	if (plain(s, n))
		return put(o, "\"", 1) || put(o, s, n) || put(o, "\"", 1) ? -1 : 0;
	if (v)
		return by_jansson(o, v);
	/* a key: jansson refuses what is not UTF-8 when it writes it */
	if (!(tmp = json_stringn_nocheck(s, n)))
		return -1;
	rc = by_jansson(o, tmp);
	json_decref(tmp);
	return rc;
}

static int integer(struct out *o, json_int_t i)
{
	char digits[24], *p = digits + sizeof(digits);
	uint64_t u = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;

	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10));
	if (i < 0)
		*--p = '-';
	return put(o, p, (size_t)(digits + sizeof(digits) - p));
}

/* c (',' or ':') and, unless compact, a space. */
static int separator(struct out *o, char c)
{
	const char text[2] = { c, ' ' };

	return put(o, text, o->compact ? 1 : 2);
}

static int value(struct out *o, const json_t *v, int depth);

static int array(struct out *o, const json_t *v, int depth)
{
	size_t n = json_array_size(v);

	if (put(o, "[", 1))
		return -1;
	for (size_t i = 0; i < n; i++)
		if ((i && separator(o, ',')) ||
		    value(o, json_array_get(v, i), depth + 1))
			return -1;
	return put(o, "]", 1);
}

static int object(struct out *o, const json_t *v, int depth)
{
	bool first = true;

	if (put(o, "{", 1))
		return -1;
	for (void *it = json_object_iter((json_t *)v); it;
	     it = json_object_iter_next((json_t *)v, it)) {
		if ((!first && separator(o, ',')) ||
		    string(o, json_object_iter_key(it),
			   json_object_iter_key_len(it), NULL) ||
		    separator(o, ':') ||
		    value(o, json_object_iter_value(it), depth + 1))
			return -1;
		first = false;
	}
	return put(o, "}", 1);
}

static int value(struct out *o, const json_t *v, int depth)
{
	if (!v || depth > JSON_TEXT_MAX_DEPTH)
		return -1;
	switch (json_typeof(v)) {
	case JSON_NULL:
		return put(o, "null", 4);
	case JSON_TRUE:
		return put(o, "true", 4);
	case JSON_FALSE:
		return put(o, "false", 5);
	case JSON_INTEGER:
		return integer(o, json_integer_value(v));
	case JSON_STRING:
		return string(o, json_string_value(v), json_string_length(v), v);
	case JSON_ARRAY:
		return array(o, v, depth);
	case JSON_OBJECT:
		return object(o, v, depth);
	default:
		return by_jansson(o, v);
	}
}

int json_text_dump(const json_t *v, bool compact, json_dump_callback_t cb,
		   void *ctx)
{
	struct out o = { .cap = CHUNK, .cb = cb, .ctx = ctx,
			 .compact = compact };
	int rc;

	if (!json_is_object(v) && !json_is_array(v))
		return -1;
	if (!(o.buf = malloc(CHUNK)))
		return -1;
	rc = value(&o, v, 0);
	if (!rc && o.len)
		rc = cb(o.buf, o.len, ctx);
	free(o.buf);
	return rc ? -1 : 0;
}

char *json_text_dumps(const json_t *v, bool compact, size_t extra,
		      size_t *len)
{
	struct out o = { .compact = compact };

	if (!json_is_object(v) && !json_is_array(v))
		return NULL;
	if (value(&o, v, 0) || put(&o, "", 1)) {
		free(o.buf);
		return NULL;
	}
	if (o.cap - o.len < extra) {
		char *grown = realloc(o.buf, o.len + extra);

		if (!grown) {
			free(o.buf);
			return NULL;
		}
		o.buf = grown;
	}
	*len = o.len - 1;
	return o.buf;
}
