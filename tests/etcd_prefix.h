/*
 * etcd_prefix.h -- cleaning up after the etcd tests: every key under a
 * test's prefix goes, in one txn (best effort: a server that is gone
 * leaves them, and the caller has nothing to do about it).
 */
#ifndef FENCECERT_TESTS_ETCD_PREFIX_H
#define FENCECERT_TESTS_ETCD_PREFIX_H

/* Delete PREFIX/... on the members HOST:PORT[,HOST:PORT...]. */
void etcd_test_delete_prefix(const char *members, const char *prefix);

#endif
