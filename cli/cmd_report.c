/*
 * cmd_report.c -- `fencecert report render REPORT.json --out DIR`: render
 * the formats of render.h again from a report.json on disk (a merged
 * report, or one copied from a CI artifact).
 *
 * Exit status: 0 rendered; 1 a file could not be written; 2 the report
 * is unreadable or not a fencecert.report.v1 document, or (--sign) it
 * carries no signature that verifies; 64 usage.
 *
 * The copy of report.json written with --format json keeps the document
 * as loaded, signature included.  --sign signs it with
 * FENCECERT_SIGNING_KEY, and only a report whose signature already
 * verifies with that key: a signature is made only from verified inputs
 * (certify signs what it ran, merge what it verified), so an unsigned
 * report -- one whose signature was stripped after a verdict was edited,
 * say -- and a tampered one are refused instead of laundered.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "common/cli.h"
#include "common/fsutil.h"
#include "reports/render.h"
#include "reports/rview.h"
#include "reports/sign.h"

#define EXIT_WRITE 1
#define EXIT_BAD_REPORT 2

static void usage(FILE *to)
{
	fprintf(to,
		"usage: fencecert report render REPORT.json --out DIR [options]\n"
		"\n"
		"Render a report.json again: JUnit XML, Markdown summary, HTML.\n"
		"\n"
		"  --out DIR        where to write (created when missing)\n"
		"  --format LIST    comma-separated: json,junit,md,html\n"
		"                   (default junit,md,html)\n"
		"  --sign           sign the json copy with $%s; only a\n"
		"                   report whose signature verifies with that key\n"
		"                   (unsigned or altered reports are refused)\n"
		"  --help           this text\n"
		"\n"
		"exit status: 0 rendered, 1 cannot write, 2 unreadable or invalid\n"
		"report (or, with --sign, no signature that verifies), 64 usage\n",
		SIGN_KEY_ENV);
}

/* "json,junit" minus json into out; returns whether json was listed. */
static bool strip_json(const char *list, char *out, size_t len)
{
	bool json = false;
	size_t k = 0;

	out[0] = '\0';
	while (*list) {
		size_t n = strcspn(list, ",");
		if (n == 4 && strncmp(list, "json", 4) == 0)
			json = true;
		else if (n && k + n + 2 < len)
			k += snprintf(out + k, len - k, "%s%.*s", k ? "," : "",
				      (int)n, list);
		list += n + (list[n] == ',');
	}
	return json;
}

/* Re-sign report with the key, only after its own signature verified
 * with that same key.  0, or the exit status. */
static int sign_copy(json_t *report, const char *path)
{
	struct sign_key key;
	char err[256];
	int have = sign_key_from_env(&key), rc;

	if (have <= 0)
		return cli_usage("report", "--sign needs $%s (set and not empty)",
				 SIGN_KEY_ENV);
	rc = sign_verify(report, &key, err, sizeof(err));
	if (rc == FC_NOT_FOUND) {
		fprintf(stderr, "fencecert: NOT_FOUND: refusing to sign '%s': it "
			"carries no signature%s; --sign only re-signs a report "
			"whose signature verifies with $%s\n", path,
			json_object_get(report, "unsigned") ?
			" (it is marked unsigned)" : "", SIGN_KEY_ENV);
		return EXIT_BAD_REPORT;
	}
	if (rc) {
		fprintf(stderr, "fencecert: %s: refusing to sign '%s': %s\n",
			error_name(rc), path, err);
		return EXIT_BAD_REPORT;
	}
	if (sign_report(report, &key))
		return cli_fail(FC_NOMEM, "cannot sign '%s'", path);
	return 0;
}

static int render(const char *path, const char *out_dir, const char *formats,
		  bool sign)
{
	char err[1024], rest[64], file[4096];
	json_t *report;
	bool json;
	int rc;

	rc = render_formats_check(formats, err, sizeof(err));
	if (rc)
		return cli_usage("report", "%s", err);
	json = strip_json(formats, rest, sizeof(rest));
	if (sign && !json)
		return cli_usage("report", "--sign needs 'json' in --format");
	rc = rview_load(path, &report, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "fencecert: %s: %s\n", error_name(rc), err);
		return EXIT_BAD_REPORT;
	}
	if (sign && (rc = sign_copy(report, path)) != 0) {
		json_decref(report);
		return rc;
	}
	if (fs_mkdirs(out_dir)) {
		json_decref(report);
		return cli_fail(FC_IO, "cannot create '%s'", out_dir);
	}
	snprintf(file, sizeof(file), "%s/report.json", out_dir);
	rc = json ? render_write_json(report, file, err, sizeof(err)) : 0;
	if (!rc && rest[0])
		rc = report_render_all(report, out_dir, rest, err, sizeof(err));
	json_decref(report);
	if (rc) {
		fprintf(stderr, "fencecert: %s: %s\n", error_name(rc), err);
		return EXIT_WRITE;
	}
	return 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "sign", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out_dir = NULL, *formats = "junit,md,html";
	bool sign = false;
	int c;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "render") != 0)
		return cli_usage("report", "expected 'report render REPORT.json "
				 "--out DIR'");
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': out_dir = optarg; break;
		case 'f': formats = optarg; break;
		case 's': sign = true; break;
		case 'h': usage(stdout); return 0;
		default: return cli_usage("report", "unknown option");
		}
	}
	if (optind != argc - 2)
		return cli_usage("report", "give exactly one REPORT.json");
	if (!out_dir)
		return cli_usage("report", "--out DIR is required");
	return render(argv[optind + 1], out_dir, formats, sign);
}
