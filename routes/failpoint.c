/*
 * failpoint.c -- the route side of the failpoint channel.
 *
 * Invariants:
 *  1. failpoint__active is false unless a channel is configured or recording
 *     was asked for, so a production route pays one predictable branch; a
 *     route with a channel records nothing (no copy of each name).
 *  2. Each hit is one complete "HIT <name>\n" line followed by exactly one
 *     blocking read of the answer; there is never more than one question in
 *     flight, so the supervisor can act while the route waits.
 *  3. A broken channel stays broken (state `broken`): every later hit
 *     answers FC_IO.  There is no way back to "no channel" within a process.
 *  4. With a wait set (PROTO_ENV_FAILPOINT_WAIT), a name outside it is one
 *     complete "PASS <name>\n" line and no read: the supervisor promised
 *     not to act there.  Without the variable every failpoint waits.
 *  5. SIGPIPE is never raised by the channel (send with MSG_NOSIGNAL), so a
 *     vanished supervisor turns into FC_IO, not a silent death.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "routes/failpoint.h"

#define FAILPOINT_MAX_RECORDED 4096 /* bounds memory for runaway loops */
/* Longest name this side writes (a longer one breaks the channel); the
 * harness acts only on names shorter than PROTO_FAILPOINT_NAME_MAX. */
#define NAME_MAX_WRITTEN 128

bool failpoint__active;

static int channel_fd = -1;
static bool channel_broken;
/* ",a,b," from PROTO_ENV_FAILPOINT_WAIT; NULL: wait always */
static char *wait_set;
static bool recording;
static char **hits;
static size_t nhits, hits_cap;

static void forget_hits(void)
{
	for (size_t i = 0; i < nhits; i++)
		free(hits[i]);
	free(hits);
	hits = NULL;
	nhits = hits_cap = 0;
}

static void update_active(void)
{
	failpoint__active = channel_fd >= 0 || recording;
}

static void forget_wait_set(void)
{
	free(wait_set);
	wait_set = NULL;
}

/* Read the wait set: ",name1,name2," so that a lookup is one strstr of
 * ",name,".  Out of memory: NULL, every failpoint waits (always safe). */
static void read_wait_set(void)
{
	const char *v = getenv(PROTO_ENV_FAILPOINT_WAIT);
	size_t len;

	forget_wait_set();
	if (!v)
		return;
	len = strlen(v);
	wait_set = malloc(len + 3);
	if (wait_set)
		snprintf(wait_set, len + 3, ",%s,", v);
}

static bool must_wait(const char *name)
{
	const char *s;
	size_t n = strlen(name);

	if (!wait_set || n == 0)
		return true;
	for (s = wait_set; (s = strstr(s, name)); s += n)
		if (s > wait_set && s[-1] == ',' && s[n] == ',')
			return true;
	return false;
}

void failpoint_reset(void)
{
	forget_wait_set();
	channel_fd = -1;
	channel_broken = false;
	recording = false;
	forget_hits();
	update_active();
}

int failpoint_init(char *err, size_t errlen)
{
	const char *v = getenv(PROTO_ENV_FAILPOINT_FD);
	char *end;
	long fd;

	forget_hits();
	forget_wait_set();
	channel_fd = -1;
	channel_broken = false;
	update_active();
	if (!v || !*v)
		return 0;
	errno = 0;
	fd = strtol(v, &end, 10);
	if (errno || *end || fd < 0 || fd > 65535) {
		snprintf(err, errlen, "%s is not a descriptor number: '%s'",
			 PROTO_ENV_FAILPOINT_FD, v);
		return FC_USAGE;
	}
	if (fcntl((int)fd, F_GETFD) < 0) {
		snprintf(err, errlen, "%s names descriptor %ld, which is not open",
			 PROTO_ENV_FAILPOINT_FD, fd);
		return FC_USAGE;
	}
	/* The channel belongs to this attempt; children must not inherit it
	 * and keep the supervisor's socket alive after we die. */
	(void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
	channel_fd = (int)fd;
	read_wait_set();
	update_active();
	return 0;
}

bool failpoint_enabled(void)
{
	return channel_fd >= 0;
}

void failpoint_record(bool on)
{
	recording = on;
	update_active();
}

static void remember(const char *name)
{
	char *copy;

	if (nhits == FAILPOINT_MAX_RECORDED)
		return;
	if (nhits == hits_cap) {
		size_t cap = hits_cap ? hits_cap * 2 : 32;
		char **grown = realloc(hits, cap * sizeof(*grown));

		if (!grown)
			return; /* the record is a test aid; losing it is harmless */
		hits = grown;
		hits_cap = cap;
	}
	copy = strdup(name);
	if (copy)
		hits[nhits++] = copy;
}

/* The answer byte; whitespace is skipped so "c\n" from a line-oriented
 * supervisor works.  Returns the byte, or -1 on EOF or error. */
static int read_answer(int fd)
{
	for (;;) {
		char c;
		ssize_t n = read(fd, &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		if (c == '\n' || c == '\r' || c == ' ')
			continue;
		return (unsigned char)c;
	}
}

int failpoint__hit(const char *name)
{
	char line[NAME_MAX_WRITTEN + 8];
	bool wait;
	int len, answer;

	if (recording)
		remember(name);
	if (channel_fd < 0)
		return 0; /* recording only */
	if (channel_broken)
		return FC_IO;
	wait = must_wait(name);
	len = snprintf(line, sizeof(line), "%s%s\n",
		       wait ? PROTO_HIT : PROTO_PASS, name);
	if (len < 0 || (size_t)len >= sizeof(line) || strchr(name, '\n') ||
	    strchr(name, ' ')) {
		channel_broken = true; /* a malformed name is a programming error */
		return FC_IO;
	}
	if (fs_send_all(channel_fd, line, (size_t)len) < 0) {
		channel_broken = true;
		return FC_IO;
	}
	if (!wait)
		return 0;
	answer = read_answer(channel_fd);
	if (answer == PROTO_ANSWER_CONTINUE)
		return 0;
	if (answer != PROTO_ANSWER_FAIL)
		channel_broken = true;
	return FC_IO;
}

size_t failpoint_hit_count(void)
{
	return nhits;
}

const char *failpoint_hit_name(size_t i)
{
	return i < nhits ? hits[i] : NULL;
}
