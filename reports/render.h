/*
 * render.h -- write every report format of a run into one directory.
 *
 *   format  file               module
 *   json    report.json        (the document itself; signed, see below)
 *   junit   report.junit.xml   report_junit.h
 *   md      summary.md         report_md.h
 *   html    report.html        report_html.h
 *
 * Signing: when FENCECERT_SIGNING_KEY is set (sign.h), "json" signs the
 * document before writing it, and the other formats are rendered from
 * the signed document.  A variable that is set but empty is an error.
 *
 * Each file is written to a temporary name in the same directory and
 * renamed, so a reader (a CI upload step, the gate) never sees half a
 * file.  Formats are independent: one failing does not stop the others,
 * and the first error is returned.
 *
 * Who includes it: cli/ (certify writes a run's formats, report renders
 * them again, merge writes its output) and tests/.  It is the one place
 * in reports/ that writes files.
 */
#ifndef FENCECERT_RENDER_H
#define FENCECERT_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/error.h"

#define RENDER_FORMATS_ALL "json,junit,md,html"

/*
 * Render `formats` (comma-separated names from the table; NULL means
 * all) of `report` into out_dir (created when missing).  `report` is
 * modified only by gaining a "signature" member when "json" is asked for
 * and a key is set.  Returns 0, FC_USAGE (unknown format, empty key),
 * FC_IO or FC_NOMEM with a message in err.
 */
int report_render_all(json_t *report, const char *out_dir, const char *formats,
		      char *err, size_t errlen) FC_MUST_CHECK;

/* Check a format list without rendering.  FC_USAGE with a message. */
int render_formats_check(const char *formats, char *err, size_t errlen)
	FC_MUST_CHECK;

/*
 * Whether name (a directory entry, no slash) is a file report_render_all()
 * writes -- one of the table's, or the temporary ".FILE.tmp.PID" it
 * leaves when killed while writing it.  certify's --out (outdir.h) uses it
 * to tell an earlier run's reports from somebody else's files.
 */
bool render_is_report_file(const char *name);

/* Write report as JSON (the harness's layout: one-space indent, member
 * order kept) to path atomically. */
int render_write_json(const json_t *report, const char *path, char *err,
		      size_t errlen) FC_MUST_CHECK;

#endif
