/*
 * cmd_merge.c -- `fencecert merge OUT.json IN.json...`: the command line of
 * reports/merge.h.  Loads the inputs, takes the key from
 * FENCECERT_SIGNING_KEY, merges and writes OUT atomically.
 *
 * Exit status: 0 merged; 1 the shards do not belong together, an input's
 * signature fails, or OUT cannot be written; 2 an input is unreadable or
 * not a report; 64 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/cli.h"
#include "reports/merge.h"
#include "reports/render.h"
#include "reports/rview.h"
#include "reports/sign.h"

#define EXIT_REFUSED 1
#define EXIT_BAD_INPUT 2

static void usage(FILE *to)
{
	fprintf(to,
		"usage: fencecert merge OUT.json IN.json...\n"
		"\n"
		"Combine the shard reports of one suite (certify --shard I/N) into\n"
		"one report.  Verdicts are recomputed from the union of schedules.\n"
		"With $%s set, every input must carry a valid signature\n"
		"and OUT is signed.\n"
		"\n"
		"exit status: 0 merged, 1 shards do not belong together (or a\n"
		"signature fails, or OUT cannot be written), 2 unreadable or\n"
		"invalid input, 64 usage\n", SIGN_KEY_ENV);
}

/* Merge the loaded inputs into out_path.  The exit status. */
static int merge_into(json_t *const *in, const char *const *paths, size_t n,
		      const char *out_path)
{
	struct sign_key key = { (const unsigned char *)"", 0 };
	char err[1024] = "";
	json_t *out;
	int rc;

	/* set but empty: handed on as a key of length 0, which is refused */
	rc = sign_key_from_env(&key);
	rc = merge_reports(in, paths, n, rc ? &key : NULL, &out, err,
			   sizeof(err));
	if (!rc) {
		rc = render_write_json(out, out_path, err, sizeof(err));
		json_decref(out);
	}
	if (rc) {
		/* FC_USAGE from merge_reports(): the inputs do not merge */
		fprintf(stderr, "fencecert: %s: %s\n", rc == FC_USAGE ?
			"MERGE" : error_name(rc), rc == FC_NOMEM ?
			"out of memory" : err);
		return EXIT_REFUSED;
	}
	printf("merged %zu report(s) into %s\n", n, out_path);
	return 0;
}

int cmd_merge(int argc, char **argv)
{
	char err[1024];
	json_t **in;
	size_t n = 0;
	int rc = 0;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc < 3)
		return cli_usage("merge", "give OUT.json and at least one IN.json");
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-')
			return cli_usage("merge", "unknown option '%s'", argv[i]);
	in = calloc((size_t)argc, sizeof(*in));
	if (!in)
		return cli_fail(FC_NOMEM, "out of memory");
	for (int i = 2; i < argc && !rc; i++) {
		rc = rview_load(argv[i], &in[n], err, sizeof(err));
		if (rc) {
			fprintf(stderr, "fencecert: %s: %s\n", error_name(rc), err);
			rc = EXIT_BAD_INPUT;
		} else {
			n++;
		}
	}
	if (!rc)
		rc = merge_into(in, (const char *const *)argv + 2, n, argv[1]);
	for (size_t i = 0; i < n; i++)
		json_decref(in[i]);
	free(in);
	return rc;
}
