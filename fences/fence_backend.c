/*
 * fence_backend.c -- what the port lends every fence backend
 * (fence_impl.h): the error slot of a handle.
 *
 * It sits below both the port (fence.c, which dispatches to the backends)
 * and the backends, so neither calls back into the other.
 */
#include <stdarg.h>
#include <stdio.h>

#include "fences/fence_impl.h"

int fence__fail(fence *f, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->errmsg, sizeof(f->errmsg), fmt, ap);
	va_end(ap);
	return code;
}
