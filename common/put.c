/* put.c -- see put.h. */
#include <stdarg.h>
#include <stdio.h>

#include "common/put.h"

void put(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, len, fmt, ap);
	va_end(ap);
}
