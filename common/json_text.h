/*
 * json_text.h -- a JSON document as text, byte for byte what jansson's
 * json_dump_callback() writes with JSON_PRESERVE_ORDER (and JSON_COMPACT
 * when asked), at a fraction of its cost on big documents.
 *
 * jansson hands its output over a token at a time, formats every
 * integer with snprintf(), walks every string a code point at a time and
 * files every array and object in a hash table to refuse cycles: most of
 * the time a 6 MB report.json takes to write.  Here a plain string (ASCII
 * from space to '~' but the quote and the backslash) and an integer are
 * copied into a buffer directly; anything else -- a real, a string with
 * something to escape, a byte past ASCII to check -- is written by
 * jansson itself, so the text is always the one it would write, and a
 * string that is not UTF-8 is refused as it refuses it (a key too, where
 * jansson writes a broken text).  Cycles are not looked for: nesting past
 * JSON_TEXT_MAX_DEPTH is refused instead.
 *
 * Owns nothing between calls.  Who includes it: whatever writes a JSON
 * document of the harness's (harness/proc's pool, reports/).
 *
 * Errors: -1 (the document has a value jansson would not write, or the
 * callback failed) or 0; json_text_dumps() returns NULL for both and for
 * out of memory.
 */
#ifndef FENCECERT_JSON_TEXT_H
#define FENCECERT_JSON_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define JSON_TEXT_MAX_DEPTH 2048

/* The text of v (an object or an array) handed to cb in pieces of up to
 * 64 KiB (a longer value in one piece of its own), the text
 * json_dump_callback(v, cb, ctx, JSON_PRESERVE_ORDER |
 * (compact ? JSON_COMPACT : 0)) would hand over. */
int json_text_dump(const json_t *v, bool compact, json_dump_callback_t cb,
		   void *ctx);

/* The same text in one heap string (NUL-terminated, free() it), with
 * `extra` more bytes of room after the NUL; its length into *len. */
char *json_text_dumps(const json_t *v, bool compact, size_t extra,
		      size_t *len);

#endif
