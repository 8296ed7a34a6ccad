/*
 * fence_conformance.h -- the one test suite every fence must pass
 * (fence.h invariants 1-6), run against real targets in temp directories.
 *
 * A backend test fills a struct fence_conformance and calls
 * fence_conformance_run() from main(); the suite needs nothing else of the
 * backend: it drives the fence through fence.h and checks the target through
 * the read-only observer (fences/target.h), never through the fence's own
 * records.  To test a new fence, describe how to make a fresh target URL and
 * an unreachable one; see docs/fence-author-guide.md.
 *
 * FENCECERT_TEST_SEED (decimal) reseeds the kill-point schedule; the seed in
 * use is printed so a failure can be replayed.
 */
#ifndef FENCECERT_TESTS_FENCE_CONFORMANCE_H
#define FENCECERT_TESTS_FENCE_CONFORMANCE_H

#include <stddef.h>

struct fence_conformance {
	const char *name; /* shown in the cmocka group name */

	/* Write into url (len bytes) the URL of a fresh, empty target that
	 * lives inside dir, an empty temp directory the suite removes. */
	void (*fresh_url)(const char *dir, char *url, size_t len);

	/* Write the URL of a target under dir that cannot be reached (a path
	 * below a regular file, say); the suite creates nothing for it. */
	void (*unreachable_url)(const char *dir, char *url, size_t len);

	int supports_replace; /* 0: REPLACE must be refused with FC_USAGE */

	/* Largest batch the target takes in one atomic commit; the big-batch
	 * and kill tests use min(this, their own size).  0: no limit. */
	size_t max_rows;
};

/* Run the suite; returns the number of failed tests (0 = pass). */
int fence_conformance_run(const struct fence_conformance *c);

/*
 * Helpers the backend-specific tests share with the suite.
 */

/* "sha256:" id derived from a label, as operation ids look in practice. */
void conformance_id(const char *label, char out[80]);

/* A batch of n rows keyed "<prefix>-<i>" with payloads that need CSV
 * quoting; release with conformance_batch_release(). */
struct conformance_batch;
struct conformance_batch *conformance_batch_new(const char *op,
						const char *intent,
						const char *prefix, size_t n);
const struct fence_batch *conformance_batch(struct conformance_batch *cb);
void conformance_batch_release(struct conformance_batch *cb);

/* Rows the observer sees in `table` (NULL: default) carrying op (NULL:
 * all rows); -1 when the observer fails. */
long long conformance_rows(const char *url, const char *table,
			   const char *op);

/* Distinct row keys whose count (over all operations) exceeds one. */
long long conformance_duplicate_keys(const char *url, const char *table);

/* mkdtemp under $TMPDIR (or /tmp) into dir (CONFORMANCE_DIR_MAX bytes,
 * short enough that any test path built on it fits in CONFORMANCE_PATH_MAX);
 * rm -rf with rmtree(). */
#define CONFORMANCE_DIR_MAX 200
#define CONFORMANCE_PATH_MAX 512
void conformance_tempdir(char dir[CONFORMANCE_DIR_MAX]);
void conformance_rmtree(const char *dir);

#endif
