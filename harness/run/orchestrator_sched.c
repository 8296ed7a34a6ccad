/*
 * orchestrator_sched.c -- the schedule context every part of the
 * orchestrator reports to (orchestrator_sched.h).  Nothing here starts a
 * process or waits: these are the record's writers and the fault
 * predicates, so the loop and the fault families can share them without
 * calling each other.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "harness/proc/supervise.h"
#include "harness/run/orchestrator_sched.h"

long long orch__elapsed_ms(const struct orch_sched *s)
{
	return clock_mono_ms() - s->t0;
}

void orch__trouble(struct orch_sched *s, int code, const char *fmt, ...)
{
	va_list ap;

	if (s->rec->status)
		return;
	s->rec->status = code;
	va_start(ap, fmt);
	vsnprintf(s->rec->error, sizeof(s->rec->error), fmt, ap);
	va_end(ap);
}

void orch__state_refused(struct orch_sched *s, const char *why)
{
	if (!s->rec->snaps_refused++)
		snprintf(s->rec->refused_why, sizeof(s->rec->refused_why), "%s",
			 why);
}

void orch__fail(struct orch_sched *s, int code, const char *fmt, ...)
{
	va_list ap;

	if (s->fatal)
		return;
	s->fatal = code;
	va_start(ap, fmt);
	vsnprintf(s->fatal_msg, sizeof(s->fatal_msg), fmt, ap);
	va_end(ap);
}

void orch__out_of_memory(struct orch_sched *s)
{
	orch__fail(s, FC_NOMEM, "out of memory running schedule");
}

void orch__note_applied(struct orch_sched *s, int fault, int attempt, int op,
			const char *fmt, ...)
{
	struct rec_applied *ap = RECORD_PUSH(s->rec->applied, s->rec->napplied);
	va_list va;

	if (!ap) {
		orch__out_of_memory(s);
		return;
	}
	ap->fault = fault;
	ap->attempt = attempt;
	ap->operation = op;
	ap->at_ms = orch__elapsed_ms(s);
	va_start(va, fmt);
	vsnprintf(ap->what, sizeof(ap->what), fmt, va);
	va_end(va);
}

char *orch__op_path(const struct orch_sched *s, int op, const char *fmt, ...)
{
	char tail[128], *out;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tail, sizeof(tail), fmt, ap);
	va_end(ap);
	if (asprintf(&out, "%s/op%d%s%s", s->p->dir, op, *tail ? "/" : "",
		     tail) < 0)
		return NULL;
	return out;
}

/* {proxy:NAME} as the harness reaches the server: its upstream. */
struct orch_upstreams {
	const struct suite *suite;
	char **url;              /* per suite proxy, expanded */
};

static const char *upstream_of(const void *ctx, const char *name)
{
	const struct orch_upstreams *u = ctx;

	for (size_t i = 0; i < u->suite->nproxies; i++)
		if (strcmp(u->suite->proxies[i].name, name) == 0)
			return u->url[i];
	return NULL;
}

void orch__upstreams_free(struct orch_upstreams *u)
{
	if (!u)
		return;
	for (size_t i = 0; u->url && i < u->suite->nproxies; i++)
		free(u->url[i]);
	free(u->url);
	free(u);
}

int orch__harness_vars(const struct orch_sched *s, struct template_vars *v,
		       struct orch_upstreams **u, char *err, size_t errlen)
{
	const struct suite *suite = s->p->suite;
	struct orch_upstreams *up = calloc(1, sizeof(*up));
	int rc = 0;

	*u = NULL;
	*v = s->vars;
	if (!up || !(up->url = calloc(suite->nproxies + 1, sizeof(*up->url)))) {
		free(up);
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	up->suite = suite;
	v->proxy = NULL; /* an upstream names no proxy */
	for (size_t i = 0; i < suite->nproxies && !rc; i++)
		rc = scenario_expand(suite->proxies[i].upstream, v, &up->url[i],
				     err, errlen);
	if (rc) {
		orch__upstreams_free(up);
		return rc;
	}
	v->proxy = upstream_of;
	v->proxy_ctx = up;
	*u = up;
	return 0;
}


const char *orch__self_exe(void)
{
	static char path[4096];

	if (!path[0]) {
		static const char gone[] = " (deleted)";
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
		size_t len;

		if (n <= 0) {
			snprintf(path, sizeof(path), "fencecert");
			return path;
		}
		path[n] = '\0';
		/* rebuilt while we run: the new binary is at the same path */
		len = (size_t)n;
		if (len > sizeof(gone) - 1 &&
		    strcmp(path + len - (sizeof(gone) - 1), gone) == 0)
			path[len - (sizeof(gone) - 1)] = '\0';
	}
	return path;
}

bool orch__fault_for_op(const struct fault *f, int op)
{
	return f->operation == 0 || f->operation == op;
}

bool orch__fault_here(const struct fault *f, int op, int k, const char *fp,
		      int nth)
{
	return fault_at_failpoint(f) && f->attempt == k &&
	       orch__fault_for_op(f, op) && strcmp(f->failpoint, fp) == 0 &&
	       (f->hit ? f->hit : 1) == nth;
}
