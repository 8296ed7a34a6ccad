/*
 * etcd_layout.c -- URL, keys and values of an "etcd://" target (see
 * etcd_layout.h for the layout and why).
 *
 * Invariants:
 *  1. Every variable key part goes through curl_easy_escape(), so a part
 *     never holds '/' and a key never holds a byte below '!': splitting a
 *     key at '/' is exact, and "K\x01" sorts right after K with nothing of
 *     ours in between (the fence's range deletes and the observer's paging
 *     rely on it).
 *  2. Values are built and read with jansson only; a value this file did
 *     not write is FC_CORRUPT, never guessed at.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fences/etcd_layout.h"
#include "common/host_pid.h"

/* ---- URL ------------------------------------------------------------ */

static int prefix_valid(const char *p, size_t n)
{
	if (n == 0 || n > ETCD_LAYOUT_PREFIX_MAX || p[0] == '/' ||
	    p[n - 1] == '/')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (p[i] <= ' ' || p[i] > '~' || p[i] == '?' || p[i] == '#' ||
		    (p[i] == '/' && i + 1 < n && p[i + 1] == '/'))
			return 0;
	return 1;
}

static int parse_first(const char *q, size_t nmembers, struct etcd_where *w,
		       char *err, size_t errlen)
{
	unsigned long n;
	char *end;

	if (strcmp(q, "first=pid") == 0) {
		w->first = (int)((unsigned long)host_pid() % nmembers);
		return 0;
	}
	if (strncmp(q, "first=", 6) == 0 && q[6] >= '0' && q[6] <= '9') {
		n = strtoul(q + 6, &end, 10);
		if (!*end && n < nmembers) {
			w->first = (int)n;
			return 0;
		}
		snprintf(err, errlen, "etcd target option '%s': no such member",
			 q);
		return FC_USAGE;
	}
	snprintf(err, errlen, "unknown etcd target option '%s' (known: "
		 "first=pid, first=N)", q);
	return FC_USAGE;
}

int etcd_layout_parse(const char *url, struct etcd_where *w, char *err,
		      size_t errlen)
{
	const char *hosts, *slash, *query;
	size_t n, plen, count = 1;

	memset(w, 0, sizeof(*w));
	w->first = -1;
	if (!url || strncmp(url, "etcd://", 7) != 0) {
		snprintf(err, errlen, "target url is not etcd://HOST:PORT"
			 "[,HOST:PORT...]/PREFIX");
		return FC_USAGE;
	}
	hosts = url + 7;
	slash = strchr(hosts, '/');
	n = slash ? (size_t)(slash - hosts) : strlen(hosts);
	/* The message must not echo a password back into logs. */
	if (memchr(hosts, '@', n)) {
		snprintf(err, errlen, "etcd target url must not carry "
			 "credentials");
		return FC_USAGE;
	}
	if (n == 0 || n > ETCD_LAYOUT_MEMBERS_MAX) {
		snprintf(err, errlen, "etcd target url needs 1 to %d bytes of "
			 "HOST:PORT[,HOST:PORT...]", ETCD_LAYOUT_MEMBERS_MAX);
		return FC_USAGE;
	}
	query = slash ? strchr(slash, '?') : NULL;
	plen = slash ? (query ? (size_t)(query - slash - 1)
			      : strlen(slash + 1)) : 0;
	if (!slash || !prefix_valid(slash + 1, plen)) {
		snprintf(err, errlen, "target url '%s' needs a PREFIX: "
			 "printable, no spaces, '?', '#' or empty path "
			 "segments, at most %d bytes", url,
			 ETCD_LAYOUT_PREFIX_MAX);
		return FC_USAGE;
	}
	memcpy(w->members, hosts, n);
	w->members[n] = '\0';
	memcpy(w->prefix, slash + 1, plen);
	w->prefix[plen] = '\0';
	for (size_t i = 0; i < n; i++)
		count += hosts[i] == ',';
	if (query)
		return parse_first(query + 1, count, w, err, errlen);
	return 0;
}

/* ---- keys ----------------------------------------------------------- */

static char *escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	char *copy = e ? strdup(e) : NULL;

	curl_free(e);
	return copy;
}

static char *unescape(const char *s, size_t len)
{
	int outlen = 0;
	char *d, *copy = NULL;

	if (len > (size_t)1 << 30)
		return NULL;
	d = curl_easy_unescape(NULL, s, (int)len, &outlen);
	if (d)
		copy = strndup(d, (size_t)outlen);
	curl_free(d);
	return copy;
}

static char *dir_key(const struct etcd_where *w, const char *dir,
		     const char *op)
{
	char *e = op ? escape(op) : NULL, *key;

	if (op && !e)
		return NULL;
	if (asprintf(&key, "%s/%s/%s", w->prefix, dir, e ? e : "") < 0)
		key = NULL;
	free(e);
	return key;
}

char *etcd_layout_fence_key(const struct etcd_where *w, const char *op)
{
	return dir_key(w, ETCD_LAYOUT_FENCE_DIR, op);
}

char *etcd_layout_epoch_key(const struct etcd_where *w, const char *op)
{
	return dir_key(w, ETCD_LAYOUT_EPOCH_DIR, op);
}

char *etcd_layout_fence_dir(const struct etcd_where *w)
{
	return dir_key(w, ETCD_LAYOUT_FENCE_DIR, NULL);
}

char *etcd_layout_epoch_dir(const struct etcd_where *w)
{
	return dir_key(w, ETCD_LAYOUT_EPOCH_DIR, NULL);
}

char *etcd_layout_rows_dir(const struct etcd_where *w, const char *table)
{
	char *key;

	if (asprintf(&key, "%s/%s/rows/", w->prefix, table) < 0)
		return NULL;
	return key;
}

char *etcd_layout_row_dir(const struct etcd_where *w, const char *table,
			  const char *row_key)
{
	char *k = escape(row_key), *key = NULL;

	if (k && asprintf(&key, "%s/%s/rows/%s/", w->prefix, table, k) < 0)
		key = NULL;
	free(k);
	return key;
}

char *etcd_layout_row_key(const struct etcd_where *w, const char *table,
			  const char *row_key, const char *op,
			  long long epoch, size_t i)
{
	char *k = escape(row_key), *o = escape(op), *key = NULL;

	if (k && o && asprintf(&key, "%s/%s/rows/%s/%s/%lld-%zu", w->prefix,
			       table, k, o, epoch, i) < 0)
		key = NULL;
	free(k);
	free(o);
	return key;
}

int etcd_layout_split_row(const char *rest, char **row_key, char **op)
{
	const char *slash = strchr(rest, '/');
	const char *next = slash ? strchr(slash + 1, '/') : NULL;

	*op = NULL;
	*row_key = unescape(rest, slash ? (size_t)(slash - rest)
					: strlen(rest));
	if (!*row_key)
		return FC_NOMEM;
	/* "<op>/<epoch>-<i>" with nothing after: the fence's shape. */
	if (next && next > slash + 1 && next[1] && !strchr(next + 1, '/')) {
		*op = unescape(slash + 1, (size_t)(next - slash - 1));
		if (!*op) {
			free(*row_key);
			*row_key = NULL;
			return FC_NOMEM;
		}
	}
	return 0;
}

int etcd_layout_split_op(const char *rest, char **op)
{
	*op = NULL;
	if (!*rest || strchr(rest, '/'))
		return 0;
	*op = unescape(rest, strlen(rest));
	return *op ? 0 : FC_NOMEM;
}

/* ---- values --------------------------------------------------------- */

static char *dump(json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	return text;
}

char *etcd_layout_row_value(const char *payload)
{
	return dump(json_pack("{s:o}", "payload",
			      payload ? json_string(payload) : json_null()));
}

char *etcd_layout_epoch_value(const char *op, long long epoch)
{
	return dump(json_pack("{s:s, s:I}", "operation_id", op, "epoch",
			      (json_int_t)epoch));
}

char *etcd_layout_fence_value(const struct etcd_fence_value *v)
{
	return dump(json_pack("{s:s, s:s, s:I, s:I, s:s, s:I, s:s}",
			      "operation_id", v->operation_id,
			      "intent_digest", v->intent_digest,
			      "epoch", (json_int_t)v->epoch,
			      "rows", (json_int_t)v->rows,
			      "table", v->table,
			      "applied_at", (json_int_t)v->applied_at,
			      "write_id", v->write_id));
}

static int copy_field(char *dst, size_t len, const char *src)
{
	if (!src || strlen(src) >= len)
		return FC_CORRUPT;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

int etcd_layout_fence_decode(const char *text, struct etcd_fence_value *v)
{
	const char *op, *intent, *table = "", *wid = "";
	json_int_t epoch, rows, at = 0;
	json_t *doc = json_loads(text, 0, NULL);
	int rc = FC_CORRUPT;

	memset(v, 0, sizeof(*v));
	if (doc && json_unpack(doc, "{s:s, s:s, s:I, s:I, s?s, s?I, s?s}",
			       "operation_id", &op, "intent_digest", &intent,
			       "epoch", &epoch, "rows", &rows, "table", &table,
			       "applied_at", &at, "write_id", &wid) == 0 &&
	    epoch >= 1 && rows >= 0 &&
	    !copy_field(v->operation_id, sizeof(v->operation_id), op) &&
	    !copy_field(v->intent_digest, sizeof(v->intent_digest), intent) &&
	    !copy_field(v->table, sizeof(v->table), table) &&
	    !copy_field(v->write_id, sizeof(v->write_id), wid)) {
		v->epoch = epoch;
		v->rows = rows;
		v->applied_at = at;
		rc = 0;
	}
	json_decref(doc);
	return rc;
}

int etcd_layout_epoch_decode(const char *text, long long *epoch)
{
	json_t *doc = json_loads(text, 0, NULL);
	json_int_t e;
	int rc = FC_CORRUPT;

	if (doc && json_unpack(doc, "{s:I}", "epoch", &e) == 0 && e >= 1) {
		*epoch = e;
		rc = 0;
	}
	json_decref(doc);
	return rc;
}
