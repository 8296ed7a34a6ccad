/*
 * sign.h -- HMAC-SHA256 signatures over a report's canonical form.
 *
 * The canonical form of a report is its jansson dump with
 * JSON_SORT_KEYS | JSON_COMPACT after removing the top-level "signature"
 * member, so indentation, key order and the signature itself never change
 * what is signed.  The signature is
 *
 *   "signature": {"alg": "hmac-sha256", "value": "<64 lower-case hex>"}
 *
 * The key is the bytes of the environment variable FENCECERT_SIGNING_KEY
 * (sign_key_from_env()).  A variable that is set but empty is an error,
 * not "no key": a CI secret that failed to expand must not turn signing
 * (or the gate's check) off silently.  The command line takes the key out
 * of the environment before anything runs (sign_key_take()): its bytes in
 * the process's initial environment, which /proc/PID/environ shows to
 * whoever may read it (a route running as root, say), are zeroed.
 *
 * Who includes it: reports/ (render signs, gate and merge verify), cli/
 * (which reads the key for gate, merge and report) and tests/.
 *
 * Ownership: sign_canonical() hands a malloc'd string to the caller
 * (free() it).  Nothing here keeps a reference to the report.
 */
#ifndef FENCECERT_SIGN_H
#define FENCECERT_SIGN_H

#include <stddef.h>

#include <jansson.h>

#include "common/error.h"

#define SIGN_KEY_ENV "FENCECERT_SIGNING_KEY"
#define SIGN_ALG "hmac-sha256"
#define SIGN_HEX_LEN 64

struct sign_key {
	const unsigned char *bytes; /* points into the environment; not owned */
	size_t len;
};

/*
 * Move the key out of the environment into this process's memory (a
 * forked child inherits it, an exec'd one does not): zero every
 * FENCECERT_SIGNING_KEY value in place and unset the name.  Call once,
 * first thing in main().  FC_NOMEM (the environment is scrubbed anyway).
 */
int sign_key_take(void) FC_MUST_CHECK;

/*
 * The key: the one sign_key_take() took, else the environment's.  Returns
 * 1 and fills *key when set, 0 when unset, FC_USAGE when set but empty.
 */
int sign_key_from_env(struct sign_key *key) FC_MUST_CHECK;

/* The canonical text of a report (without "signature").  FC_NOMEM. */
int sign_canonical(const json_t *report, char **out) FC_MUST_CHECK;

/* HMAC-SHA256 of the canonical form as lower-case hex plus NUL. */
int sign_compute(const json_t *report, const struct sign_key *key,
		 char hex[SIGN_HEX_LEN + 1]) FC_MUST_CHECK;

/* Compute and set (or replace) the report's "signature" member. */
int sign_report(json_t *report, const struct sign_key *key) FC_MUST_CHECK;

/*
 * Verify the report's signature with a constant-time compare.  Returns 0
 * when it verifies; FC_NOT_FOUND when the report has no "signature";
 * FC_CORRUPT when the signature is malformed, names another algorithm or
 * does not match (err says which); FC_NOMEM.
 */
int sign_verify(const json_t *report, const struct sign_key *key,
		char *err, size_t errlen) FC_MUST_CHECK;

#endif
