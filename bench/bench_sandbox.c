/*
 * bench_sandbox.c -- what the sandbox costs an attempt (issue 30): the
 * same attempt spawned through the supervisor sandboxed (user, PID and
 * mount namespaces, the mounts of common/sandbox.c, capabilities dropped:
 * an attempt with `writable` set) and contained as before the sandbox (a
 * PID namespace behind the harness's init: the same request without
 * `writable`), alternating in rounds so that both meet the same load.
 *
 * Each spawn is a whole attempt's life as the harness sees it: spawn,
 * the route's exit, the init's report, the reap.  The route is
 * `fencecert --version` exec'd (BENCH_SANDBOX_PROGRAM overrides), the
 * cheapest real program.  Printed: CPU ms per attempt of the benchmark
 * and its children (getrusage), wall ms per attempt, both medians of
 * BENCH_SANDBOX_ROUNDS (5) rounds of BENCH_SANDBOX_SPAWNS (200) each,
 * the difference (the sandbox's cost per attempt) and the ratio.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/common.h"
#include "common/clock.h"
#include "harness/proc/supervise.h"

static double cpu_s(void)
{
	struct rusage self, kids;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	return (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec +
			kids.ru_utime.tv_sec + kids.ru_stime.tv_sec) +
	       (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec +
			kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) / 1e6;
}

/* n attempts; their CPU and wall seconds.  -1 when one fails. */
static int round_of(supervisor *sv, char **argv, const char *const *w,
		    int n, double *cpu, double *wall)
{
	double c0 = cpu_s(), t0 = bench_now_s();
	char err[400];

	for (int i = 0; i < n; i++) {
		struct sv_status st;

		if (supervisor_run(sv, &(struct sv_spawn){ .argv = argv,
				   .writable = w, .timeout_ms = 10000 }, &st,
				   err, sizeof(err)) || st.end != SV_EXITED ||
		    st.code != 0) {
			fprintf(stderr, "bench_sandbox: attempt %d: %s\n", i,
				err[0] ? err : "did not exit 0");
			return -1;
		}
	}
	*cpu = cpu_s() - c0;
	*wall = bench_now_s() - t0;
	return 0;
}

int main(void)
{
	int rounds = bench_env_int("BENCH_SANDBOX_ROUNDS", 5);
	int n = bench_env_int("BENCH_SANDBOX_SPAWNS", 200);
	const char *prog = getenv("BENCH_SANDBOX_PROGRAM");
	char dir[] = "/tmp/fc-bench-sandbox-XXXXXX", err[256];
	char *argv[3] = { NULL, (char *)"--version", NULL };
	const char *w[2] = { dir, NULL };
	double sb_cpu[64], pid_cpu[64], sb_wall[64], pid_wall[64];
	supervisor *sv;

	if (rounds > 64)
		rounds = 64;
	argv[0] = (char *)(prog ? prog : getenv("FENCECERT") ?
			   getenv("FENCECERT") : "build/fencecert");
	if (!mkdtemp(dir) || supervisor_new(&sv, err, sizeof(err))) {
		fprintf(stderr, "bench_sandbox: cannot start: %s\n", err);
		return 1;
	}
	if (supervisor_containment(NULL, 0) != CHILD_CONTAIN_SANDBOX) {
		printf("sandbox cost per attempt: not measured (no sandbox "
		       "here: %s)\n", supervisor_containment_name(
			       supervisor_containment(NULL, 0)));
		supervisor_free(sv);
		rmdir(dir);
		return 0;
	}
	for (int r = 0; r < rounds; r++)
		if (round_of(sv, argv, w, n, &sb_cpu[r], &sb_wall[r]) ||
		    round_of(sv, argv, NULL, n, &pid_cpu[r], &pid_wall[r])) {
			supervisor_free(sv);
			return 1;
		}
	supervisor_free(sv);
	rmdir(dir);
	{
		double sc = bench_median(sb_cpu, rounds) * 1e3 / n;
		double pc = bench_median(pid_cpu, rounds) * 1e3 / n;
		double sw = bench_median(sb_wall, rounds) * 1e3 / n;
		double pw = bench_median(pid_wall, rounds) * 1e3 / n;

		printf("attempt of '%s --version', %d rounds x %d, median:\n",
		       argv[0], rounds, n);
		printf("  PID namespace only: %.3f ms CPU, %.3f ms wall\n", pc, pw);
		printf("  sandboxed:          %.3f ms CPU, %.3f ms wall\n", sc, sw);
		printf("sandbox cost per attempt: %+.3f ms CPU (%.2fx), %+.3f ms "
		       "wall (%.2fx)\n", sc - pc, sc / pc, sw - pw, sw / pw);
	}
	return 0;
}
