/*
 * tcp_proxy.h -- a TCP proxy that loses, holds or delays what a fault tells
 * it to, placed between a route (or a test) and a real server.
 *
 * One proxy listens on an ephemeral 127.0.0.1 port and relays every client
 * connection to one upstream HOST:PORT, any number of connections at once.
 * It runs in its own thread (one poll() loop over every socket and a wake
 * pipe), so the harness's poll loop never waits on it.
 *
 * What it acts on is a TRIGGER, a client message that may make the server
 * commit something:
 *   TCP_PROXY_RAW         every chunk the client sends (a request);
 *   TCP_PROXY_POSTGRESQL  a message that ends a transaction: a simple ('Q')
 *                         or extended ('P'/'B'/'E') query whose statement
 *                         is COMMIT, COMMIT PREPARED or END (any case,
 *                         after whitespace and comments), or an autocommit
 *                         write (INSERT, UPDATE, DELETE, MERGE, or WITH
 *                         holding one, sent outside a transaction block),
 *                         which commits when it completes.  The startup
 *                         exchange is understood; a TLS session is relayed
 *                         without looking into it (never a trigger).
 *
 * A rule (tcp_proxy_arm) says what happens to the hit-th trigger from the
 * moment it was armed (hit 0: every trigger):
 *   TCP_PROXY_FORWARD      relay (the default; delay_ms still applies)
 *   TCP_PROXY_CUT_REPLY    relay the trigger, swallow the server's answer
 *                          (for PostgreSQL: up to its ReadyForQuery, so the
 *                          commit has happened), then reset both sides: the
 *                          server acted, the client cannot know
 *   TCP_PROXY_CUT_REQUEST  swallow the trigger and reset both sides: the
 *                          server never saw it, the client cannot know
 *   TCP_PROXY_HOLD         keep the trigger (and whatever follows on that
 *                          connection) until tcp_proxy_release(); then it
 *                          goes on, also when the client has gone meanwhile
 *   TCP_PROXY_REFUSE       reset every open connection now and every new
 *                          one as soon as it is accepted (a server that is
 *                          down); `hit` does not apply
 * delay_ms delays every client chunk by that much before it is relayed.
 * Resets are RSTs (SO_LINGER 0): the other side sees them at once.
 *
 * Who includes it: the run's proxy faults (harness/run) and tests.
 *
 * Ownership: tcp_proxy_start() returns a proxy tcp_proxy_free() stops and
 * releases: the thread is joined and every socket closed (NULL is a no-op).
 * Only tcp_proxy.c sees the struct.  All calls are thread-safe, and
 * tcp_proxy_arm/disarm/release return once the thread has acted on them
 * (a REFUSE has reset the open connections, a release has sent what was
 * held), so a caller can start the next step without a race.
 */
#ifndef FENCECERT_TCP_PROXY_H
#define FENCECERT_TCP_PROXY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

typedef struct tcp_proxy tcp_proxy;

enum tcp_proxy_protocol {
	TCP_PROXY_RAW,
	TCP_PROXY_POSTGRESQL,
};

enum tcp_proxy_action {
	TCP_PROXY_FORWARD,
	TCP_PROXY_CUT_REPLY,
	TCP_PROXY_CUT_REQUEST,
	TCP_PROXY_HOLD,
	TCP_PROXY_REFUSE,
};

struct tcp_proxy_rule {
	enum tcp_proxy_action action;
	int hit;        /* the hit-th trigger since arming; 0: every one */
	int delay_ms;   /* 0 .. TCP_PROXY_DELAY_MAX_MS */
};

#define TCP_PROXY_DELAY_MAX_MS 60000

/* Counters since the last tcp_proxy_arm(), except `accepted` (ever). */
struct tcp_proxy_stats {
	long accepted;   /* client connections, ever */
	long triggers;   /* triggers seen */
	long fired;      /* triggers cut or held, connections refused */
	long delayed;    /* chunks delayed */
	long held;       /* connections holding a trigger right now */
	char last[96];   /* what the last fired trigger was, e.g. "Q COMMIT" */
};

/*
 * Listen on 127.0.0.1:0 and relay to `upstream`: "HOST:PORT" or a URL
 * "SCHEME://[USER[:PW]@]HOST[:PORT][/...]" (PostgreSQL's default port 5432
 * when a postgres(ql):// URL has none).  HOST is an IPv4 address or a name
 * resolved once, here.  FC_USAGE for a bad upstream, FC_IO when the socket
 * or thread cannot be made; the message goes to err.
 */
int tcp_proxy_start(const char *upstream, enum tcp_proxy_protocol proto,
		    tcp_proxy **out, char *err, size_t errlen) FC_MUST_CHECK;

/* The port clients connect to (on 127.0.0.1). */
int tcp_proxy_port(const tcp_proxy *p);

/* Replace the rule and zero the counters (but `accepted`).  A connection
 * holding a trigger keeps holding it. */
void tcp_proxy_arm(tcp_proxy *p, const struct tcp_proxy_rule *rule);

/* Back to TCP_PROXY_FORWARD without delay, counters kept. */
void tcp_proxy_disarm(tcp_proxy *p);

/* Let every held trigger go on (a no-op when none is held). */
void tcp_proxy_release(tcp_proxy *p);

void tcp_proxy_stats(tcp_proxy *p, struct tcp_proxy_stats *out);

void tcp_proxy_free(tcp_proxy *p);

/* The protocol named by a URL's scheme: postgres(ql):// is POSTGRESQL,
 * anything else RAW. */
enum tcp_proxy_protocol tcp_proxy_protocol_of(const char *upstream);

/* "scheme://user@HOST:PORT/db" with HOST:PORT replaced by 127.0.0.1:port
 * (a bare "HOST:PORT" becomes "127.0.0.1:port"), on the heap; NULL when out
 * of memory. */
char *tcp_proxy_rewrite_url(const char *upstream, int port);

#endif
