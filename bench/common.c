/*
 * common.c -- helpers shared by the C benchmarks (common.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/common.h"

double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int bench_env_int(const char *name, int def)
{
	const char *v = getenv(name);
	int n = v ? atoi(v) : 0;

	return n > 0 ? n : def;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum fc_state bench_next_state(enum fc_state s)
{
	return s == FC_PREPARING ? FC_PREPARED :
	       s == FC_PREPARED ? FC_FAILED_PRE_COMMIT : FC_PREPARING;
}

static void member_path(const struct bench_service *s, char *out, size_t len)
{
	snprintf(out, len, "%s%s%s", s->dir, s->sub[0] ? "/" : "", s->sub);
}

int bench_service_up(struct bench_service *s, char *line, size_t len)
{
	char cmd[256], path[128];
	FILE *p;
	int rc;

	snprintf(s->dir, sizeof(s->dir), "/tmp/fc-%s-bench-XXXXXX", s->kind);
	if (!mkdtemp(s->dir))
		return -1;
	member_path(s, path, sizeof(path));
	snprintf(cmd, sizeof(cmd), "ci/%s-up '%s'", s->kind, path);
	if (!(p = popen(cmd, "r")))
		return -1;
	if (!fgets(line, (int)len, p))
		line[0] = '\0';
	rc = pclose(p);
	s->started = 1; /* a half-started server is stopped too */
	if (rc != 0 || !line[0])
		return -1;
	line[strcspn(line, "\n")] = '\0';
	return 0;
}

void bench_service_down(struct bench_service *s)
{
	char cmd[320], path[128];

	if (!s->started)
		return;
	member_path(s, path, sizeof(path));
	snprintf(cmd, sizeof(cmd), "ci/%s-down '%s' && rm -rf '%s'", s->kind,
		 path, s->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: cannot stop the %s server in '%s'\n",
			s->kind, s->dir);
	s->started = 0;
}
