/*
 * watchdog.h -- the process that kills a supervisor's process groups when
 * the supervisor dies, however it dies.
 *
 * watchdog_start() forks a small process (its own process group, terminal
 * signals ignored, every fd but its socket closed) and keeps the other end
 * of a socket.  The supervisor tells it each process group it creates and
 * each group that has become empty.  When the socket reaches EOF -- the
 * supervising process exited, crashed or was SIGKILLed -- the watchdog
 * SIGKILLs every group still registered and exits.  It needs no privilege.
 *
 * Who includes it: the supervisor (supervise_impl.h), which owns the one
 * watchdog of a process.
 *
 * Invariants: the watchdog holds nothing but its end of the socket (so EOF
 * means exactly "the supervisor is gone"), sits in its own process group
 * ignoring terminal signals, and signals only groups it was told about and
 * not yet told are empty.
 *
 * Caller-allocated: watchdog_start() fills *w, watchdog_stop() closes the
 * socket and reaps the process.
 */
#ifndef FENCECERT_WATCHDOG_H
#define FENCECERT_WATCHDOG_H

#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

struct watchdog {
	int fd;    /* registration socket; -1 when stopped */
	pid_t pid;
};

int watchdog_start(struct watchdog *w, char *err, size_t errlen) FC_MUST_CHECK;

/* Register / forget a process group.  Best effort: a watchdog that is gone
 * cannot be told, and the children still die of PDEATHSIG. */
void watchdog_register(struct watchdog *w, pid_t pgid);
void watchdog_unregister(struct watchdog *w, pid_t pgid);

/* Close the socket (the watchdog kills what is still registered) and reap
 * it.  A stopped watchdog is a no-op. */
void watchdog_stop(struct watchdog *w);

#endif
