/*
 * pg_server.h -- the PostgreSQL server of the tests that need one
 * (test_fence_pg.c, test_route_pg.c): $FENCECERT_PG_URL when it is set,
 * else a private server started with ci/pg-up in a temp dir and stopped by
 * pg_server_release().  Each target gets a schema of its own
 * ("fc_<tag>_PID_N"); pg_server_release() drops them all.
 */
#ifndef FENCECERT_TESTS_PG_SERVER_H
#define FENCECERT_TESTS_PG_SERVER_H

#include <stddef.h>

/* The server's URL, or NULL (with a line on stdout saying why the caller
 * should skip) when none is set and ci/pg-up cannot start one. */
const char *pg_server_url(void);

/* A URL on the server for a fresh schema, plus "&extra" when extra is
 * given; the schema name goes to schema (64 bytes) when not NULL. */
void pg_server_target(const char *tag, const char *extra, char *url,
		      size_t len, char *schema);

/* Run "ci/SCRIPT DIR" (pg-up, pg-down); for pg-up the URL it prints goes
 * to url.  0 on success. */
int pg_server_script(const char *script, const char *dir, char *url,
		     size_t len);

/* Drop the schemas, stop a server we started; 0 when all went well. */
int pg_server_release(void);

#endif
