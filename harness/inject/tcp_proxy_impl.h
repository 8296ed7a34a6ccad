/*
 * tcp_proxy_impl.h -- what tcp_proxy.c (the relay) asks of
 * tcp_proxy_pg.c (the PostgreSQL wire protocol, as far as the proxy needs
 * it).  Included by those two files and by tests/test_tcp_proxy.c, which
 * drives the scanner directly.
 *
 * The client side is scanned without copying: the relay keeps the bytes
 * not yet decided (at most one message header and the head of one query
 * message) and hands them to tcp_proxy__pg_scan() again when more arrive.
 * The server side is scanned as it is relayed, for ReadyForQuery: its
 * status says whether the session is inside a transaction block (so an
 * autocommit write can be told from a write in a transaction), and its
 * arrival says a swallowed answer is complete.
 */
#ifndef FENCECERT_TCP_PROXY_IMPL_H
#define FENCECERT_TCP_PROXY_IMPL_H

#include <stdbool.h>
#include <stddef.h>

/* How much of a query message is read to classify it. */
#define PGW_HEAD_MAX 8192
#define PGW_NAMES 32      /* prepared statements / portals remembered */
#define PGW_NAME_MAX 64

enum pgw_kind {
	PGW_NONE,   /* nothing that commits */
	PGW_COMMIT, /* COMMIT, COMMIT PREPARED, END */
	PGW_WRITE,  /* a write: commits by itself outside a transaction block */
	PGW_COPY_IN, /* COPY ... FROM outside a block: its CopyDone commits */
};

struct pgw_name {
	char name[PGW_NAME_MAX];
	enum pgw_kind kind;
	bool used;
};

struct pgw {
	/* client to server */
	int phase;              /* startup, typed messages, or opaque (TLS) */
	size_t body_left;       /* bytes of the current message still to pass */
	bool ssl_asked;         /* an SSL/GSS request awaits its one-byte reply */
	struct pgw_name stmts[PGW_NAMES];
	struct pgw_name portals[PGW_NAMES];
	unsigned next_slot;
	/* server to client */
	unsigned char shdr[5];
	size_t shdr_len;
	size_t sbody_left;
	bool in_block;          /* last ReadyForQuery said 'T' or 'E' */
	bool copy_in;           /* an autocommit COPY FROM awaits its CopyDone */
};

struct pgw_scan {
	size_t decided;         /* bytes at the start that are classified */
	bool trigger;           /* [trigger_at, decided) is a trigger message */
	size_t trigger_at;
	char what[96];          /* e.g. "Q COMMIT" */
};

void tcp_proxy__pg_init(struct pgw *w);

/* Classify client bytes buf[0..len) (the first not yet decided).  Stops
 * after the first trigger, so the relay can act on it before the rest. */
void tcp_proxy__pg_scan(struct pgw *w, const unsigned char *buf, size_t len,
			struct pgw_scan *out);

/* Scan server bytes as they pass; returns how many ReadyForQuery messages
 * ended in them. */
int tcp_proxy__pg_server(struct pgw *w, const unsigned char *buf, size_t len);

/* The kind of a query text (exposed for the unit test). */
enum pgw_kind tcp_proxy__pg_classify(const char *sql, size_t len,
				     bool in_block, char *what, size_t wlen);

#endif
