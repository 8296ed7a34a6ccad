/*
 * cmd_merge.c -- `fencecert merge [--unsigned] OUT.json IN.json...`: the
 * command line of reports/merge.h.  Loads the inputs, takes the key from
 * FENCECERT_SIGNING_KEY, merges and writes OUT atomically.
 *
 * A merge signs only what it verified: with the key every input must
 * carry a signature that verifies and OUT is signed.  Without the key
 * nothing can be verified, so the merge is refused -- unless --unsigned
 * asks for it explicitly; then OUT is marked unsigned (merge.h) and a gate
 * with the key refuses it.  --unsigned with the key set is a usage error:
 * the two ask for opposite things.
 *
 * Exit status: 0 merged; 1 the shards do not belong together, an input's
 * signature fails, there is no key and no --unsigned, or OUT cannot be
 * written; 2 an input is unreadable or not a report; 64 usage.
 */
#include <stdbool.h>
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
		"usage: fencecert merge [--unsigned] OUT.json IN.json...\n"
		"\n"
		"Combine the shard reports of one suite (certify --shard I/N) into\n"
		"one report.  Verdicts are recomputed from the union of schedules.\n"
		"With $%s set, every input must carry a valid signature\n"
		"and OUT is signed.  Without it the merge is refused, unless:\n"
		"\n"
		"  --unsigned   merge without verifying any signature; OUT is\n"
		"               marked unsigned (a gate with the key refuses it)\n"
		"  --help       this text\n"
		"\n"
		"exit status: 0 merged, 1 shards do not belong together (or a\n"
		"signature fails, or no key and no --unsigned, or OUT cannot be\n"
		"written), 2 unreadable or invalid input, 64 usage\n",
		SIGN_KEY_ENV);
}

/* Merge the loaded inputs into out_path with key (NULL: --unsigned).
 * The exit status. */
static int merge_into(json_t *const *in, const char *const *paths, size_t n,
		      const char *out_path, const struct sign_key *key)
{
	char err[1024] = "";
	json_t *out;
	int rc;

	rc = merge_reports(in, paths, n, key, &out, err, sizeof(err));
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
	if (!key)
		fprintf(stderr, "fencecert: merge: no signature checked "
			"(--unsigned); '%s' is marked unsigned\n", out_path);
	printf("merged %zu report(s) into %s\n", n, out_path);
	return 0;
}

/*
 * The key to verify and sign with: 0 and *key set (a key of length 0
 * when the variable is set but empty: merge_reports() refuses it), 0 and
 * *key NULL for --unsigned, or the exit status.
 */
static int choose_key(bool unsigned_merge, struct sign_key *buf,
		      const struct sign_key **key)
{
	int have = sign_key_from_env(buf);

	*key = NULL;
	if (have && unsigned_merge)
		return cli_usage("merge", "--unsigned merges without verifying "
				 "signatures, but $%s is set: drop one of them",
				 SIGN_KEY_ENV);
	if (have) {
		if (have < 0)
			*buf = (struct sign_key){ (const unsigned char *)"", 0 };
		*key = buf;
		return 0;
	}
	if (unsigned_merge)
		return 0;
	fprintf(stderr, "fencecert: MERGE: no signing key: set $%s to verify "
		"the inputs' signatures (and sign the result), or give "
		"--unsigned to merge unverified inputs into a report marked "
		"unsigned\n", SIGN_KEY_ENV);
	return EXIT_REFUSED;
}

int cmd_merge(int argc, char **argv)
{
	const char **files = calloc((size_t)argc + 1, sizeof(*files));
	const struct sign_key *key = NULL;
	struct sign_key keybuf;
	bool unsigned_merge = false;
	char err[1024];
	json_t **in = calloc((size_t)argc + 1, sizeof(*in));
	size_t n = 0, nfiles = 0;
	int rc = 0;

	if (!files || !in) {
		rc = cli_fail(FC_NOMEM, "out of memory");
		goto out;
	}
	for (int i = 1; i < argc && !rc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			goto out;
		}
		if (strcmp(argv[i], "--unsigned") == 0)
			unsigned_merge = true;
		else if (argv[i][0] == '-')
			rc = cli_usage("merge", "unknown option '%s'", argv[i]);
		else
			files[nfiles++] = argv[i];
	}
	if (!rc && nfiles < 2)
		rc = cli_usage("merge", "give OUT.json and at least one IN.json");
	if (!rc)
		rc = choose_key(unsigned_merge, &keybuf, &key);
	for (size_t i = 1; i < nfiles && !rc; i++) {
		rc = rview_load(files[i], &in[n], err, sizeof(err));
		if (rc) {
			fprintf(stderr, "fencecert: %s: %s\n", error_name(rc), err);
			rc = EXIT_BAD_INPUT;
		} else {
			n++;
		}
	}
	if (!rc)
		rc = merge_into(in, files + 1, n, files[0], key);
out:
	for (size_t i = 0; in && i < n; i++)
		json_decref(in[i]);
	free(in);
	free(files);
	return rc;
}
