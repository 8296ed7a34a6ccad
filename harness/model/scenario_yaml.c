/*
 * scenario_yaml.c -- typed, position-aware access to a libyaml document for
 * the suite loader (scenario.c, scenario_faults.c), including the name
 * rule of suites, routes, scenarios, services and proxies.  It calls no
 * other file of the model.
 *
 * Invariants:
 *   1. Every error names the node it is about: "FILE:LINE:COLUMN: message",
 *      1-based, taken from the node's start mark.  A key-level problem
 *      (unknown, duplicate) names the key; a value problem names the value;
 *      a missing key names the mapping.
 *   2. Only the first error is kept; later calls see c->failed and return
 *      FC_USAGE without overwriting it, so the message always describes the
 *      root cause.
 *   3. Every node fetched goes through scenario__node() and is charged to the
 *      visit budget (alias bombs, see scenario_impl.h).
 *   4. Scalars are typed by the loader, not by YAML tags: integers are plain
 *      decimal without leading zeros (YAML 1.1 would read 010 as octal),
 *      booleans are plain true/false (not yes/no), and a plain empty, "~" or
 *      "null" scalar is null, which no key accepts.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/model/scenario_impl.h"

#define EXCERPT_MAX 40

int scenario__error(struct yctx *c, const yaml_node_t *node,
		    const char *fmt, ...)
{
	size_t line = 1, column = 1;
	va_list ap;
	int len;

	if (c->failed)
		return FC_USAGE;
	c->failed = true;
	if (node) {
		line = node->start_mark.line + 1;
		column = node->start_mark.column + 1;
	}
	len = snprintf(c->err, c->errlen, "%s:%zu:%zu: ", c->file, line, column);
	if (len < 0 || (size_t)len >= c->errlen)
		return FC_USAGE;
	va_start(ap, fmt);
	vsnprintf(c->err + len, c->errlen - (size_t)len, fmt, ap);
	va_end(ap);
	return FC_USAGE;
}

yaml_node_t *scenario__node(struct yctx *c, int id)
{
	yaml_node_t *n = yaml_document_get_node(c->doc, id);

	if (c->failed)
		return NULL;
	if (!n) {
		scenario__error(c, NULL, "document refers to a missing node");
		return NULL;
	}
	if (--c->budget < 0) {
		scenario__error(c, n,
				"suite is too large once aliases are expanded (more than %d node visits)",
				SUITE_VISIT_BUDGET);
		return NULL;
	}
	return n;
}

static bool is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = (const char *)n->data.scalar.value;
	return n->data.scalar.length == 0 || strcmp(v, "~") == 0 ||
	       strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
	       strcmp(v, "NULL") == 0;
}

const char *scenario__kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_MAPPING_NODE: return "a mapping";
	case YAML_SEQUENCE_NODE: return "a list";
	case YAML_SCALAR_NODE: return is_null(n) ? "null" : "a string";
	default: return "an empty node";
	}
}

/* A printable excerpt of a scalar for messages: control bytes become '?'
 * so a message stays one line. */
static const char *excerpt(const yaml_node_t *n, char buf[EXCERPT_MAX + 4])
{
	size_t len = n->data.scalar.length, i;

	for (i = 0; i < len && i < EXCERPT_MAX; i++) {
		unsigned char ch = n->data.scalar.value[i];

		buf[i] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
	if (len > EXCERPT_MAX) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

static bool scalar_is(const yaml_node_t *n, const char *s)
{
	size_t len = strlen(s);

	return n->data.scalar.length == len &&
	       memcmp(n->data.scalar.value, s, len) == 0;
}

static void list_keys(const char *const *allowed, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (const char *const *k = allowed; *k && used < size; k++) {
		int n = snprintf(buf + used, size - used, "%s%s",
				 k == allowed ? "" : ", ", *k);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

static int key_check(struct yctx *c, yaml_node_t *key,
		     const char *const *allowed, const char *what)
{
	char val[EXCERPT_MAX + 4], keys[256];

	if (key->type != YAML_SCALAR_NODE || is_null(key))
		return scenario__error(c, key, "keys in %s must be strings, got %s",
				       what, scenario__kind(key));
	for (const char *const *k = allowed; *k; k++)
		if (scalar_is(key, *k))
			return 0;
	list_keys(allowed, keys, sizeof(keys));
	return scenario__error(c, key, "unknown key '%s' in %s (expected %s)",
			       excerpt(key, val), what, keys);
}

int scenario__map_check(struct yctx *c, yaml_node_t *n,
			const char *const *allowed, const char *what)
{
	yaml_node_pair_t *start, *top;

	if (c->failed)
		return FC_USAGE;
	if (n->type != YAML_MAPPING_NODE)
		return scenario__error(c, n, "%s must be a mapping, got %s", what,
				       scenario__kind(n));
	start = n->data.mapping.pairs.start;
	top = n->data.mapping.pairs.top;
	for (yaml_node_pair_t *p = start; p < top; p++) {
		yaml_node_t *key = scenario__node(c, p->key);

		if (!key || key_check(c, key, allowed, what) < 0)
			return FC_USAGE;
		/* Every key is one of the few allowed names, so a duplicate
		 * shows up within the first len(allowed) + 1 pairs: this
		 * loop stays short even for a huge mapping. */
		for (yaml_node_pair_t *q = start; q < p; q++) {
			yaml_node_t *prev = scenario__node(c, q->key);

			if (!prev)
				return FC_USAGE;
			if (prev->data.scalar.length == key->data.scalar.length &&
			    memcmp(prev->data.scalar.value, key->data.scalar.value,
				   key->data.scalar.length) == 0)
				return scenario__error(c, key,
						       "duplicate key '%s' in %s (first at line %zu)",
						       (const char *)key->data.scalar.value,
						       what, prev->start_mark.line + 1);
		}
	}
	return 0;
}

yaml_node_t *scenario__map_get(struct yctx *c, yaml_node_t *map,
			       const char *key, yaml_node_t **keynode)
{
	if (c->failed || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
	     p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = scenario__node(c, p->key);

		if (!k)
			return NULL;
		if (k->type == YAML_SCALAR_NODE && scalar_is(k, key)) {
			if (keynode)
				*keynode = k;
			return scenario__node(c, p->value);
		}
	}
	return NULL;
}

int scenario__map_need(struct yctx *c, yaml_node_t *map, const char *key,
		       const char *what, yaml_node_t **out)
{
	*out = scenario__map_get(c, map, key, NULL);
	if (c->failed)
		return FC_USAGE;
	if (!*out)
		return scenario__error(c, map, "%s is missing required key '%s'",
				       what, key);
	return 0;
}

int scenario__get_str(struct yctx *c, yaml_node_t *n, const char *key,
		      const char **out)
{
	if (c->failed)
		return FC_USAGE;
	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return scenario__error(c, n, "'%s' must be a string, got %s", key,
				       scenario__kind(n));
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
		return scenario__error(c, n, "'%s' contains a NUL character", key);
	*out = (const char *)n->data.scalar.value;
	return 0;
}

int scenario__get_strbuf(struct yctx *c, yaml_node_t *n, const char *key,
			 char *buf, size_t size)
{
	const char *s;

	if (scenario__get_str(c, n, key, &s) < 0)
		return FC_USAGE;
	if (strlen(s) >= size)
		return scenario__error(c, n, "'%s' is longer than %zu characters",
				       key, size - 1);
	memcpy(buf, s, strlen(s) + 1);
	return 0;
}

int scenario__get_strdup(struct yctx *c, yaml_node_t *n, const char *key,
			 char **out)
{
	const char *s;

	if (scenario__get_str(c, n, key, &s) < 0)
		return FC_USAGE;
	*out = strdup(s);
	if (!*out) {
		scenario__error(c, n, "out of memory");
		return FC_NOMEM;
	}
	return 0;
}

/* Plain decimal digits, optionally negative, no leading zeros. */
int scenario__get_name(struct yctx *c, yaml_node_t *n, const char *key,
		       char buf[SCENARIO_NAME_MAX])
{
	if (scenario__get_strbuf(c, n, key, buf, SCENARIO_NAME_MAX) < 0)
		return FC_USAGE;
	for (const char *p = buf; *p; p++) {
		bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			  (*p >= '0' && *p <= '9') ||
			  (p != buf && (*p == '.' || *p == '_' || *p == '-'));
		if (!ok)
			return scenario__error(c, n,
					       "'%s' must start with a letter or digit and use only letters, digits, '.', '_' and '-'",
					       key);
	}
	if (!buf[0])
		return scenario__error(c, n, "'%s' must not be empty", key);
	return 0;
}

static bool decimal_syntax(const yaml_node_t *n, bool allow_minus)
{
	const yaml_char_t *s = n->data.scalar.value;
	size_t len = n->data.scalar.length, i = 0;

	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	if (allow_minus && len > 0 && s[0] == '-')
		i++;
	if (i == len)
		return false;
	if (s[i] == '0' && len - i > 1)
		return false;
	for (; i < len; i++)
		if (!isdigit(s[i]))
			return false;
	return true;
}

static int not_integer(struct yctx *c, yaml_node_t *n, const char *key)
{
	char val[EXCERPT_MAX + 4];

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return scenario__error(c, n, "'%s' must be an integer, got %s",
				       key, scenario__kind(n));
	return scenario__error(c, n,
			       "'%s' must be a decimal integer, got '%s'", key,
			       excerpt(n, val));
}

int scenario__get_int(struct yctx *c, yaml_node_t *n, const char *key,
		      long long min, long long max, int *out)
{
	char val[EXCERPT_MAX + 4];
	long long v;

	if (c->failed)
		return FC_USAGE;
	if (n->type != YAML_SCALAR_NODE || !decimal_syntax(n, true))
		return not_integer(c, n, key);
	errno = 0;
	v = strtoll((const char *)n->data.scalar.value, NULL, 10);
	if (errno == ERANGE)
		return scenario__error(c, n, "'%s' is out of range: %s", key,
				       excerpt(n, val));
	if (v < min || v > max)
		return scenario__error(c, n,
				       "'%s' must be between %lld and %lld, got %lld",
				       key, min, max, v);
	*out = (int)v;
	return 0;
}

int scenario__get_u64(struct yctx *c, yaml_node_t *n, const char *key,
		      uint64_t *out)
{
	char val[EXCERPT_MAX + 4];
	unsigned long long v;

	if (c->failed)
		return FC_USAGE;
	if (n->type == YAML_SCALAR_NODE && decimal_syntax(n, true) &&
	    n->data.scalar.value[0] == '-')
		return scenario__error(c, n, "'%s' must not be negative, got %s",
				       key, excerpt(n, val));
	if (n->type != YAML_SCALAR_NODE || !decimal_syntax(n, false))
		return not_integer(c, n, key);
	errno = 0;
	v = strtoull((const char *)n->data.scalar.value, NULL, 10);
	if (errno == ERANGE)
		return scenario__error(c, n, "'%s' is out of range: %s", key,
				       excerpt(n, val));
	*out = v;
	return 0;
}

int scenario__get_bool(struct yctx *c, yaml_node_t *n, const char *key,
		       bool *out)
{
	static const char *const yes[] = { "true", "True", "TRUE", NULL };
	static const char *const no[] = { "false", "False", "FALSE", NULL };
	char val[EXCERPT_MAX + 4];

	if (c->failed)
		return FC_USAGE;
	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return scenario__error(c, n, "'%s' must be true or false, got %s",
				       key, scenario__kind(n));
	if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		for (int i = 0; yes[i]; i++) {
			if (scalar_is(n, yes[i])) {
				*out = true;
				return 0;
			}
			if (scalar_is(n, no[i])) {
				*out = false;
				return 0;
			}
		}
	}
	return scenario__error(c, n, "'%s' must be true or false, got '%s'",
			       key, excerpt(n, val));
}

void scenario__strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

int scenario__parse_list(struct yctx *c, yaml_node_t *list,
			 const struct scenario__list *l, const struct suite *s,
			 void **entries, size_t *n)
{
	size_t count;
	char *v;

	if (list->type != YAML_SEQUENCE_NODE)
		return scenario__error(c, list, "'%s' must be a list, got %s",
				       l->key, scenario__kind(list));
	count = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
	if (l->min && (count < l->min || count > l->max))
		return scenario__error(c, list,
				       "'%s' must have %zu to %zu entries, got %zu",
				       l->key, l->min, l->max, count);
	if (count > l->max)
		return scenario__error(c, list, "'%s' has more than %zu entries",
				       l->key, l->max);
	*entries = v = calloc(count ? count : 1, l->size);
	if (!v) {
		scenario__error(c, list, "out of memory");
		return FC_NOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		yaml_node_t *node = scenario__node(c, list->data.sequence.items.start[i]);
		const char *name = v + i * l->size + l->name_at;

		*n = i + 1;
		if (!node || l->parse(c, node, v + i * l->size, s) < 0)
			return FC_USAGE;
		for (size_t j = 0; j < i; j++)
			if (strcmp(v + j * l->size + l->name_at, name) == 0)
				return scenario__error(c, scenario__map_get(c, node, "name", NULL),
						       "duplicate %s name '%s' (first at line %d)",
						       l->noun, name,
						       *(const int *)(v + j * l->size + l->line_at));
	}
	return 0;
}

int scenario__get_strv(struct yctx *c, yaml_node_t *n, const char *key,
		       size_t min_items, size_t max_items,
		       int (*check)(struct yctx *, yaml_node_t *, const char *),
		       char ***out)
{
	size_t count, i = 0;
	char **v;

	if (c->failed)
		return FC_USAGE;
	if (n->type != YAML_SEQUENCE_NODE)
		return scenario__error(c, n, "'%s' must be a list, got %s", key,
				       scenario__kind(n));
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count < min_items || count > max_items)
		return scenario__error(c, n,
				       "'%s' must have %zu to %zu entries, got %zu",
				       key, min_items, max_items, count);
	v = calloc(count + 1, sizeof(*v));
	if (!v) {
		scenario__error(c, n, "out of memory");
		return FC_NOMEM;
	}
	for (yaml_node_item_t *it = n->data.sequence.items.start;
	     it < n->data.sequence.items.top; it++, i++) {
		yaml_node_t *item = scenario__node(c, *it);
		int rc;

		if (!item) {
			rc = FC_USAGE;
		} else {
			rc = scenario__get_strdup(c, item, key, &v[i]);
			if (rc == 0 && check)
				rc = check(c, item, v[i]);
		}
		if (rc < 0) {
			scenario__strv_free(v);
			return rc;
		}
	}
	*out = v;
	return 0;
}
