/*
 * channel.c -- the failpoint channel's lines (channel.h).
 */
#include <string.h>

#include "harness/proc/channel.h"

#define HIT_LEN (sizeof(PROTO_HIT) - 1)
#define PASS_LEN (sizeof(PROTO_PASS) - 1)

static bool failpoint_name_valid(const char *s, size_t len)
{
	if (len == 0 || len >= PROTO_FAILPOINT_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

/* The line buf[0..len) (no newline) as a channel line; false to drop it. */
static bool parse_line(const char *buf, size_t len, struct channel_line *out)
{
	size_t skip = 0;

	out->passed = false;
	if (len > HIT_LEN && memcmp(buf, PROTO_HIT, HIT_LEN) == 0) {
		skip = HIT_LEN;
	} else if (len > PASS_LEN && memcmp(buf, PROTO_PASS, PASS_LEN) == 0) {
		skip = PASS_LEN;
		out->passed = true;
	}
	if (!skip || !failpoint_name_valid(buf + skip, len - skip))
		return false;
	memcpy(out->failpoint, buf + skip, len - skip);
	out->failpoint[len - skip] = '\0';
	return true;
}

int channel_parse(char *buf, size_t *len, size_t cap, channel_line_fn fn,
		  void *ctx)
{
	size_t at = 0;   /* start of the first line not yet handed out */
	char *nl;
	int rc = 0;

	/* each byte is looked at once and the undecided rest moved once, so
	 * a buffer full of short lines costs its length, not lines x length */
	while ((nl = memchr(buf + at, '\n', *len - at))) {
		size_t n = (size_t)(nl - (buf + at));
		struct channel_line line;

		if (parse_line(buf + at, n, &line) && (rc = fn(ctx, &line)))
			break;
		at += n + 1;
	}
	*len -= at;
	if (at && *len)
		memmove(buf, buf + at, *len);
	if (!rc && *len >= cap)
		*len = 0; /* an overlong line: drop it */
	return rc;
}
