/*
 * etcd_server.h -- the etcd of the tests that need one (test_journal_etcd.c,
 * test_fence_etcd.c): the members $FENCECERT_ETCD_URL names, else a private
 * one-member server started with ci/etcd-up in a temp dir and stopped by
 * etcd_server_release().  Every key a test writes lives under
 * etcd_server_base(), which the release deletes.  Also the raw client
 * calls and ci/ script wrappers those tests share.
 */
#ifndef FENCECERT_TESTS_ETCD_SERVER_H
#define FENCECERT_TESTS_ETCD_SERVER_H

#include <stddef.h>

/*
 * Find or start the server.  tag names this test's key base
 * ("PREFIX/<tag>run-PID"); usable (may be NULL) vets an external server,
 * which is passed over for a private one when it answers 0.  0 on
 * success, -1 with a message on stderr.
 */
int etcd_server_setup(const char *tag, int (*usable)(const char *hosts));

/* Delete the base, stop what we started, remove the temp dir. */
void etcd_server_release(void);

const char *etcd_server_members(void); /* "host:port[,...]" */
const char *etcd_server_base(void);
const char *etcd_server_dir(void);     /* temp dir for extra clusters */

/* Run a shell command; its first output line into out (may be NULL);
 * the command's exit status. */
int etcd_test_run(const char *cmd, char *out, size_t outlen);

/* ci/etcd-up DIR --members n; "host:port,..." into out.  0 on success. */
int etcd_test_up(const char *dir, int n, char *out, size_t outlen);

/* ci/etcd-member DIR ACTION NAME (stop, start). */
int etcd_test_member(const char *dir, const char *action, const char *name);

/* Delete every key under prefix + "/" through a raw client. */
void etcd_test_delete_prefix(const char *hosts, const char *prefix);

/* A raw read of one key: its value (malloc'd) or NULL; fails the test
 * when the server cannot be read. */
char *etcd_test_raw_get(const char *hosts, const char *key);

long long etcd_test_mono_ms(void);

/* rm -rf dir */
void etcd_test_rm_tree(const char *dir);

#endif
