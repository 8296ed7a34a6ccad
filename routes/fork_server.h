/*
 * fork_server.h -- the route side of the fork server (docs/fork-server.md).
 *
 * A route declared with `fork_server: true` is started once per harness
 * worker with PROTO_ENV_FORK_SERVER_FD naming a SOCK_SEQPACKET unix socket.
 * The program initialises what does not depend on an attempt, says hello,
 * and then serves spawn requests: for each one it clones a child with
 * CLONE_PARENT (so the attempt is the harness's own child), and the child
 * sets itself up exactly as an exec'd attempt would be (child_setup_clone(),
 * common/child_setup.h) and carries on in the program's main with the
 * request's argv.
 *
 * Owns: the server loop and its clones.  The wire format is the
 * protocol's (common/protocol.h, "the fork server"); the harness's side is
 * harness/proc/supervise_forksrv.c, which shares only that header and
 * common/fds.h with this module.
 *
 * Who includes it: a route program's main() (cli/main.c) and tests.
 *
 * Invariants (fork_server.c lists them all): the server stays
 * single-threaded, since each child is a clone of it; between two clones
 * it writes no page a child inherits.  Not thread-safe.
 */
#ifndef FENCECERT_FORK_SERVER_H
#define FENCECERT_FORK_SERVER_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Call first thing in main().  Without FENCECERT_FORK_SERVER_FD returns 0
 * at once, having done nothing.  With it the process becomes a fork server:
 * calls warm_up (may be NULL; one-time initialisation only, see
 * docs/fork-server.md for what it must not do), says hello and serves
 * requests until the harness closes the socket, then exits 0 -- it never
 * returns in the server.  It returns 0 in each spawned child, with *argc
 * and *argv replaced by the request's (heap copies that live as long as
 * the process) and environ by the request's environment.
 */
int fork_server_serve(int *argc, char ***argv, void (*warm_up)(void));

/* In a spawned child: the pid of the server that cloned it; 0 in a
 * process that was exec'd. */
pid_t fork_server_pid(void);

#endif
