/*
 * fuzz_evidence.c -- libFuzzer target for the evidence a route leaves:
 * its return.json, read at the end of a schedule by collect_evidence()
 * (harness/run/collect.h).  The input is written to
 * DIR/op1/xcom/try-1/return.json and read back through that public API,
 * as the harness reads what a route wrote.  Built and run by
 * tests/integration/fuzz_smoke.sh.
 *
 * Checks, trapping when one breaks:
 *   - exactly one piece of evidence, for try 1, with every string field
 *     NUL-terminated inside its buffer;
 *   - it is valid exactly when jansson reads the bytes as a JSON object
 *     (the 1 MiB cap is never reached by the fuzzer's inputs);
 *   - rows_written is -1 unless the object carries an integer, and the
 *     string fields are the object's strings, cut to their buffers.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "harness/run/collect.h"

static char dir[256], path[512];

static void cleanup(void)
{
	unlink(path);
	snprintf(path, sizeof(path), "%s/op1/xcom/try-1", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/op1/xcom", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/op1", dir);
	rmdir(path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	snprintf(dir, sizeof(dir), "%s/fuzz-evidence-XXXXXX", base);
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/op1", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/op1/xcom", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/op1/xcom/try-1", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/op1/xcom/try-1/return.json", dir);
	atexit(cleanup);
	return 0;
}

static void write_input(const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
}

static void check_str(const char *field, size_t cap, json_t *o, const char *key)
{
	const char *want = json_string_value(json_object_get(o, key));

	if (strnlen(field, cap) == cap)
		__builtin_trap();
	if (!want)
		want = "";
	if (strncmp(field, want, cap - 1) != 0)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec_schedule *r = record_new();
	struct rec_operation *op;
	const struct rec_evidence *ev;
	json_t *o;

	if (!r)
		return 0;
	op = RECORD_PUSH(r->ops, r->nops);
	if (!op) {
		record_free(r);
		return 0;
	}
	op->index = 1;
	write_input(data, size);
	if (collect_evidence(r, dir, 1) != 0 || op->nevidence != 1)
		__builtin_trap();
	ev = &op->evidence[0];
	o = json_loadb((const char *)data, size, 0, NULL);
	if (ev->try_number != 1 || ev->valid != json_is_object(o))
		__builtin_trap();
	if (ev->valid) {
		json_t *rows = json_object_get(o, "rows_written");

		check_str(ev->operation_id, sizeof(ev->operation_id), o, "operation_id");
		check_str(ev->intent_digest, sizeof(ev->intent_digest), o, "intent_digest");
		check_str(ev->state, sizeof(ev->state), o, "state");
		if (ev->rows_written != (json_is_integer(rows) ?
					 json_integer_value(rows) : -1))
			__builtin_trap();
	} else if (ev->rows_written != -1) {
		__builtin_trap();
	}
	json_decref(o);
	record_free(r);
	return 0;
}
