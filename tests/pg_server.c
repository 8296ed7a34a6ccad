/*
 * pg_server.c -- see pg_server.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/pg_server.h"

#define MAX_SCHEMAS 512

static char base_url[512];
static char own_dir[64];
static char *schemas[MAX_SCHEMAS];
static int n_schemas;

int pg_server_script(const char *script, const char *dir, char *url,
		     size_t len)
{
	char cmd[256], line[512] = "";
	FILE *f;
	int status;

	snprintf(cmd, sizeof(cmd), "ci/%s '%s'", script, dir);
	if (!(f = popen(cmd, "r")))
		return -1;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	status = pclose(f);
	line[strcspn(line, "\n")] = '\0';
	if (url)
		snprintf(url, len, "%s", line);
	return status == 0 && (!url || line[0]) ? 0 : -1;
}

const char *pg_server_url(void)
{
	const char *env = getenv("FENCECERT_PG_URL");

	if (base_url[0])
		return base_url;
	if (env && *env) {
		snprintf(base_url, sizeof(base_url), "%s", env);
		return base_url;
	}
	snprintf(own_dir, sizeof(own_dir), "/tmp/fc-pg-test-XXXXXX");
	if (!mkdtemp(own_dir) ||
	    pg_server_script("pg-up", own_dir, base_url, sizeof(base_url))) {
		printf("[  SKIPPED ] FENCECERT_PG_URL is unset and ci/pg-up "
		       "cannot start a server\n");
		base_url[0] = '\0';
		return NULL;
	}
	return base_url;
}

void pg_server_target(const char *tag, const char *extra, char *url,
		      size_t len, char *schema)
{
	char name[64];

	snprintf(name, sizeof(name), "fc_%s_%ld_%d", tag, (long)getpid(),
		 n_schemas);
	if (n_schemas < MAX_SCHEMAS)
		schemas[n_schemas++] = strdup(name);
	snprintf(url, len, "%s%sschema=%s%s%s", base_url,
		 strchr(base_url, '?') ? "&" : "?", name, extra ? "&" : "",
		 extra ? extra : "");
	if (schema)
		snprintf(schema, 64, "%s", name);
}

int pg_server_release(void)
{
	PGconn *c = PQconnectdb(base_url);
	char sql[128];
	int rc = 0;

	if (PQstatus(c) == CONNECTION_OK)
		PQclear(PQexec(c, "SET client_min_messages = warning"));
	for (int i = 0; i < n_schemas; i++) {
		snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS \"%s\" CASCADE",
			 schemas[i]);
		if (PQstatus(c) == CONNECTION_OK)
			PQclear(PQexec(c, sql));
		free(schemas[i]);
	}
	n_schemas = 0;
	PQfinish(c);
	if (own_dir[0]) {
		snprintf(sql, sizeof(sql), "rm -rf '%s'", own_dir);
		if (pg_server_script("pg-down", own_dir, NULL, 0) || system(sql) != 0)
			rc = -1;
		own_dir[0] = '\0';
	}
	return rc;
}
