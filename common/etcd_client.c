/*
 * etcd_client.c -- etcd v3 JSON gateway client (see etcd_client.h).
 *
 * Invariants:
 *  1. A request that may have been executed is never sent a second time by
 *     this module: after a write txn was sent, any failure ends the call with
 *     FC_ERR_COMMIT_UNKNOWN.  Only requests that provably did not execute (no
 *     connection, nothing sent, "no leader", invalid) move on to the next
 *     member.  libcurl's own retry of a request on a reused connection that
 *     turns out dead happens only before any answer byte and is harmless for
 *     our txns, whose compares let at most one copy apply.
 *  2. Every request carries the gRPC metadata "hasleader: true" (gateway
 *     header Grpc-Metadata-Hasleader), so a member without a leader refuses
 *     at once instead of holding the request until a server-side timeout.
 *  3. Every answer is bounded (ETCD_RESPONSE_MAX) and every request has a
 *     connect and a total timeout; a call starts no attempt after its budget.
 *  4. c->current names the member to try first: the last one that answered,
 *     or the one after a member that lost a request.
 *
 *   call:  member[current] --ok--> done (current = member)
 *             | unsent / refused-before-execution
 *             v
 *          member[current+1] ... (a pause after each full round, budget)
 *             | write sent, no answer --> FC_ERR_COMMIT_UNKNOWN
 *             v
 *          budget spent --> FC_JOURNAL_UNAVAILABLE
 */
#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/dl_curl.h"
#include "common/etcd_client.h"

#define ROUND_PAUSE_MS 100

struct buf {
	char *data;
	size_t len, cap;
	int overflow;
};

struct etcd_client {
	CURL *curl;
	struct curl_slist *headers;
	char *members[ETCD_MEMBERS_MAX];
	size_t nmembers;
	size_t current;
	struct buf answer;
	char note[ETCD_MEMBERS_MAX][128]; /* why each member's last attempt
					   * failed, this call */
	char errmsg[512];
};

/* How one attempt against one member ended. */
enum attempt {
	ATT_OK,
	ATT_UNSENT,   /* nothing executed: try the next member */
	ATT_REFUSED,  /* executed nothing, said so ("no leader"): next member */
	ATT_INVALID,  /* etcd rejected the request itself: stop, FC_USAGE */
	ATT_FAILED,   /* sent; outcome unknown (writes) / try next (reads) */
	ATT_NOMEM,
};

static int fail(etcd_client *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(etcd_client *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
	va_end(ap);
	return code;
}


static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* ---- base64 (OpenSSL EVP) ----------------------------------------------- */

/* A new NUL-terminated base64 text of n bytes, or NULL (out of memory). */
static char *b64_encode(const char *in, size_t n)
{
	char *out;

	if (n > (size_t)1 << 28)
		return NULL;
	out = malloc(4 * ((n + 2) / 3) + 1);
	if (out)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in,
				(int)n);
	return out;
}

/* Decode base64 text into a new NUL-terminated buffer; *n gets its length.
 * Returns NULL on malformed input or out of memory. */
static char *b64_decode(const char *in, size_t *n)
{
	size_t len = strlen(in), pad = 0;
	char *out;
	int got;

	if (len % 4 != 0 || len > (size_t)1 << 28)
		return NULL;
	out = malloc(len / 4 * 3 + 1);
	if (!out)
		return NULL;
	got = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)in,
			      (int)len);
	if (got < 0) {
		free(out);
		return NULL;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	while (pad < 2 && len > pad && in[len - 1 - pad] == '=')
		pad++;
	*n = (size_t)got - pad;
	out[*n] = '\0';
	return out;
}

/* ---- creation ----------------------------------------------------------- */

static int member_valid(const char *m)
{
	const char *colon = strrchr(m, ':');
	char *end;
	long port;

	if (!colon || colon == m || !colon[1])
		return 0;
	for (const char *p = m; p < colon; p++)
		if (*p <= ' ' || *p > '~' || *p == '/' || *p == '@')
			return 0;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	return !errno && !*end && port > 0 && port < 65536;
}

static int add_members(etcd_client *c, const char *list)
{
	const char *p = list;

	while (*p) {
		size_t len = strcspn(p, ",");
		char *m;

		if (c->nmembers == ETCD_MEMBERS_MAX)
			return fail(c, FC_USAGE, "too many etcd members in "
				    "'%s' (max %d)", list, ETCD_MEMBERS_MAX);
		m = strndup(p, len);
		if (!m)
			return fail(c, FC_NOMEM, "out of memory");
		c->members[c->nmembers++] = m;
		if (!member_valid(m))
			return fail(c, FC_USAGE, "invalid etcd member '%s' "
				    "(expected HOST:PORT)", m);
		p += len;
		if (*p == ',' && !*++p)
			return fail(c, FC_USAGE, "empty etcd member in '%s'",
				    list);
	}
	if (!c->nmembers)
		return fail(c, FC_USAGE, "no etcd member given");
	return 0;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct buf *b = userdata;
	size_t n = size * nmemb;

	if (n > ETCD_RESPONSE_MAX - b->len) {
		b->overflow = 1;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p)
			return 0;
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

static int setup_curl(etcd_client *c)
{
	static const char *const headers[] = {
		"Content-Type: application/json",
		"Expect:", /* no 100-continue round trip for bodies > 1 KiB */
		"Grpc-Metadata-Hasleader: true",
	};
	CURLcode rc = CURLE_OK;

	c->curl = curl_easy_init();
	if (!c->curl)
		return fail(c, FC_NOMEM, "cannot create a libcurl handle");
	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		struct curl_slist *l;

		l = curl_slist_append(c->headers, headers[i]);
		if (!l)
			return fail(c, FC_NOMEM, "out of memory");
		c->headers = l;
	}
	rc |= curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
	rc |= curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	/* A proxy from the environment must not sit between us and etcd. */
	rc |= curl_easy_setopt(c->curl, CURLOPT_NOPROXY, "*");
	rc |= curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http");
	rc |= curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
	rc |= curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS,
			       (long)ETCD_CONNECT_TIMEOUT_MS);
	rc |= curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS,
			       (long)ETCD_REQUEST_TIMEOUT_MS);
	rc |= curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	rc |= curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->answer);
	if (rc != CURLE_OK)
		return fail(c, FC_USAGE, "libcurl lacks an option fencecert "
			    "needs (%s)", curl_easy_strerror(rc));
	return 0;
}

int etcd_client_new(const char *members, etcd_client **out, char *err,
		    size_t errlen)
{
	etcd_client *c;
	int rc;

	*out = NULL;
	if ((rc = dl_curl_load(err, errlen)))
		return rc;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "cannot initialize libcurl");
		return FC_JOURNAL_UNAVAILABLE;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		curl_global_cleanup();
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	rc = add_members(c, members ? members : "");
	if (!rc)
		rc = setup_curl(c);
	if (rc) {
		snprintf(err, errlen, "%s", c->errmsg);
		etcd_client_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void etcd_client_free(etcd_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->headers);
	for (size_t i = 0; i < c->nmembers; i++)
		free(c->members[i]);
	free(c->answer.data);
	free(c);
	curl_global_cleanup();
}

const char *etcd_client_errmsg(const etcd_client *c)
{
	return c ? c->errmsg : "no etcd client";
}

const char *etcd_client_member(const etcd_client *c)
{
	return c->members[c->current];
}

void etcd_client_prefer(etcd_client *c, size_t i)
{
	c->current = i % c->nmembers;
}

/* ---- one attempt -------------------------------------------------------- */

static void note(etcd_client *c, size_t m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note(etcd_client *c, size_t m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->note[m], sizeof(c->note[m]), fmt, ap);
	va_end(ap);
}

/* "member: note; member: note" for the members tried in this call. */
static void notes(const etcd_client *c, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t m = 0; m < c->nmembers && used < len; m++) {
		int n;

		if (!c->note[m][0])
			continue;
		n = snprintf(out + used, len - used, "%s%s: %s",
			     used ? "; " : "", c->members[m], c->note[m]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

/* A gRPC error carried in the answer body: classify it (see the header). */
static enum attempt server_error(etcd_client *c, size_t m, json_t *root,
				 long status)
{
	const char *msg = json_string_value(json_object_get(root, "message"));
	json_int_t code = json_integer_value(json_object_get(root, "code"));

	if (!msg)
		msg = json_string_value(json_object_get(root, "error"));
	note(c, m, "%s (grpc code %d, http %ld)", msg ? msg : "error",
	     (int)code, status);
	if (code == 3) /* InvalidArgument: checked before execution */
		return ATT_INVALID;
	if (msg && (strstr(msg, "no leader") ||
		    strstr(msg, "too many requests")))
		return ATT_REFUSED;
	return ATT_FAILED;
}

static enum attempt post(etcd_client *c, size_t m, const char *path,
			 const char *body, size_t len, json_t **answer)
{
	char url[320];
	json_error_t jerr;
	long status = 0, sent = 0;
	json_t *root;
	CURLcode rc;

	*answer = NULL;
	snprintf(url, sizeof(url), "http://%s%s", c->members[m], path);
	c->answer.len = 0;
	c->answer.overflow = 0;
	if (curl_easy_setopt(c->curl, CURLOPT_URL, url) != CURLE_OK ||
	    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body) != CURLE_OK ||
	    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)len) !=
	    CURLE_OK) {
		note(c, m, "cannot set up a request");
		return ATT_NOMEM;
	}
	rc = curl_easy_perform(c->curl);
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(c->curl, CURLINFO_REQUEST_SIZE, &sent);
	if (rc != CURLE_OK) {
		if (c->answer.overflow)
			note(c, m, "answer larger than %u bytes",
			     ETCD_RESPONSE_MAX);
		else
			note(c, m, "%s", curl_easy_strerror(rc));
		if (rc == CURLE_COULDNT_CONNECT ||
		    rc == CURLE_COULDNT_RESOLVE_HOST || sent == 0)
			return ATT_UNSENT;
		return ATT_FAILED;
	}
	root = json_loadb(c->answer.data ? c->answer.data : "",
			  c->answer.len, 0, &jerr);
	if (!root || !json_is_object(root)) {
		json_decref(root);
		note(c, m, "unreadable answer (http %ld): %s", status,
		     root ? "not an object" : jerr.text);
		return ATT_FAILED;
	}
	if (status != 200 || json_object_get(root, "code") ||
	    json_object_get(root, "error")) {
		enum attempt a = server_error(c, m, root, status);

		json_decref(root);
		return a;
	}
	*answer = root;
	return ATT_OK;
}

/*
 * Run one request with failover (see the diagram at the top).  writes: the
 * request may change the store, so a lost answer ends the call.
 */
static int call(etcd_client *c, const char *path, json_t *req, int writes,
		json_t **answer)
{
	long long start = clock_mono_ms();
	char *body = json_dumps(req, JSON_COMPACT);
	size_t m = c->current, tried = 0;
	char why[400];

	*answer = NULL;
	if (!body)
		return fail(c, FC_NOMEM, "out of memory encoding a request");
	for (size_t i = 0; i < c->nmembers; i++)
		c->note[i][0] = '\0';
	for (;;) {
		if (tried > 0) {
			if (clock_mono_ms() - start >= ETCD_CALL_BUDGET_MS)
				break;
			if (tried % c->nmembers == 0)
				pause_ms(ROUND_PAUSE_MS);
		}
		tried++;
		switch (post(c, m, path, body, strlen(body), answer)) {
		case ATT_OK:
			c->current = m;
			free(body);
			return 0;
		case ATT_NOMEM:
			free(body);
			return fail(c, FC_NOMEM, "%s: %s", c->members[m],
				    c->note[m]);
		case ATT_INVALID:
			free(body);
			return fail(c, FC_USAGE, "etcd member '%s' refused the "
				    "request: %s", c->members[m], c->note[m]);
		case ATT_FAILED:
			if (writes) {
				c->current = (m + 1) % c->nmembers;
				free(body);
				return fail(c, FC_ERR_COMMIT_UNKNOWN,
					    "no answer from etcd member '%s' "
					    "after the request was sent: %s",
					    c->members[m], c->note[m]);
			}
			break;
		case ATT_UNSENT:
		case ATT_REFUSED:
			break;
		}
		m = (m + 1) % c->nmembers;
	}
	free(body);
	notes(c, why, sizeof(why));
	return fail(c, FC_JOURNAL_UNAVAILABLE, "no etcd member could serve "
		    "the request within %d ms (%zu attempts): %s",
		    ETCD_CALL_BUDGET_MS, tried, why);
}

/* ---- answers ------------------------------------------------------------ */

/* proto3 JSON writes int64 as a string and omits zero values. */
static long long get_ll(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_integer(v))
		return (long long)json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return 0;
}

static int decode_kv(json_t *obj, struct etcd_kv *kv)
{
	const char *key = json_string_value(json_object_get(obj, "key"));
	const char *value = json_string_value(json_object_get(obj, "value"));
	size_t klen;

	if (!key)
		return FC_CORRUPT;
	kv->key = b64_decode(key, &klen);
	kv->value = b64_decode(value ? value : "", &kv->value_len);
	if (!kv->key || !kv->value)
		return FC_CORRUPT;
	kv->create_revision = get_ll(obj, "create_revision");
	kv->mod_revision = get_ll(obj, "mod_revision");
	kv->version = get_ll(obj, "version");
	return 0;
}

static int decode_range(json_t *obj, struct etcd_range *r)
{
	json_t *kvs = json_object_get(obj, "kvs"), *kv;
	size_t i;
	int rc;

	memset(r, 0, sizeof(*r));
	r->revision = get_ll(json_object_get(obj, "header"), "revision");
	r->more = json_is_true(json_object_get(obj, "more"));
	if (!kvs)
		return 0;
	if (!json_is_array(kvs))
		return FC_CORRUPT;
	r->kvs = calloc(json_array_size(kvs) + 1, sizeof(*r->kvs));
	if (!r->kvs)
		return FC_NOMEM;
	json_array_foreach(kvs, i, kv) {
		r->n = i + 1;
		if ((rc = decode_kv(kv, &r->kvs[i]))) {
			etcd_range_release(r);
			return rc;
		}
	}
	return 0;
}

void etcd_range_release(struct etcd_range *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->kvs[i].key);
		free(r->kvs[i].value);
	}
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

void etcd_txn_result_release(struct etcd_txn_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		etcd_range_release(&r->ranges[i]);
	free(r->ranges);
	memset(r, 0, sizeof(*r));
}

/* ---- requests ----------------------------------------------------------- */

/* {"key": b64(key)[, "range_end": b64(end)]} or NULL (out of memory). */
static json_t *key_object(const char *key, const char *end)
{
	char *k = b64_encode(key, strlen(key));
	char *e = end ? b64_encode(end, strlen(end)) : NULL;
	json_t *obj = NULL;

	if (k && (!end || e))
		obj = end ? json_pack("{s:s, s:s}", "key", k, "range_end", e)
			  : json_pack("{s:s}", "key", k);
	free(k);
	free(e);
	return obj;
}

int etcd_client_range(etcd_client *c, const char *key, const char *end,
		      long long limit, long long revision,
		      struct etcd_range *out)
{
	json_t *req = key_object(key, end), *answer;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!req || (limit > 0 &&
		     json_object_set_new(req, "limit", json_integer(limit))) ||
	    (revision > 0 && json_object_set_new(req, "revision",
						  json_integer(revision)))) {
		json_decref(req);
		return fail(c, FC_NOMEM, "out of memory building a range");
	}
	rc = call(c, "/v3/kv/range", req, 0, &answer);
	json_decref(req);
	if (rc)
		return rc;
	rc = decode_range(answer, out);
	json_decref(answer);
	if (rc)
		return fail(c, rc, "malformed range answer from etcd member "
			    "'%s'", etcd_client_member(c));
	return 0;
}

int etcd_txn_init(struct etcd_txn *t)
{
	t->writes = 0;
	t->body = json_pack("{s:[], s:[], s:[]}", "compare", "success",
			    "failure");
	return t->body ? 0 : FC_NOMEM;
}

void etcd_txn_release(struct etcd_txn *t)
{
	if (!t)
		return;
	json_decref(t->body);
	t->body = NULL;
}

int etcd_txn_compare(struct etcd_txn *t, const char *key,
		     enum etcd_target target, long long value)
{
	static const char *const names[][2] = {
		[ETCD_CREATE] = { "CREATE", "create_revision" },
		[ETCD_MOD] = { "MOD", "mod_revision" },
		[ETCD_VERSION] = { "VERSION", "version" },
	};
	json_t *cmp = key_object(key, NULL);

	if (!cmp)
		return FC_NOMEM;
	if (json_object_set_new(cmp, "target", json_string(names[target][0])) ||
	    json_object_set_new(cmp, "result", json_string("EQUAL")) ||
	    json_object_set_new(cmp, names[target][1], json_integer(value))) {
		json_decref(cmp);
		return FC_NOMEM;
	}
	return json_array_append_new(json_object_get(t->body, "compare"),
				     cmp) ? FC_NOMEM : 0;
}

static int add_op(struct etcd_txn *t, enum etcd_branch b, const char *kind,
		  json_t *args)
{
	json_t *list = json_object_get(t->body, b == ETCD_SUCCESS ?
				       "success" : "failure");

	if (!args)
		return FC_NOMEM;
	return json_array_append_new(list, json_pack("{s:o}", kind, args)) ?
	       FC_NOMEM : 0;
}

int etcd_txn_put(struct etcd_txn *t, enum etcd_branch b, const char *key,
		 const char *value, size_t value_len)
{
	json_t *args = key_object(key, NULL);
	char *v = b64_encode(value, value_len);

	if (!args || !v || json_object_set_new(args, "value", json_string(v))) {
		json_decref(args);
		free(v);
		return FC_NOMEM;
	}
	free(v);
	t->writes = 1;
	return add_op(t, b, "request_put", args);
}

int etcd_txn_range(struct etcd_txn *t, enum etcd_branch b, const char *key,
		   const char *end)
{
	return add_op(t, b, "request_range", key_object(key, end));
}

int etcd_txn_delete(struct etcd_txn *t, enum etcd_branch b, const char *key,
		    const char *end)
{
	t->writes = 1;
	return add_op(t, b, "request_delete_range", key_object(key, end));
}

static int decode_txn(json_t *answer, struct etcd_txn_result *out)
{
	json_t *list = json_object_get(answer, "responses"), *item;
	size_t i;
	int rc;

	out->succeeded = json_is_true(json_object_get(answer, "succeeded"));
	out->revision = get_ll(json_object_get(answer, "header"), "revision");
	if (!list)
		return 0;
	if (!json_is_array(list))
		return FC_CORRUPT;
	out->ranges = calloc(json_array_size(list) + 1, sizeof(*out->ranges));
	if (!out->ranges)
		return FC_NOMEM;
	out->n = json_array_size(list);
	json_array_foreach(list, i, item) {
		json_t *range = json_object_get(item, "response_range");

		if (range && (rc = decode_range(range, &out->ranges[i])))
			return rc;
	}
	return 0;
}

/* ---- answers as bytes (tests and fuzzing) ------------------------------- */

/* The body of an answer as post() reads it: a JSON object. */
static json_t *load_answer(const char *body, size_t len)
{
	json_t *root = json_loadb(body, len, 0, NULL);

	if (root && !json_is_object(root)) {
		json_decref(root);
		return NULL;
	}
	return root;
}

int etcd_range_decode(const char *body, size_t len, struct etcd_range *out)
{
	json_t *root = load_answer(body, len);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!root)
		return FC_CORRUPT;
	rc = decode_range(root, out);
	json_decref(root);
	return rc;
}

int etcd_txn_result_decode(const char *body, size_t len,
			   struct etcd_txn_result *out)
{
	json_t *root = load_answer(body, len);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!root)
		return FC_CORRUPT;
	rc = decode_txn(root, out);
	json_decref(root);
	if (rc)
		etcd_txn_result_release(out);
	return rc;
}

int etcd_client_txn(etcd_client *c, const struct etcd_txn *t,
		    struct etcd_txn_result *out)
{
	json_t *answer;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!t->body)
		return fail(c, FC_NOMEM, "out of memory building a txn");
	rc = call(c, "/v3/kv/txn", t->body, t->writes, &answer);
	if (rc)
		return rc;
	rc = decode_txn(answer, out);
	json_decref(answer);
	if (rc) {
		etcd_txn_result_release(out);
		/* The txn ran; only our reading of the answer failed. */
		if (t->writes)
			rc = FC_ERR_COMMIT_UNKNOWN;
		return fail(c, rc, "malformed txn answer from etcd member '%s'",
			    etcd_client_member(c));
	}
	return 0;
}

int etcd_prefix_end(const char *prefix, char *out, size_t outlen)
{
	size_t n = strlen(prefix);

	if (n == 0 || n >= outlen || (unsigned char)prefix[n - 1] == 0xff)
		return FC_USAGE;
	memcpy(out, prefix, n + 1);
	out[n - 1] = (char)((unsigned char)out[n - 1] + 1);
	return 0;
}
