/*
 * array.h -- room for one more item in a heap array that doubles as it
 * grows: the row lists the journal adapters and the target observers
 * build while they read.
 *
 * Who includes it: anything (it is in common/).  It depends on
 * common/error.h only and keeps no state.
 */
#ifndef FENCECERT_ARRAY_H
#define FENCECERT_ARRAY_H

#include <stddef.h>

#include "common/error.h"

/*
 * Make room for item n of *arr, an array of elem-byte items with room for
 * *cap of them.  Nothing happens while n < *cap; otherwise the room
 * doubles (to `first` items when there is none yet).  0, or FC_NOMEM with
 * *arr and *cap as they were.
 */
int array_grow(void **arr, size_t *cap, size_t n, size_t elem, size_t first)
	FC_MUST_CHECK;

#endif
