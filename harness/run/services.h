/*
 * services.h -- the servers a suite declares (`services:`), started by the
 * harness before the first schedule and torn down after the last.
 *
 * Kinds: `etcd` (1 or 3 members, through ci/etcd-up; members are named
 * m1, m2, m3 and can be stopped and started by name through
 * ci/etcd-member) and `postgresql` (through ci/pg-up, unless the
 * environment variable the entry names is set: then that server is used
 * and nothing is started).  The scripts are found in $FENCECERT_CI_DIR,
 * else in DIR/ci, DIR/../ci or DIR/../share/fencecert/ci for DIR = the
 * directory of this executable (build/fencecert -> ci/; make install),
 * else in ./ci.
 *
 * Address of a service, for `{service:NAME}` in route templates:
 * etcd "127.0.0.1:P1,127.0.0.1:P2,...", postgresql its URL.
 *
 * Nothing outlives the harness.  services_start() forks a keeper process
 * that runs every script (the harness and its workers send it requests
 * over a socket pair): it has a process group of its own, which the
 * servers the scripts launch stay in, and it is a subreaper, so a server
 * whose script exited is its child.  When the socket reaches EOF --
 * services_free(), or the harness (and with it its workers) killed by any
 * signal, SIGKILL included -- it runs ci/etcd-down and ci/pg-down on what
 * was started, then SIGKILLs its whole group (a script caught half-way, a
 * stray server).  PostgreSQL's postmaster leaves the group (pg_ctl calls
 * setsid), which is why the down scripts run first.
 *
 * Schedules share the servers.  services_enter() takes a shared lock for
 * an ordinary schedule and an exclusive one for a schedule that stops or
 * starts members, so member loss never reaches a schedule that did not ask
 * for it; services_leave() restarts every stopped member (waiting until it
 * serves) before letting the others in.  Each schedule works in its own
 * namespace, {schedule_id}; services_clean() removes what is in it.
 *
 * Ownership: one heap object, used by the coordinator and (after fork) by
 * the pool's workers; services_free() in the process that started it tears
 * everything down, in a forked worker it only releases memory.
 */
#ifndef FENCECERT_SERVICES_H
#define FENCECERT_SERVICES_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "harness/model/scenario.h"

typedef struct services services; /* opaque; services.c only */

/*
 * Start every service of the suite under dir (an existing scratch dir).
 * A suite without services gives an object with none (no process).  On
 * failure everything started is torn down and *out is NULL.
 */
int services_start(const struct suite *s, const char *dir, services **out,
		   char *err, size_t errlen) FC_MUST_CHECK;

/* NULL is a no-op.  See Ownership above. */
void services_free(services *sv);

/* The address of service `name`, or NULL (fits template_vars.service;
 * ctx is the services object). */
const char *services_address(const void *ctx, const char *name);

/* Stop or start member `member` ("m2") of etcd service `service` ("":
 * the suite's only etcd service).  0 once the member is down (its process
 * gone), or up and serving a linearizable read; FC_USAGE for an unknown
 * member, FC_IO when the script failed (err says which log to read). */
int services_member(services *sv, const char *service, const char *member,
		    bool up, char *err, size_t errlen) FC_MUST_CHECK;

/* Begin a schedule: shared, or exclusive when it changes members. */
int services_enter(services *sv, bool exclusive, char *err, size_t errlen)
	FC_MUST_CHECK;

/* End it: after an exclusive schedule, start every stopped member again.
 * The lock is released in any case. */
int services_leave(services *sv, char *err, size_t errlen) FC_MUST_CHECK;

/*
 * Remove a schedule's namespace: on etcd services every key starting with
 * `schedule_id`, on postgresql services every schema whose name starts
 * with it.  Best effort for what the schedule left behind.
 */
int services_clean(services *sv, const char *schedule_id, char *err,
		   size_t errlen) FC_MUST_CHECK;

/* A fresh namespace name for a schedule: "fc_" + 12 random hex digits +
 * "_" + tag (lowercased, other characters as '_'), at most 63 bytes, so
 * it is a valid etcd prefix and PostgreSQL schema name. */
void services_schedule_id(const char *tag, char *out, size_t outlen);

#endif
