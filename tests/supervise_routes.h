/*
 * supervise_routes.h -- what test_supervise and test_supervise_forksrv
 * share: the test binary as its own route (re-executed, or spawned by its
 * fork server, with "child MODE"), starting it, waiting for its events,
 * and finding processes by a marker in their environment.
 *
 * Each test binary's main() calls fork_server_serve() first (it is a fork
 * server too), then svt_start().
 */
#ifndef FENCECERT_TESTS_SUPERVISE_ROUTES_H
#define FENCECERT_TESTS_SUPERVISE_ROUTES_H

#include <stdbool.h>
#include <sys/types.h>

#include "harness/proc/supervise.h"

extern char svt_self_exe[4096];  /* this binary */
extern bool svt_use_forksrv;     /* svt_spawn_mode() goes through the server */
extern char svt_tmp_dir[];       /* the tests' scratch directory */

/* true when main() must return *status now: this process is a child route
 * ("child MODE"), or the set-up (self_exe, svt_tmp_dir) failed. */
bool svt_start(int argc, char **argv, int *status);

/* argv (4 slots) for "child MODE" of this binary; returns argv[0]. */
char *svt_argv_for(const char *mode, char **argv);

/* Spawn "child MODE" (failpoint channel when fp), asserting success. */
sv_proc *svt_spawn_mode(supervisor *sv, const char *mode, bool fp,
			long long timeout, char **env);

/* The next event of p, within 20 s; other processes' events are dropped. */
void svt_next_event(supervisor *sv, sv_proc *p, struct sv_event *ev);

/* The state letter of pid in /proc (0 when gone). */
char svt_proc_state(pid_t pid);

/* Live (non-zombie) processes whose environment holds needle; and the
 * same, waited for to reach 0 for up to ms (the count left). */
int svt_count_marked(const char *needle);
int svt_wait_unmarked(const char *needle, long long ms);

/* A forked harness spawns req; once `marked` processes carry the marker
 * it dies by SIGKILL, and none of them may survive.  harness_marked: the
 * marker is in the harness's environment, passed on to what it starts
 * (supervisor_pass_env()). */
void svt_sigkill_supervisor(char *marker, const struct sv_spawn *req,
			    int marked, bool harness_marked);

/* The fencecert binary ($FENCECERT, else build/fencecert); skips the
 * test when there is none. */
const char *svt_fencecert(void);

/* Start `BIN certify SUITE --out OUT --work-dir svt_tmp_dir --jobs 2` in
 * the background, output discarded, env (NAME=VALUE, or NULL) added to its
 * environment and passed on to its routes (--pass-env NAME); its pid. */
pid_t svt_certify_bg(const char *bin, const char *suite, const char *out,
		     char *env);

/* With at least `marked` processes carrying marker, SIGKILL pid (a
 * harness) and reap it: within 10 s no marked process may be left. */
void svt_kill_leaves_none(pid_t pid, const char *marker, int marked);

/* cmocka group set-up/teardown: spawn through the fork server from now
 * on; remove svt_tmp_dir. */
int svt_forksrv_on(void **state);
int svt_teardown_dir(void **state);

#endif
