/*
 * channel.h -- the failpoint channel's lines as the supervisor reads them
 * (common/protocol.h): "HIT <name>\n", after which the route waits for one
 * byte, and "PASS <name>\n", after which it does not.
 *
 * What arrives on the channel is written by the route, which is untrusted
 * code, so this is a pure function over a buffer the caller fills: no I/O,
 * no allocation, and any byte string is a valid input
 * (tests/fuzz/fuzz_channel.c).
 *
 * Invariants:
 *   1. Each complete line is handed out at most once, in the order it
 *      arrived, and consumed from the buffer.  A line that is not
 *      "HIT name" or "PASS name" with a valid name (1 to
 *      PROTO_FAILPOINT_NAME_MAX - 1 of [a-z0-9_.-]) is dropped: a route
 *      printing garbage must not wedge the harness.
 *   2. A buffer filled to its capacity without a newline is dropped whole,
 *      so the buffer never stays full and the reader always has room.
 *   3. A name handed out is NUL-terminated and valid by the rule of 1.
 *   4. Linear: a call looks at each byte of the buffer once and moves the
 *      undecided rest once, so a route flooding the channel with short
 *      lines costs the harness the bytes it wrote, never lines x bytes.
 *
 * Who includes it: harness/proc (supervise.c) and tests/.
 */
#ifndef FENCECERT_CHANNEL_H
#define FENCECERT_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/protocol.h"

struct channel_line {
	char failpoint[PROTO_FAILPOINT_NAME_MAX];
	bool passed;             /* "PASS name": never answer it */
};

/* Called for each valid line; a non-zero return stops the parse. */
typedef int (*channel_line_fn)(void *ctx, const struct channel_line *line);

/*
 * Hand every complete line of buf[0..*len) to fn and remove it from the
 * buffer (the undecided rest moves to the front and *len shrinks); cap is
 * the buffer's size (invariant 2).  Returns 0, or the first non-zero
 * value of fn, with the line fn refused still in the buffer.
 */
int channel_parse(char *buf, size_t *len, size_t cap, channel_line_fn fn,
		  void *ctx) FC_MUST_CHECK;

#endif
