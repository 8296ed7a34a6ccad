/*
 * fuzz_channel.c -- libFuzzer target for the failpoint channel's lines
 * (harness/proc/channel.h): the bytes a route writes to FENCECERT_FAILPOINT_FD.
 * Built and run by tests/integration/fuzz_smoke.sh.
 *
 * The first input byte chooses how many bytes each read() returns (1 to
 * 256, as a socket may split a write anywhere); the rest is the stream,
 * fed into a buffer of the supervisor's size exactly as supervise.c's
 * read_channel() does.  Checks, trapping when one breaks:
 *   - the buffer never holds more than its size, and never stays full;
 *   - every line handed out is "HIT"/"PASS" with a name of 1 to 63 of
 *     [a-z0-9_.-], NUL-terminated;
 *   - when no line of the stream is longer than the buffer, what is handed
 *     out is exactly the stream's valid lines in order (a reference split
 *     of the whole input), whatever the read sizes were.
 */
#include <stdint.h>
#include <string.h>

#include "harness/proc/channel.h"

#define CAP 256 /* supervise_impl.h's LINE_MAX_BYTES */
#define MAX_LINES 4096

struct seen {
	struct channel_line lines[MAX_LINES];
	size_t n;
};

static bool name_ok(const char *s)
{
	size_t len = strnlen(s, PROTO_FAILPOINT_NAME_MAX);

	if (len == 0 || len >= PROTO_FAILPOINT_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_' || s[i] == '-' || s[i] == '.'))
			return false;
	return true;
}

static int collect(void *ctx, const struct channel_line *l)
{
	struct seen *s = ctx;

	if (!name_ok(l->failpoint))
		__builtin_trap();
	if (s->n < MAX_LINES)
		s->lines[s->n] = *l;
	s->n++;
	return 0;
}

/* The reference: split the whole stream at '\n', keep the valid lines. */
static void reference(const uint8_t *d, size_t n, struct seen *ref)
{
	size_t start = 0;

	for (size_t i = 0; i < n; i++) {
		struct channel_line l = { .passed = false };
		const char *line = (const char *)d + start;
		size_t len = i - start, skip = 0;

		if (d[i] != '\n')
			continue;
		start = i + 1;
		if (len > 4 && memcmp(line, "HIT ", 4) == 0)
			skip = 4;
		else if (len > 5 && memcmp(line, "PASS ", 5) == 0)
			skip = 5, l.passed = true;
		if (!skip || len - skip >= PROTO_FAILPOINT_NAME_MAX)
			continue;
		memcpy(l.failpoint, line + skip, len - skip);
		l.failpoint[len - skip] = '\0';
		if (strlen(l.failpoint) != len - skip || !name_ok(l.failpoint))
			continue;
		if (ref->n < MAX_LINES)
			ref->lines[ref->n] = l;
		ref->n++;
	}
}

/* Whether no line (newline included) is longer than the buffer. */
static bool lines_fit(const uint8_t *d, size_t n)
{
	size_t run = 0;

	for (size_t i = 0; i < n; i++) {
		run++;
		if (d[i] == '\n')
			run = 0;
		else if (run >= CAP)
			return false;
	}
	return true;
}

static struct seen got, ref;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[CAP];
	size_t len = 0, pos = 1, step;

	if (size < 1)
		return 0;
	step = (size_t)data[0] + 1;
	got.n = ref.n = 0;
	while (pos < size) {
		size_t room = CAP - len, take = size - pos;

		if (take > room)
			take = room;
		if (take > step)
			take = step;
		memcpy(buf + len, data + pos, take);
		len += take;
		pos += take;
		if (channel_parse(buf, &len, CAP, collect, &got) != 0)
			__builtin_trap();
		if (len >= CAP)
			__builtin_trap(); /* the reader would have no room */
	}
	if (!lines_fit(data + 1, size - 1))
		return 0;
	reference(data + 1, size - 1, &ref);
	if (got.n != ref.n)
		__builtin_trap();
	for (size_t i = 0; i < got.n && i < MAX_LINES; i++)
		if (got.lines[i].passed != ref.lines[i].passed ||
		    strcmp(got.lines[i].failpoint, ref.lines[i].failpoint) != 0)
			__builtin_trap();
	return 0;
}
