/*
 * datafile.h -- the data file of a "file:DIR" target: one CSV file per
 * applied operation.  Shared by the fs fence (which writes and probes them)
 * and the target observer (which reads them without trusting the header).
 *
 * Format (UTF-8 or any bytes, '\n' line ends):
 *
 *   # fencecert op=OP epoch=N intent=DIGEST rows=M     header comment
 *   row_key,payload                                    column names
 *   KEY,PAYLOAD                                        M rows
 *
 * Fields follow RFC 4180: a field holding ',', '"', CR or LF, starting with
 * '#', or being the empty string is written in double quotes with '"'
 * doubled.  An empty unquoted field is NULL (a missing payload), so NULL
 * and "" survive the round trip.  The header comment is optional for
 * readers (a hand-made file has none); the column line is not.
 *
 * Included by fences/ (fence_fs.c, target.c) and the control routes
 * (routes/controls.c, which write a file fence by hand).
 */
#ifndef FENCECERT_DATAFILE_H
#define FENCECERT_DATAFILE_H

#include <stdio.h>

#include "common/error.h"
#include "fences/fence.h"

#define DATAFILE_COLUMNS "row_key,payload"
#define DATAFILE_RECORD_MAX (16u << 20) /* longest row a reader accepts */

struct datafile_header {
	int present; /* 0: the file has no "# fencecert" line */
	char operation_id[JOURNAL_ID_MAX];
	char intent_digest[JOURNAL_ID_MAX];
	long long epoch;
	long long rows;
};

/* Write the header, the column line and the rows to fp.  Returns 0 or
 * FC_IO (errno is left as the failing call set it). */
int datafile_write(FILE *fp, const struct datafile_header *h,
		   const struct fence_row *rows, size_t nrows) FC_MUST_CHECK;

/* Called for each row; payload is NULL when the row has none.  A non-zero
 * return stops reading and becomes datafile_read()'s return value. */
typedef int (*datafile_row_fn)(void *ctx, const char *row_key,
			       const char *payload);

/*
 * Read the file at path: its header into *h, then every row through row()
 * (row == NULL reads the header and column line only).  Returns 0,
 * FC_NOT_FOUND when the file does not exist, FC_IO when it cannot be read,
 * FC_CORRUPT when it is malformed (err says where), or row()'s value.
 */
int datafile_read(const char *path, struct datafile_header *h,
		  datafile_row_fn row, void *ctx, char *err, size_t errlen)
	FC_MUST_CHECK;

#endif
