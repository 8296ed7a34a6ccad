/* array.c -- see array.h. */
#include <stdint.h>
#include <stdlib.h>

#include "common/array.h"

int array_grow(void **arr, size_t *cap, size_t n, size_t elem, size_t first)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : first;
	if (ncap > SIZE_MAX / elem || !(p = realloc(*arr, ncap * elem)))
		return FC_NOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}
