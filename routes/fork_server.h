/*
 * fork_server.h -- the route side of the fork server (docs/fork-server.md).
 *
 * A route declared with `fork_server: true` is started once per harness
 * worker with FENCECERT_FORK_SERVER_FD naming a SOCK_SEQPACKET unix socket.
 * The program initialises what does not depend on an attempt, says hello,
 * and then serves spawn requests: for each one it clones a child with
 * CLONE_PARENT (so the attempt is the harness's own child), and the child
 * sets itself up exactly as an exec'd attempt would be (own process group,
 * parent-death signal, default signals, fds 0-3, cwd, environment, seccomp
 * filter last) and carries on in the program's main with the request's argv.
 *
 * Protocol (one message per SEQPACKET record; "\0" separates fields):
 *
 *   server -> harness  "fencecert-fork-server 1"              hello, once
 *   harness -> server  "spawn\0ARGC\0ENVC\0CWD\0FP\0BPFLEN\0"
 *                      ARGV... ENV... (each NUL-terminated), then BPFLEN
 *                      bytes of a classic BPF seccomp program (struct
 *                      sock_filter[]); SCM_RIGHTS: stdin, stdout, stderr,
 *                      report, then the failpoint end if FP is 1, then the
 *                      seccomp socket if BPFLEN > 0.  CWD "" = inherit.
 *   server -> harness  "pid N" or "error ERRNO"
 *
 * The report fd is the child's: it writes its errno (an int) there and
 * _exits 127 when its setup fails, and closes it once set up (EOF = ok),
 * before it loads the seccomp filter and sends the listener over the
 * seccomp socket.
 *
 * Not thread-safe, and the server must stay single-threaded: the child is
 * a clone of it.
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
