/*
 * identity.h -- operation identity and intent digest (SPEC section 2).
 *
 * Both are "sha256:" followed by 64 lower-case hex digits of SHA-256 over a
 * canonical encoding of named fields:
 *
 *   fields sorted by name (bytewise, as memcmp orders them); for each field
 *   u32be(len(name)) name u32be(len(value)) value
 *
 * Names must be non-empty and unique; values must be valid UTF-8.  Names that
 * would make an identity unstable across retries (try number, host, pod, pid,
 * time, random) are refused.  The same construction gives operation_id over
 * the identity fields and intent_digest over the intent fields.
 *
 * A source's digest is the same "sha256:" form over a file's bytes
 * (identity_file_digest(), or identity_hash_*() while the bytes are being
 * written, as the workload generator does).
 *
 * Included by the route runtime (routes/), the harness (workload
 * generation, the suite model, the report), the `id` command, and
 * journal/ itself.  Invariant: no field may be the try number, host, pid,
 * time or a random value (SPEC section 2); test vectors in docs/identity.md.
 */
#ifndef FENCECERT_IDENTITY_H
#define FENCECERT_IDENTITY_H

#include <stddef.h>

#include "common/error.h"

#define IDENTITY_DIGEST_LEN 71 /* "sha256:" + 64 hex, without the NUL */
#define IDENTITY_MAX_FIELDS 64
#define IDENTITY_MAX_VALUE 4096

struct identity_field {
	const char *name;
	const char *value;
};

/*
 * Digest `n` fields into out ("sha256:..." plus NUL).  Returns 0, or
 * FC_USAGE with a message in err (empty or duplicate name, forbidden name,
 * invalid UTF-8, too many fields).  The caller's array is not reordered.
 */
int identity_digest(const struct identity_field *fields, size_t n,
		    char out[IDENTITY_DIGEST_LEN + 1], char *err, size_t errlen)
	FC_MUST_CHECK;

/* "sha256:" + hex of the bytes of the file at path.  FC_IO on failure. */
int identity_file_digest(const char *path, char out[IDENTITY_DIGEST_LEN + 1])
	FC_MUST_CHECK;

/* "sha256:" + hex of bytes given in pieces, as identity_file_digest()
 * would give of a file holding them: new (NULL when out of memory),
 * update any number of times, final (frees h). */
struct identity_hash;
struct identity_hash *identity_hash_new(void);
void identity_hash_update(struct identity_hash *h, const void *buf, size_t len);
void identity_hash_final(struct identity_hash *h,
			 char out[IDENTITY_DIGEST_LEN + 1]);

/* "sha256:" + hex of a buffer. */
void identity_buffer_digest(const void *buf, size_t len,
			    char out[IDENTITY_DIGEST_LEN + 1]);

/* 1 when s has the form "sha256:" + 64 lower-case hex digits. */
int identity_digest_valid(const char *s);

#endif
