/*
 * fence_impl.h -- what fence backends see of struct fence, and the ops
 * table each backend fills.  Only fences/ includes this file: fence.c
 * (the port), fence_backend.c (the error slot it lends the backends), the
 * backends fence_<backend>*.c, and (through fence_pg_impl.h) the
 * PostgreSQL observer target_pg.c.
 *
 * A backend may rely on fence.c having validated every request (fence.c,
 * invariant 1) and having cleared f->errmsg; it records its failures with
 * fence__fail().  The optional ops (in_doubt, resolve_in_doubt) are set
 * exactly when `features` has FENCE_HAS_IN_DOUBT; a backend claiming
 * FENCE_CAN_SKIP_SYNC leaves out every fsync while f->no_sync is set.
 */
#ifndef FENCECERT_FENCE_IMPL_H
#define FENCECERT_FENCE_IMPL_H

#include "fences/fence.h"

/*
 * A backend with several fence kinds behind one scheme (postgresql: pg-txn,
 * pg-2pc) may set f->ops to a sibling table in open(): the siblings share
 * open and close, and fence_name() then names the kind the URL chose.
 */
struct fence_ops {
	const char *scheme; /* URL prefix before ':' */
	const char *name;
	enum fence_capability capability;
	int (*open)(fence *f, const char *url);
	void (*close)(void *impl);
	int (*prepare)(fence *f, const char *op, long long epoch);
	int (*apply)(fence *f, long long epoch, const struct fence_batch *b,
		     enum fence_outcome *outcome);
	int (*probe)(fence *f, const char *op, struct fence_probe *out);
	unsigned features; /* enum fence_feature bits */
	int (*in_doubt)(fence *f, const char *op, int *n);
	int (*resolve_in_doubt)(fence *f, const char *op, int commit, int *n);
};

struct fence {
	const struct fence_ops *ops;
	void *impl;
	int hands_off;      /* fence_hands_off(): the probe settles nothing */
	int no_sync;        /* fence_skip_sync(): nothing is fsynced */
	char errmsg[512];
};

int fence__fail(fence *f, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

extern const struct fence_ops fence_sqlite_ops;
extern const struct fence_ops fence_fs_ops;
extern const struct fence_ops fence_etcd_ops;
extern const struct fence_ops fence_pg_txn_ops;   /* postgresql:// */
extern const struct fence_ops fence_pg_short_ops; /* postgres:// */
extern const struct fence_ops fence_pg_2pc_ops;   /* chosen by pg_open() */

#endif
