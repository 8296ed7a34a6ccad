/*
 * render.c -- every report format into one directory (render.h).
 *
 * Invariants:
 *  1. A file is complete or absent: written to ".NAME.tmp.PID" beside
 *     its final name, flushed, closed, then renamed.
 *  2. Signing happens before any rendering, so every format describes
 *     the same (signed) document.
 *  3. A failing format leaves the files of the others in place and
 *     removes its own temporary file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/json_text.h"
#include "reports/render.h"
#include "reports/report_html.h"
#include "reports/report_junit.h"
#include "reports/report_md.h"
#include "reports/sign.h"

enum { F_JSON = 1, F_JUNIT = 2, F_MD = 4, F_HTML = 8 };

static const struct format {
	const char *name;
	unsigned bit;
	const char *file;
	int (*write)(const json_t *report, FILE *out);
} formats_table[] = {
	{ "json", F_JSON, "report.json", NULL },
	{ "junit", F_JUNIT, "report.junit.xml", report_junit_write },
	{ "md", F_MD, "summary.md", report_md_write },
	{ "html", F_HTML, "report.html", report_html_write },
};

#define NFORMATS (sizeof(formats_table) / sizeof(*formats_table))

static int parse_formats(const char *list, unsigned *bits, char *err,
			 size_t errlen)
{
	const char *p = list ? list : RENDER_FORMATS_ALL;

	*bits = 0;
	while (*p) {
		size_t n = strcspn(p, ","), i;
		for (i = 0; i < NFORMATS; i++)
			if (strlen(formats_table[i].name) == n &&
			    strncmp(p, formats_table[i].name, n) == 0)
				break;
		if (i == NFORMATS) {
			snprintf(err, errlen, "unknown report format '%.*s' (known: "
				 "%s)", (int)n, p, RENDER_FORMATS_ALL);
			return FC_USAGE;
		}
		*bits |= formats_table[i].bit;
		p += n + (p[n] == ',');
	}
	if (!*bits) {
		snprintf(err, errlen, "no report format given");
		return FC_USAGE;
	}
	return 0;
}

int render_formats_check(const char *formats, char *err, size_t errlen)
{
	unsigned bits;

	return parse_formats(formats, &bits, err, errlen);
}

bool render_is_report_file(const char *name)
{
	for (size_t i = 0; i < NFORMATS; i++) {
		const char *file = formats_table[i].file;
		size_t n = strlen(file);

		if (strcmp(name, file) == 0)
			return true;
		/* write_atomic()'s temporary: "." FILE ".tmp." DIGITS */
		if (name[0] == '.' && strncmp(name + 1, file, n) == 0 &&
		    strncmp(name + 1 + n, ".tmp.", 5) == 0 && name[n + 6] &&
		    strspn(name + n + 6, "0123456789") == strlen(name + n + 6))
			return true;
	}
	return false;
}

/* common/json_text.h hands the text over 64 KiB at a time (a longer
 * value in one piece). */
static int write_piece(const char *p, size_t n, void *out)
{
	return fwrite_unlocked(p, 1, n, out) == n ? 0 : -1;
}

static int dump_json(const json_t *report, FILE *out)
{
	/* Members in the harness's order on one line: indentation would be
	 * a third of the file of a big suite (`jq .` shows it indented). */
	if (json_text_dump(report, false, write_piece, out) ||
	    fputc_unlocked('\n', out) == EOF)
		return FC_IO;
	return fflush(out) || ferror(out) ? FC_IO : 0;
}

static int write_atomic(const json_t *report, const char *path,
			int (*write)(const json_t *, FILE *), char *err,
			size_t errlen)
{
	char tmp[4200];
	const char *slash = strrchr(path, '/');
	FILE *f;
	int rc;

	if (slash)
		snprintf(tmp, sizeof(tmp), "%.*s/.%s.tmp.%d", (int)(slash - path),
			 path, slash + 1, (int)getpid());
	else
		snprintf(tmp, sizeof(tmp), ".%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		snprintf(err, errlen, "cannot write '%s': %s", tmp, strerror(errno));
		return FC_IO;
	}
	rc = write(report, f);
	if (fclose(f) && !rc)
		rc = FC_IO;
	if (!rc && rename(tmp, path) < 0)
		rc = FC_IO;
	if (rc) {
		snprintf(err, errlen, rc == FC_NOMEM ? "out of memory writing '%s'" :
			 "cannot write '%s': %s", path, strerror(errno));
		unlink(tmp);
	}
	return rc;
}

int render_write_json(const json_t *report, const char *path, char *err,
		      size_t errlen)
{
	return write_atomic(report, path, dump_json, err, errlen);
}

int report_render_all(json_t *report, const char *out_dir, const char *formats,
		      char *err, size_t errlen)
{
	struct sign_key key;
	unsigned bits;
	char path[4096], msg[512];
	int rc, first = 0, have_key = 0;

	rc = parse_formats(formats, &bits, err, errlen);
	if (rc)
		return rc;
	if (bits & F_JSON) {
		have_key = sign_key_from_env(&key);
		if (have_key < 0) {
			snprintf(err, errlen, "%s is set but empty", SIGN_KEY_ENV);
			return FC_USAGE;
		}
	}
	if (fs_mkdirs(out_dir)) {
		snprintf(err, errlen, "cannot create '%s': %s", out_dir,
			 strerror(errno));
		return FC_IO;
	}
	if (have_key && (rc = sign_report(report, &key)) != 0) {
		snprintf(err, errlen, "cannot sign the report: %s", error_str(rc));
		return rc;
	}
	for (size_t i = 0; i < NFORMATS; i++) {
		const struct format *f = &formats_table[i];
		if (!(bits & f->bit))
			continue;
		snprintf(path, sizeof(path), "%s/%s", out_dir, f->file);
		rc = write_atomic(report, path, f->write ? f->write : dump_json,
				  msg, sizeof(msg));
		if (rc && !first) {
			first = rc;
			snprintf(err, errlen, "%s", msg);
		}
	}
	return first;
}
