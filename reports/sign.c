/*
 * sign.c -- HMAC-SHA256 over a report's canonical form (sign.h).
 *
 * Invariants:
 *  1. What is signed is a pure function of the report's content: keys
 *     sorted, no whitespace, the "signature" member removed.  Writing a
 *     report with another indentation or key order keeps it valid.
 *  2. The MAC comes from OpenSSL's EVP_MAC; comparisons of MACs go
 *     through CRYPTO_memcmp so timing does not leak how much matched.
 *  3. A failing call leaves the report as it was.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "reports/sign.h"

/* what sign_key_take() found: taken, and the value (NULL: none set) */
static bool key_taken;
static char *key_value;

int sign_key_take(void)
{
	size_t n = strlen(SIGN_KEY_ENV);
	int rc = 0;

	for (char **e = environ; *e; e++) {
		char *v;
		if (strncmp(*e, SIGN_KEY_ENV, n) || (*e)[n] != '=')
			continue;
		v = *e + n + 1;
		if (!key_taken && !key_value && !(key_value = strdup(v)))
			rc = FC_NOMEM;
		explicit_bzero(v, strlen(v));
	}
	unsetenv(SIGN_KEY_ENV);
	key_taken = true;
	return rc;
}

int sign_key_from_env(struct sign_key *key)
{
	const char *v = key_taken ? key_value : getenv(SIGN_KEY_ENV);

	if (!v)
		return 0;
	if (!*v)
		return FC_USAGE;
	key->bytes = (const unsigned char *)v;
	key->len = strlen(v);
	return 1;
}

int sign_canonical(const json_t *report, char **out)
{
	json_t *copy = json_deep_copy(report);
	char *text;

	/* The copy keeps the caller's report untouched (invariant 3). */
	if (!copy)
		return FC_NOMEM;
	if (json_is_object(copy))
		json_object_del(copy, "signature");
	text = json_dumps(copy, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(copy);
	if (!text)
		return FC_NOMEM;
	*out = text;
	return 0;
}

static int hmac_sha256(const struct sign_key *key, const char *msg, size_t len,
		       unsigned char mac[32])
{
	EVP_MAC *alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = alg ? EVP_MAC_CTX_new(alg) : NULL;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						 (char *)"SHA256", 0),
		OSSL_PARAM_construct_end(),
	};
	size_t maclen = 0;
	int ok;

	ok = ctx && EVP_MAC_init(ctx, key->bytes, key->len, params) &&
	     EVP_MAC_update(ctx, (const unsigned char *)msg, len) &&
	     EVP_MAC_final(ctx, mac, &maclen, 32) && maclen == 32;
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(alg);
	return ok ? 0 : FC_NOMEM;
}

int sign_compute(const json_t *report, const struct sign_key *key,
		 char hex[SIGN_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char mac[32];
	char *text;
	int rc;

	rc = sign_canonical(report, &text);
	if (rc)
		return rc;
	rc = hmac_sha256(key, text, strlen(text), mac);
	free(text);
	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(mac); i++) {
		hex[2 * i] = digits[mac[i] >> 4];
		hex[2 * i + 1] = digits[mac[i] & 15];
	}
	hex[SIGN_HEX_LEN] = '\0';
	OPENSSL_cleanse(mac, sizeof(mac));
	return 0;
}

int sign_report(json_t *report, const struct sign_key *key)
{
	char hex[SIGN_HEX_LEN + 1];
	json_t *sig;
	int rc;

	if (!json_is_object(report))
		return FC_USAGE;
	rc = sign_compute(report, key, hex);
	if (rc)
		return rc;
	sig = json_pack("{s:s, s:s}", "alg", SIGN_ALG, "value", hex);
	if (!sig || json_object_set_new(report, "signature", sig))
		return FC_NOMEM;
	return 0;
}

int sign_verify(const json_t *report, const struct sign_key *key,
		char *err, size_t errlen)
{
	json_t *sig = json_object_get(report, "signature");
	const char *alg, *value;
	char want[SIGN_HEX_LEN + 1];
	int rc;

	if (!sig || json_is_null(sig)) {
		snprintf(err, errlen, "report has no signature");
		return FC_NOT_FOUND;
	}
	alg = json_string_value(json_object_get(sig, "alg"));
	value = json_string_value(json_object_get(sig, "value"));
	if (!alg || !value) {
		snprintf(err, errlen, "malformed signature: needs 'alg' and "
			 "'value' strings");
		return FC_CORRUPT;
	}
	if (strcmp(alg, SIGN_ALG) != 0) {
		snprintf(err, errlen, "unsupported signature algorithm '%s'", alg);
		return FC_CORRUPT;
	}
	rc = sign_compute(report, key, want);
	if (rc) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	/* Both sides are 64 hex digits before the constant-time compare, so
	 * only the length check can return early, and length is public. */
	if (strlen(value) != SIGN_HEX_LEN ||
	    CRYPTO_memcmp(value, want, SIGN_HEX_LEN) != 0) {
		snprintf(err, errlen, "signature does not match the report "
			 "(wrong key, or the report was changed after signing)");
		return FC_CORRUPT;
	}
	return 0;
}
