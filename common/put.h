/*
 * put.h -- snprintf into a fixed buffer where cutting the text short is
 * intended (details, messages and names bounded on purpose), without the
 * compiler's truncation warnings at every call site.
 *
 * Included by anything that builds bounded text (the checker, the
 * orchestrator, the report writer).
 */
#ifndef FENCECERT_PUT_H
#define FENCECERT_PUT_H

#include <stddef.h>

void put(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
