/*
 * collect.c -- read the journal and the surviving evidence into a record
 * (collect.h).  Only reads: the journal through journal_get/history, the
 * XCom files with jansson.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "journal/journal.h"
#include "harness/run/collect.h"
#include "common/fsutil.h"

#define RETURN_MAX (1024 * 1024) /* bytes of a return.json we read */

static void all_ops(struct rec_schedule *r, int status)
{
	for (size_t i = 0; i < r->nops; i++)
		r->ops[i].journal_status = status;
}

void collect_journal(struct rec_schedule *r, const char *url)
{
	char err[400];
	journal *j;
	struct stat sb;

	/* a route without a journal leaves no file; opening would create one */
	if (strncmp(url, "sqlite:", 7) == 0 && stat(url + 7, &sb) != 0 &&
	    errno == ENOENT) {
		all_ops(r, FC_NOT_FOUND);
		return;
	}
	if (journal_open(url, &j, err, sizeof(err))) {
		all_ops(r, FC_JOURNAL_UNAVAILABLE);
		if (!r->status) {
			r->status = FC_JOURNAL_UNAVAILABLE;
			snprintf(r->error, sizeof(r->error),
				 "cannot read the journal: %s", err);
		}
		return;
	}
	for (size_t i = 0; i < r->nops; i++) {
		struct rec_operation *op = &r->ops[i];
		int rc = journal_get(j, op->operation_id, &op->entry);

		if (!rc)
			rc = journal_history(j, op->operation_id, &op->history,
					     &op->nhistory);
		op->journal_status = rc;
		if (rc && rc != FC_NOT_FOUND && !r->status) {
			r->status = rc;
			snprintf(r->error, sizeof(r->error), "cannot read the "
				 "journal entry of op %d: %s", op->index,
				 journal_errmsg(j));
		}
	}
	journal_close(j);
}

static void copy_str(char *dst, size_t len, json_t *v)
{
	const char *s = json_string_value(v);

	snprintf(dst, len, "%s", s ? s : "");
}

/* Parse the return.json open as fd (which this closes): one read() for a
 * small file (json_loadfd() would read it byte by byte). */
static void parse_return(struct rec_evidence *ev, int fd)
{
	json_error_t jerr;
	size_t len;
	char *text;
	/* unreadable, or RETURN_MAX bytes or more: no route writes such a
	 * return.json */
	json_t *o = fs_read_all(fd, 4096, RETURN_MAX, &text, &len) ? NULL :
		    json_loadb(text, len, 0, &jerr);
	json_t *rows;

	close(fd);
	free(text);
	ev->valid = json_is_object(o);
	ev->rows_written = -1;
	if (ev->valid) {
		copy_str(ev->operation_id, sizeof(ev->operation_id),
			 json_object_get(o, "operation_id"));
		copy_str(ev->intent_digest, sizeof(ev->intent_digest),
			 json_object_get(o, "intent_digest"));
		copy_str(ev->state, sizeof(ev->state), json_object_get(o, "state"));
		rows = json_object_get(o, "rows_written");
		if (json_is_integer(rows))
			ev->rows_written = json_integer_value(rows);
		ev->epoch = json_integer_value(json_object_get(o, "epoch"));
	}
	json_decref(o);
}

int collect_evidence(struct rec_schedule *r, const char *dir, int tries)
{
	for (size_t i = 0; i < r->nops; i++) {
		struct rec_operation *op = &r->ops[i];

		for (int k = 1; k <= tries; k++) {
			struct rec_evidence *ev;
			char path[4096];
			int fd;

			snprintf(path, sizeof(path), "%s/op%d/xcom/try-%d/return.json",
				 dir, op->index, k);
			/* the open is the existence check (no stat first) */
			if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
				continue;
			ev = RECORD_PUSH(op->evidence, op->nevidence);
			if (!ev) {
				close(fd);
				return FC_NOMEM;
			}
			ev->try_number = k;
			snprintf(ev->path, sizeof(ev->path), "op%d/xcom/try-%d/"
				 "return.json", op->index, k);
			parse_return(ev, fd);
		}
	}
	return 0;
}
