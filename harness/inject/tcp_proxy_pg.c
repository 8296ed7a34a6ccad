/*
 * tcp_proxy_pg.c -- the PostgreSQL wire protocol (v3), as far as the fault
 * proxy needs it: find the client message that makes the server commit.
 *
 * Client messages: until the StartupMessage they carry no type byte (an
 * SSLRequest or GSSENCRequest may come first; a server answering 'S' or
 * 'G' turns the session into TLS, which is relayed unread).  After it each
 * message is TYPE, INT32 LENGTH (counting itself), BODY.  Only these types
 * can commit:
 *   'Q' query text           -> its statements are classified here
 *   'P' name, query text     -> the statement's kind is remembered by name
 *   'B' portal, statement    -> the portal takes the statement's kind
 *   'E' portal               -> a trigger when that portal commits
 *   'c' CopyDone             -> a trigger when it ends an autocommit COPY
 * A COMMIT commits wherever it is; a write commits by itself only outside
 * a transaction block, which the server's last ReadyForQuery ('Z', status
 * 'I' idle, 'T' in a block, 'E' failed block) tells.  An autocommit
 * `COPY ... FROM STDIN` (psql's \copy) commits when the server takes the
 * client's CopyDone, after the CopyData: that message is its trigger; a
 * CopyFail or the next ReadyForQuery ends the COPY without one.
 *
 * Invariants:
 *   1. Bytes are classified once: tcp_proxy__pg_scan() reports how many
 *      leading bytes are decided and never looks back at them.
 *   2. At most PGW_HEAD_MAX bytes of a query message are read to classify
 *      it (the relay keeps no more); the rest of the message streams.
 *   3. What is not understood is relayed, never refused: a malformed length
 *      turns the scanner off for that connection (opaque), as TLS does.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "harness/inject/tcp_proxy_impl.h"

enum { PHASE_STARTUP, PHASE_TYPED, PHASE_OPAQUE };

#define CODE_SSL 80877103u
#define CODE_GSS 80877104u
#define CODE_V3 196608u

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

void tcp_proxy__pg_init(struct pgw *w)
{
	memset(w, 0, sizeof(*w));
	w->phase = PHASE_STARTUP;
}

/* ---- query text -------------------------------------------------------- */

static bool ident_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '_' || ch == '$';
}

/* Skip whitespace and comments; returns the new position. */
static size_t skip_space(const char *s, size_t i, size_t len)
{
	for (;;) {
		while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
				   s[i] == '\r' || s[i] == '\f' || s[i] == '\v'))
			i++;
		if (i + 1 < len && s[i] == '-' && s[i + 1] == '-') {
			while (i < len && s[i] != '\n')
				i++;
		} else if (i + 1 < len && s[i] == '/' && s[i + 1] == '*') {
			int depth = 0; /* PostgreSQL's block comments nest */

			do {
				if (i + 1 < len && s[i] == '/' && s[i + 1] == '*')
					depth++, i += 2;
				else if (i + 1 < len && s[i] == '*' && s[i + 1] == '/')
					depth--, i += 2;
				else
					i++;
			} while (depth > 0 && i < len);
		} else {
			return i;
		}
	}
}

/* Skip a quoted token starting at s[i] (', " or $tag$); returns the
 * position after it, or len when it does not end here. */
static size_t skip_quoted(const char *s, size_t i, size_t len)
{
	char q = s[i];

	if (q == '\'' || q == '"') {
		for (i++; i < len; i++)
			if (s[i] == q) {
				if (i + 1 < len && s[i + 1] == q)
					i++; /* doubled quote */
				else
					return i + 1;
			}
		return len;
	}
	/* $tag$ ... $tag$ */
	{
		size_t t = i + 1, taglen;

		while (t < len && s[t] != '$' && ident_char(s[t]))
			t++;
		if (t >= len || s[t] != '$')
			return i + 1; /* a lone '$' (a parameter like $1) */
		taglen = t - i + 1;
		for (size_t k = t + 1; k + taglen <= len; k++)
			if (memcmp(s + k, s + i, taglen) == 0)
				return k + taglen;
		return len;
	}
}

static bool word_is(const char *w, size_t wlen, const char *kw)
{
	return wlen == strlen(kw) && strncasecmp(w, kw, wlen) == 0;
}

static bool is_copy_from(const char *first, size_t first_len, bool from)
{
	return word_is(first, first_len, "COPY") && from;
}

static bool is_write_word(const char *w, size_t wlen)
{
	return word_is(w, wlen, "INSERT") || word_is(w, wlen, "UPDATE") ||
	       word_is(w, wlen, "DELETE") || word_is(w, wlen, "MERGE");
}

/*
 * Walk the statements of sql[0..len).  A statement's first word decides
 * it, except WITH, which writes when one of its words is a write keyword.
 */
enum pgw_kind tcp_proxy__pg_classify(const char *sql, size_t len,
				     bool in_block, char *what, size_t wlen)
{
	enum pgw_kind kind = PGW_NONE;
	size_t i = 0;

	while (i < len && sql[i]) {
		size_t start = skip_space(sql, i, len), w = start, first_len;
		bool with_write = false, with_from = false, first = true;
		const char *first_word = sql + start;

		first_len = 0;
		i = start;
		/* to the end of this statement */
		while (i < len && sql[i] && sql[i] != ';') {
			if (sql[i] == '\'' || sql[i] == '"' || sql[i] == '$') {
				i = skip_quoted(sql, i, len);
				continue;
			}
			if ((sql[i] == '-' || sql[i] == '/') && skip_space(sql, i, len) > i) {
				i = skip_space(sql, i, len);
				continue;
			}
			if (ident_char(sql[i])) {
				w = i;
				while (i < len && ident_char(sql[i]))
					i++;
				if (first) {
					first_len = i - w;
					first = false;
				} else if (is_write_word(sql + w, i - w)) {
					with_write = true;
				} else if (word_is(sql + w, i - w, "FROM")) {
					with_from = true;
				}
				continue;
			}
			i++;
		}
		if (first_len) {
			enum pgw_kind k = PGW_NONE;

			if (word_is(first_word, first_len, "COMMIT") ||
			    word_is(first_word, first_len, "END")) {
				k = PGW_COMMIT;
				in_block = false;
			} else if (word_is(first_word, first_len, "BEGIN") ||
				   word_is(first_word, first_len, "START")) {
				in_block = true;
			} else if (word_is(first_word, first_len, "ROLLBACK") ||
				   word_is(first_word, first_len, "ABORT")) {
				in_block = false;
			} else if (!in_block &&
				   (is_write_word(first_word, first_len) ||
				    (word_is(first_word, first_len, "WITH") && with_write))) {
				k = PGW_WRITE;
			} else if (!in_block &&
				   is_copy_from(first_word, first_len, with_from)) {
				k = PGW_COPY_IN;
			}
			if (k != PGW_NONE && (kind == PGW_NONE || k == PGW_COMMIT)) {
				size_t n = (size_t)(sql + i - first_word);

				kind = k;
				if (what && wlen)
					snprintf(what, wlen, "%.*s", (int)(n > 60 ? 60 : n),
						 first_word);
			}
		}
		if (i < len && sql[i] == ';')
			i++;
	}
	return kind;
}

/* ---- names of prepared statements and portals ---------------------------- */

/* A cstring at b[*pos..len), or NULL when it does not end there. */
static const char *cstring(const unsigned char *b, size_t len, size_t *pos)
{
	const unsigned char *nul;

	if (*pos >= len)
		return NULL;
	nul = memchr(b + *pos, '\0', len - *pos);
	if (!nul)
		return NULL;
	{
		const char *s = (const char *)b + *pos;

		*pos = (size_t)(nul - b) + 1;
		return s;
	}
}

static struct pgw_name *name_find(struct pgw_name *v, const char *name)
{
	for (size_t i = 0; i < PGW_NAMES; i++)
		if (v[i].used && strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

static void name_set(struct pgw *w, struct pgw_name *v, const char *name,
		     enum pgw_kind kind)
{
	struct pgw_name *n = name_find(v, name);

	if (strlen(name) >= PGW_NAME_MAX)
		return; /* too long to remember: it classifies as nothing */
	if (!n) {
		for (size_t i = 0; i < PGW_NAMES && !n; i++)
			if (!v[i].used)
				n = &v[i];
		if (!n)
			n = &v[w->next_slot++ % PGW_NAMES]; /* forget the oldest */
	}
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->kind = kind;
	n->used = true;
}

static enum pgw_kind name_kind(struct pgw_name *v, const char *name)
{
	struct pgw_name *n = name_find(v, name);

	return n ? n->kind : PGW_NONE;
}

/* ---- client messages ----------------------------------------------------- */

/* Act on a query message whose head is body[0..len); true for a trigger. */
static bool query_message(struct pgw *w, char type, const unsigned char *body,
			  size_t len, char *what, size_t wlen)
{
	size_t pos = 0;
	const char *a, *b;
	enum pgw_kind k;
	char text[72] = "";

	switch (type) {
	case 'Q':
		k = tcp_proxy__pg_classify((const char *)body, len, w->in_block,
					   text, sizeof(text));
		snprintf(what, wlen, "Q %s", text);
		if (k == PGW_COPY_IN) {
			/* it commits at its CopyDone, after the data */
			w->copy_in = true;
			return false;
		}
		return k != PGW_NONE;
	case 'P':
		if ((a = cstring(body, len, &pos)))
			name_set(w, w->stmts, a,
				 tcp_proxy__pg_classify((const char *)body + pos,
							len - pos, false, NULL, 0));
		return false;
	case 'B':
		if ((a = cstring(body, len, &pos)) && (b = cstring(body, len, &pos)))
			name_set(w, w->portals, a, name_kind(w->stmts, b));
		return false;
	case 'E':
		if (!(a = cstring(body, len, &pos)))
			return false;
		k = name_kind(w->portals, a);
		if (k == PGW_COPY_IN && !w->in_block) {
			w->copy_in = true;
			return false;
		}
		if (k == PGW_COMMIT || (k == PGW_WRITE && !w->in_block)) {
			snprintf(what, wlen, "E %s", k == PGW_COMMIT ? "COMMIT"
				 : "autocommit write");
			return true;
		}
		return false;
	}
	return false;
}

void tcp_proxy__pg_scan(struct pgw *w, const unsigned char *buf, size_t len,
			struct pgw_scan *out)
{
	size_t pos = 0;

	memset(out, 0, sizeof(*out));
	while (pos < len) {
		if (w->body_left) {
			size_t take = len - pos < w->body_left ? len - pos : w->body_left;

			pos += take;
			w->body_left -= take;
			continue;
		}
		if (w->phase == PHASE_OPAQUE || w->ssl_asked) {
			/* TLS, or bytes before the server answered an SSL
			 * request (a client does not send any): pass them */
			pos = len;
			break;
		}
		if (w->phase == PHASE_STARTUP) {
			uint32_t mlen, code;

			if (len - pos < 8)
				break;
			mlen = be32(buf + pos);
			code = be32(buf + pos + 4);
			if (mlen < 8 || mlen > (1u << 20)) {
				w->phase = PHASE_OPAQUE;
				continue;
			}
			if (code == CODE_SSL || code == CODE_GSS)
				w->ssl_asked = true;
			else if (code == CODE_V3)
				w->phase = PHASE_TYPED;
			pos += 8;
			w->body_left = mlen - 8;
			continue;
		}
		{
			char type = (char)buf[pos];
			uint32_t mlen, body, need;

			if (len - pos < 5)
				break;
			mlen = be32(buf + pos + 1);
			if (mlen < 4 || mlen > 0x40000000u) {
				w->phase = PHASE_OPAQUE;
				continue;
			}
			body = mlen - 4;
			if ((type == 'c' || type == 'f') && w->copy_in) {
				/* CopyDone commits the autocommit COPY; CopyFail
				 * ends it without a commit */
				w->copy_in = false;
				pos += 5;
				w->body_left = body;
				if (type == 'c') {
					snprintf(out->what, sizeof(out->what),
						 "c CopyDone (autocommit COPY)");
					out->trigger = true;
					out->trigger_at = pos - 5;
					break;
				}
				continue;
			}
			if (type != 'Q' && type != 'P' && type != 'B' && type != 'E') {
				pos += 5;
				w->body_left = body;
				continue;
			}
			need = body < PGW_HEAD_MAX ? body : PGW_HEAD_MAX;
			if (len - pos < 5 + (size_t)need)
				break; /* wait for the head */
			if (query_message(w, type, buf + pos + 5, need, out->what,
					  sizeof(out->what))) {
				out->trigger = true;
				out->trigger_at = pos;
				pos += 5 + need;
				w->body_left = body - need;
				break;
			}
			pos += 5 + need;
			w->body_left = body - need;
		}
	}
	out->decided = pos;
}

/* ---- server messages ----------------------------------------------------- */

int tcp_proxy__pg_server(struct pgw *w, const unsigned char *buf, size_t len)
{
	size_t pos = 0;
	int ready = 0;

	if (w->ssl_asked && len > 0) {
		/* the one-byte answer to an SSL/GSS request */
		w->ssl_asked = false;
		if (buf[0] == 'S' || buf[0] == 'G')
			w->phase = PHASE_OPAQUE;
		pos = 1;
	}
	if (w->phase != PHASE_TYPED)
		return 0;
	while (pos < len) {
		if (w->sbody_left) {
			size_t take = len - pos < w->sbody_left ? len - pos : w->sbody_left;

			if (w->shdr[0] == 'Z' && w->shdr_len == 5 && take > 0) {
				w->in_block = buf[pos] != 'I';
				w->copy_in = false; /* any COPY has ended */
				w->shdr_len = 0; /* the status byte is read */
				ready++;
			}
			pos += take;
			w->sbody_left -= take;
			continue;
		}
		while (w->shdr_len < 5 && pos < len)
			w->shdr[w->shdr_len++] = buf[pos++];
		if (w->shdr_len < 5)
			break;
		w->sbody_left = be32(w->shdr + 1) >= 4 ? be32(w->shdr + 1) - 4 : 0;
		if (w->shdr[0] != 'Z' || w->sbody_left == 0)
			w->shdr_len = 0;
	}
	return ready;
}
