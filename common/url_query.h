/*
 * url_query.h -- a URL's query split between fencecert and the library
 * that reads the rest: fencecert's own parameters (schema=, timeout_ms=
 * of a PostgreSQL session; fence=, probe= of a PostgreSQL target) are
 * taken off before libpq sees the URL, which refuses what it does not
 * know.
 *
 * Who includes it: anything (it is in common/); today pg_session.c and
 * fences/fence_pg_url.c.  It depends on nothing and keeps no state.
 */
#ifndef FENCECERT_URL_QUERY_H
#define FENCECERT_URL_QUERY_H

#include <stddef.h>

/* One query item, len bytes at item (not NUL-terminated): 1 takes it off
 * the URL, 0 leaves it there, a negative error stops the split. */
typedef int url_query_take_fn(void *ctx, const char *item, size_t len);

/*
 * Write into out (room for strlen(url) + 1 bytes) url without the query
 * items take() takes and without empty items: what is left keeps its
 * order, behind '?' and '&'.  Returns 0, or take()'s error; out is a
 * string either way (on an error, the URL as far as it got).
 */
int url_query_split(const char *url, char *out, url_query_take_fn *take,
		    void *ctx);

#endif
