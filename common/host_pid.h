/*
 * host_pid.h -- this process's pid as the outermost PID namespace sees it.
 *
 * Owns: telling processes apart across PID namespaces.  A contained
 * attempt runs in a PID namespace of its own (docs/harness.md,
 * "Containment"), where getpid() is the same small number in every
 * attempt; what must differ between processes (the etcd member a process
 * starts at, `first=pid`) asks here instead.
 *
 * Who includes it: journal/ and fences/ (etcd URL options).
 */
#ifndef FENCECERT_HOST_PID_H
#define FENCECERT_HOST_PID_H

/* The first pid of the NSpid line of /proc/self/status (the outermost
 * namespace's), or getpid() when that cannot be read. */
long host_pid(void);

#endif
