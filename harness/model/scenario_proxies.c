/*
 * scenario_proxies.c -- the suite's `proxies:` list: fault proxies
 * (tcp_proxy.h) that every schedule starts in front of a server, named in
 * templates as {proxy:NAME} and in faults as `proxy: NAME`.
 *
 * Invariants:
 *   1. Names are unique and follow the name rule, so a schedule string can
 *      carry them ("=NAME").
 *   2. An upstream is a template that may name services and environment
 *      variables but not a proxy (a proxy in front of itself).
 */
#include <stdlib.h>
#include <string.h>

#include "harness/model/scenario_impl.h"

static const char *const proxy_keys[] = { "name", "upstream", NULL };

#define SUITE_MAX_PROXIES 8

const struct proxy_spec *suite_proxy(const struct suite *s, const char *name)
{
	for (size_t i = 0; i < s->nproxies; i++)
		if (strcmp(s->proxies[i].name, name) == 0)
			return &s->proxies[i];
	return NULL;
}

static int parse_proxy(struct yctx *c, yaml_node_t *n, struct proxy_spec *px)
{
	char msg[256];
	yaml_node_t *v;

	px->line = (int)n->start_mark.line + 1;
	px->column = (int)n->start_mark.column + 1;
	if (scenario__map_check(c, n, proxy_keys, "proxy") < 0 ||
	    scenario__map_need(c, n, "name", "proxy", &v) < 0 ||
	    scenario__get_name(c, v, "name", px->name) < 0 ||
	    scenario__map_need(c, n, "upstream", "proxy", &v) < 0 ||
	    scenario__get_strdup(c, v, "upstream", &px->upstream) < 0)
		return FC_USAGE;
	if (!px->upstream[0])
		return scenario__error(c, v, "'upstream' must not be empty");
	if (strstr(px->upstream, "{proxy:"))
		return scenario__error(c, v, "a proxy's upstream cannot be a proxy");
	if (scenario__template_check(c->suite, px->upstream, msg, sizeof(msg)) < 0)
		return scenario__error(c, v, "%s", msg);
	return 0;
}

int scenario__parse_proxies(struct yctx *c, yaml_node_t *list, struct suite *s)
{
	size_t count;

	if (list->type != YAML_SEQUENCE_NODE)
		return scenario__error(c, list, "'proxies' must be a list, got %s",
				       scenario__kind(list));
	count = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
	if (count > SUITE_MAX_PROXIES)
		return scenario__error(c, list, "'proxies' has more than %d entries",
				       SUITE_MAX_PROXIES);
	s->proxies = calloc(count ? count : 1, sizeof(*s->proxies));
	if (!s->proxies) {
		scenario__error(c, list, "out of memory");
		return FC_NOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		yaml_node_t *n = scenario__node(c, list->data.sequence.items.start[i]);
		struct proxy_spec *px = &s->proxies[i];

		s->nproxies = i + 1; /* so suite_free releases a half-built one */
		if (!n || parse_proxy(c, n, px) < 0)
			return FC_USAGE;
		for (size_t j = 0; j < i; j++)
			if (strcmp(s->proxies[j].name, px->name) == 0)
				return scenario__error(c, scenario__map_get(c, n, "name", NULL),
						       "duplicate proxy name '%s' (first at line %d)",
						       px->name, s->proxies[j].line);
	}
	return 0;
}
