/*
 * identity.c -- canonical length-prefixed encoding and SHA-256 (OpenSSL).
 *
 * The encoding is fed to the digest field by field; nothing is concatenated
 * into a temporary buffer, so the only limits are the field count and value
 * size, which exist to keep identities human-sized.
 *
 * The digest is OpenSSL's SHA256_Init/Update/Final, not EVP: every route
 * attempt is a fresh process that computes its operation id once, and EVP's
 * first use loads the default provider and fills its name map from every
 * legacy algorithm -- measured here at 2.5 ms and 70 page faults per process,
 * a quarter of a whole attempt of the C route.  The direct functions cost
 * nothing to set up.  (Deprecated in OpenSSL 3, still built and supported.)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "journal/identity.h"

/* Names that change from one try to the next; SPEC section 2. */
static const char *const forbidden[] = {
	"try", "try_number", "attempt", "host", "hostname", "pod", "pid",
	"time", "now", "timestamp", "random", "nonce", "run_id", NULL,
};

static int utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];
		size_t extra;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			extra = 1, cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			extra = 2, cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			extra = 3, cp = c & 0x07;
		} else {
			return 0;
		}
		if (i + extra >= len)
			return 0;
		for (size_t k = 1; k <= extra; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) ||
		    (extra == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += extra + 1;
	}
	return 1;
}

static int is_forbidden(const char *name)
{
	for (const char *const *f = forbidden; *f; f++)
		if (strcmp(*f, name) == 0)
			return 1;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	const struct identity_field *fa = *(const struct identity_field *const *)a;
	const struct identity_field *fb = *(const struct identity_field *const *)b;

	return strcmp(fa->name, fb->name);
}

static void hex_digest(SHA256_CTX *ctx, char out[IDENTITY_DIGEST_LEN + 1])
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	SHA256_Final(md, ctx);
	memcpy(out, "sha256:", 7);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
	out[IDENTITY_DIGEST_LEN] = '\0';
}

static void put_prefixed(SHA256_CTX *ctx, const char *s)
{
	size_t len = strlen(s);
	unsigned char be[4] = {
		(unsigned char)(len >> 24), (unsigned char)(len >> 16),
		(unsigned char)(len >> 8), (unsigned char)len,
	};

	SHA256_Update(ctx, be, sizeof(be));
	SHA256_Update(ctx, s, len);
}

int identity_digest(const struct identity_field *fields, size_t n,
		    char out[IDENTITY_DIGEST_LEN + 1], char *err, size_t errlen)
{
	const struct identity_field *sorted[IDENTITY_MAX_FIELDS];
	SHA256_CTX ctx;

	if (n == 0 || n > IDENTITY_MAX_FIELDS) {
		snprintf(err, errlen, "need 1 to %d fields, got %zu",
			 IDENTITY_MAX_FIELDS, n);
		return FC_USAGE;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = fields[i].name, *value = fields[i].value;

		if (!name || !*name) {
			snprintf(err, errlen, "field %zu has an empty name", i + 1);
			return FC_USAGE;
		}
		if (!value)
			value = "";
		if (is_forbidden(name)) {
			snprintf(err, errlen,
				 "field '%s' changes between tries and cannot enter an identity",
				 name);
			return FC_USAGE;
		}
		if (!utf8_valid((const unsigned char *)name, strlen(name)) ||
		    !utf8_valid((const unsigned char *)value, strlen(value))) {
			snprintf(err, errlen, "field '%s' is not valid UTF-8", name);
			return FC_USAGE;
		}
		if (strlen(value) > IDENTITY_MAX_VALUE) {
			snprintf(err, errlen, "field '%s' is longer than %d bytes",
				 name, IDENTITY_MAX_VALUE);
			return FC_USAGE;
		}
		sorted[i] = &fields[i];
	}
	if (n > 1)
		qsort(sorted, n, sizeof(sorted[0]), by_name);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) {
			snprintf(err, errlen, "field '%s' is given twice",
				 sorted[i]->name);
			return FC_USAGE;
		}
	}

	SHA256_Init(&ctx);
	for (size_t i = 0; i < n; i++) {
		put_prefixed(&ctx, sorted[i]->name);
		put_prefixed(&ctx, sorted[i]->value ? sorted[i]->value : "");
	}
	hex_digest(&ctx, out);
	return 0;
}

void identity_buffer_digest(const void *buf, size_t len,
			    char out[IDENTITY_DIGEST_LEN + 1])
{
	SHA256_CTX ctx;

	SHA256_Init(&ctx);
	SHA256_Update(&ctx, buf, len);
	hex_digest(&ctx, out);
}

struct identity_hash {
	SHA256_CTX ctx;
};

struct identity_hash *identity_hash_new(void)
{
	struct identity_hash *h = malloc(sizeof(*h));

	if (h)
		SHA256_Init(&h->ctx);
	return h;
}

void identity_hash_update(struct identity_hash *h, const void *buf, size_t len)
{
	SHA256_Update(&h->ctx, buf, len);
}

void identity_hash_final(struct identity_hash *h,
			 char out[IDENTITY_DIGEST_LEN + 1])
{
	hex_digest(&h->ctx, out);
	free(h);
}

int identity_file_digest(const char *path, char out[IDENTITY_DIGEST_LEN + 1])
{
	unsigned char buf[65536];
	SHA256_CTX ctx;
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return FC_IO;
	SHA256_Init(&ctx);
	while ((got = read(fd, buf, sizeof(buf))) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return FC_IO;
		}
		SHA256_Update(&ctx, buf, (size_t)got);
	}
	close(fd);
	hex_digest(&ctx, out);
	return 0;
}

int identity_digest_valid(const char *s)
{
	if (strncmp(s, "sha256:", 7) != 0 || strlen(s) != IDENTITY_DIGEST_LEN)
		return 0;
	for (const char *p = s + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}
