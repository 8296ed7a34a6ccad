/*
 * suite.c -- the loaded suite as an object: the lookups the loader, the
 * templates and the run make in it, and its release.
 *
 * The loader (scenario.c, scenario_faults.c) builds a struct suite; this
 * file only reads one and frees it, so the loader, the template checker
 * and the schedule runner can all use it without calling each other.
 *
 * Invariant: suite_free() releases a half-built suite too (the loader
 * counts an entry in nroutes / nscenarios / nproxies before parsing it,
 * and every pointer of an entry is NULL until it is set).
 */
#include <stdlib.h>
#include <string.h>

#include "harness/model/scenario_impl.h"

const struct service_spec *suite_service(const struct suite *s,
					 const char *name)
{
	const struct service_spec *only = NULL;
	size_t netcd = 0;

	for (size_t i = 0; i < s->nservices; i++) {
		const struct service_spec *sv = &s->services[i];
		if (name && *name && strcmp(sv->name, name) == 0)
			return sv;
		if (sv->kind == SERVICE_ETCD && netcd++ == 0)
			only = sv;
	}
	return (!name || !*name) && netcd == 1 ? only : NULL;
}

const struct proxy_spec *suite_proxy(const struct suite *s, const char *name)
{
	for (size_t i = 0; i < s->nproxies; i++)
		if (strcmp(s->proxies[i].name, name) == 0)
			return &s->proxies[i];
	return NULL;
}

bool scenario_applies_to(const struct scenario *sc, const char *route)
{
	if (!sc->routes)
		return true;
	for (char **r = sc->routes; *r; r++)
		if (strcmp(*r, route) == 0)
			return true;
	return false;
}

/* Release what one scenario owns (not the struct itself). */
static void scenario_release(struct scenario *sc)
{
	free(sc->faults);
	scenario__strv_free(sc->routes);
	if (sc->explore) {
		scenario__strv_free(sc->explore->failpoints);
		scenario__strv_free(sc->explore->syscalls);
		scenario__strv_free(sc->explore->sys_actions);
		scenario__strv_free(sc->explore->sys_paths);
	}
	free(sc->explore);
}

void suite_free(struct suite *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nroutes; i++) {
		struct route_spec *r = &s->routes[i];

		scenario__strv_free(r->command);
		scenario__strv_free(r->writable);
		free(r->journal);
		free(r->target);
		free(r->observe_sql);
		scenario__strv_free(r->observe_command);
		scenario__strv_free(r->env);
	}
	free(s->routes);
	free(s->services);
	for (size_t i = 0; i < s->nproxies; i++)
		free(s->proxies[i].upstream);
	free(s->proxies);
	for (size_t i = 0; i < s->nscenarios; i++)
		scenario_release(&s->scenarios[i]);
	free(s->scenarios);
	free(s->path);
	free(s);
}
