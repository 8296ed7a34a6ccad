/*
 * dl_pq.h -- libpq, opened on first use (see dl.h).
 *
 * Callers include <libpq-fe.h> and call PQ* as usual; dl_pq.c defines the
 * functions fencecert uses and forwards them to libpq.so.5 (or the file
 * named by FENCECERT_LIBPQ).  Call dl_pq_load() before the first PQ* call
 * of a code path, so that a missing libpq is reported as such rather than
 * as a NULL connection.
 */
#ifndef FENCECERT_DL_PQ_H
#define FENCECERT_DL_PQ_H

#include <stddef.h>

#include "common/error.h"

/* 0, or FC_JOURNAL_UNAVAILABLE with "cannot load libpq (...): ..." in err. */
int dl_pq_load(char *err, size_t errlen) FC_MUST_CHECK;

#endif
