/*
 * route_supervisor.c -- see route_supervisor.h.
 *
 * The supervisor never blocks on the child: it polls the channel with a
 * deadline, and a child that neither talks nor exits within RS_DEADLINE_MS
 * is killed and reported, so a hung route fails its test instead of hanging
 * the suite.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fences/target.h"
#include "journal/journal.h"
#include "routes/workload.h"
#include "tests/route_supervisor.h"

#define RS_DEADLINE_MS 30000

char rs_error[1024];

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rs_error, sizeof(rs_error), fmt, ap);
	va_end(ap);
	return -1;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the scratch operation ------------------------------------------- */

static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static int write_source(const struct rs_op *op, const char *flavour)
{
	FILE *f = fopen(op->source, "w");
	char key[32], payload[96];

	if (!f)
		return fail("cannot write '%s'", op->source);
	fputs("row_key,payload\n", f);
	for (int i = 0; i < op->nrows; i++) {
		snprintf(key, sizeof(key), "k%06d", i);
		if (i % 7 == 3)
			snprintf(payload, sizeof(payload), "%s, with comma %d", flavour, i);
		else if (i % 11 == 5)
			snprintf(payload, sizeof(payload), "%s \"quoted\" %d", flavour, i);
		else if (i % 13 == 6)
			snprintf(payload, sizeof(payload), "%s two\nlines %d", flavour, i);
		else
			snprintf(payload, sizeof(payload), "%s-%d", flavour, i);
		csv_field(f, key);
		fputc(',', f);
		csv_field(f, payload);
		fputc('\n', f);
	}
	return fclose(f) == 0 ? 0 : fail("cannot write '%s'", op->source);
}

int rs_op_init(struct rs_op *op, const char *kind, int nrows)
{
	FILE *f;

	memset(op, 0, sizeof(*op));
	/* tmpfs when there is one: these tests are about processes dying,
	 * not power loss, and fsync on a shared disk would dominate them. */
	snprintf(op->dir, sizeof(op->dir), "%s/fc-route-XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(op->dir))
		return fail("mkdtemp: %s", strerror(errno));
	snprintf(op->kind, sizeof(op->kind), "%s", kind);
	op->nrows = nrows;
	snprintf(op->journal, sizeof(op->journal), "sqlite:%s/journal.db", op->dir);
	if (strcmp(kind, "file") == 0)
		snprintf(op->target_path, sizeof(op->target_path), "%s/target", op->dir);
	else
		snprintf(op->target_path, sizeof(op->target_path), "%s/target.db", op->dir);
	snprintf(op->target, sizeof(op->target), "%s:%s", kind, op->target_path);
	snprintf(op->workload, sizeof(op->workload), "%s/workload.json", op->dir);
	snprintf(op->source, sizeof(op->source), "%s/partition-p0.csv", op->dir);
	f = fopen(op->workload, "w");
	if (!f)
		return fail("cannot write '%s'", op->workload);
	fputs("{\"identity\": {\"release\": \"r1\", \"deployment\": \"d1\",\n"
	      "  \"dag\": \"orders\", \"run\": \"2026-11-01\",\n"
	      "  \"workload\": \"load_orders\", \"partition\": \"p0\",\n"
	      "  \"interval\": \"2026-11-01/2026-11-02\", \"target\": \"events\"},\n"
	      " \"intent\": {\"pack\": \"pk1\", \"strategy\": \"append\",\n"
	      "  \"target_contract\": \"events.v1\", \"schema\": \"s1\"},\n"
	      " \"source\": \"partition-p0.csv\",\n"
	      " \"table\": \"events\"}\n", f);
	if (fclose(f) != 0)
		return fail("cannot write '%s'", op->workload);
	return write_source(op, "v1");
}

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		return fail("cannot open '%s': %s", from, strerror(errno));
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 07777);
	if (out < 0) {
		close(in);
		return fail("cannot create '%s': %s", to, strerror(errno));
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	close(in);
	if (close(out) != 0 || n < 0)
		return fail("cannot copy '%s'", from);
	return 0;
}

static int copy_tree(const char *from, const char *to)
{
	struct dirent *de;
	DIR *d = opendir(from);
	int rc = 0;

	if (!d)
		return fail("cannot list '%s': %s", from, strerror(errno));
	while (!rc && (de = readdir(d))) {
		char a[RS_PATH + 256], b[RS_PATH + 256];
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(a, sizeof(a), "%s/%s", from, de->d_name);
		snprintf(b, sizeof(b), "%s/%s", to, de->d_name);
		if (lstat(a, &st) != 0)
			rc = fail("cannot stat '%s'", a);
		else if (S_ISDIR(st.st_mode))
			rc = mkdir(b, st.st_mode & 07777) != 0 ? fail("cannot create '%s'", b)
							       : copy_tree(a, b);
		else if (S_ISREG(st.st_mode))
			rc = copy_file(a, b, st.st_mode);
	}
	closedir(d);
	return rc;
}

int rs_op_clone(const struct rs_op *src, struct rs_op *dst)
{
	if (rs_op_init(dst, src->kind, src->nrows))
		return -1;
	return copy_tree(src->dir, dst->dir);
}

int rs_op_change_source(struct rs_op *op)
{
	return write_source(op, "v2");
}

void rs_op_cleanup(struct rs_op *op)
{
	char cmd[RS_PATH + 16];

	if (!op->dir[0] || getenv("RS_KEEP"))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", op->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove '%s'\n", op->dir);
}

void rs_log(const struct rs_op *op, int try_number)
{
	char path[RS_PATH + 32], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/try-%d.log", op->dir, try_number);
	f = fopen(path, "r");
	if (!f)
		return;
	fprintf(stderr, "--- try %d log ---\n", try_number);
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fclose(f);
}

/* ---- one attempt ----------------------------------------------------- */

static void child(const struct rs_op *op, const struct rs_route *r,
		  int try_number, int fd, const struct rs_attempt *a)
{
	const char *fencecert = getenv("FENCECERT");
	const char *def[] = { fencecert ? fencecert : "build/fencecert", "route", NULL };
	char num[32], log[RS_PATH + 32];
	int logfd;

	setpgid(0, 0);
	snprintf(log, sizeof(log), "%s/try-%d.log", op->dir, try_number);
	logfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (logfd >= 0) {
		dup2(logfd, 1);
		dup2(logfd, 2);
	}
	fcntl(fd, F_SETFD, 0); /* the route inherits exactly this end */
	snprintf(num, sizeof(num), "%d", fd);
	setenv("FENCECERT_FAILPOINT_FD", num, 1);
	setenv("FENCECERT_JOURNAL", op->journal, 1);
	setenv("FENCECERT_TARGET", op->target, 1);
	setenv("FENCECERT_WORKLOAD", op->workload, 1);
	setenv("FENCECERT_XCOM_DIR", a->xcom, 1);
	setenv("FENCECERT_RUN_DIR", a->run, 1);
	snprintf(num, sizeof(num), "%d", try_number);
	setenv("FENCECERT_TRY_NUMBER", num, 1);
	for (const char *const *e = r && r->env ? r->env : NULL; e && *e; e++)
		putenv((char *)*e);
	execvp(r && r->argv ? r->argv[0] : def[0],
	       (char *const *)(r && r->argv ? r->argv : def));
	fprintf(stderr, "cannot exec route: %s\n", strerror(errno));
	_exit(127);
}

static int answer(struct rs_attempt *a, char c)
{
	ssize_t n;

	do
		n = send(a->fd, &c, 1, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return 0; /* a vanished child shows up as EOF and exit status */
}

static int count_hits(const struct rs_attempt *a, const char *name)
{
	int n = 0;

	for (int i = 0; i < a->nhits; i++)
		n += strcmp(a->hits[i], name) == 0;
	return n;
}

static void wait_child(struct rs_attempt *a)
{
	long long deadline = now_ms() + RS_DEADLINE_MS;
	int st;
	pid_t got;

	for (;;) {
		got = waitpid(a->pid, &st, WNOHANG);
		if (got == a->pid)
			break;
		if (got < 0 && errno != EINTR) {
			a->status = -1;
			return;
		}
		if (now_ms() > deadline) {
			kill(-a->pid, SIGKILL);
			deadline = now_ms() + RS_DEADLINE_MS;
		}
		usleep(2000);
	}
	a->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	a->pid = -1;
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
}

/* Act on one "HIT name" line.  Returns 1 when supervision must return
 * (paused), 0 otherwise. */
static int on_hit(struct rs_attempt *a, const char *name)
{
	const struct rs_fault *f = NULL;

	if (a->nhits < RS_MAX_HITS)
		snprintf(a->hits[a->nhits++], RS_NAME, "%s", name);
	for (int i = 0; i < RS_MAX_FAULTS && a->faults[i].action != RS_NONE; i++) {
		if (!a->fired[i] && strcmp(a->faults[i].failpoint, name) == 0 &&
		    count_hits(a, name) == (a->faults[i].hit ? a->faults[i].hit : 1)) {
			a->fired[i] = true;
			f = &a->faults[i];
			break;
		}
	}
	if (!f) {
		answer(a, 'c');
		return 0;
	}
	switch (f->action) {
	case RS_KILL:
		kill(-a->pid, SIGKILL);
		return 0;
	case RS_FAIL:
		answer(a, 'f');
		return 0;
	case RS_PAUSE:
		kill(-a->pid, SIGSTOP);
		a->paused = true;
		return 1;
	default:
		answer(a, 'c');
		return 0;
	}
}

static int supervise(struct rs_attempt *a)
{
	long long deadline = now_ms() + RS_DEADLINE_MS;

	while (a->fd >= 0) {
		struct pollfd p = { .fd = a->fd, .events = POLLIN };
		char *nl;
		ssize_t n;
		int rc = poll(&p, 1, 100);

		if (rc < 0 && errno != EINTR)
			return fail("poll: %s", strerror(errno));
		if (now_ms() > deadline) {
			kill(-a->pid, SIGKILL);
			wait_child(a);
			return fail("try %d hung (no exit within %d ms)",
				    a->try_number, RS_DEADLINE_MS);
		}
		if (rc <= 0)
			continue;
		n = read(a->fd, a->buf + a->buflen, sizeof(a->buf) - 1 - a->buflen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the child is gone (or closed the channel) */
		a->buflen += (size_t)n;
		a->buf[a->buflen] = '\0';
		while ((nl = strchr(a->buf, '\n'))) {
			*nl = '\0';
			if (strncmp(a->buf, "HIT ", 4) == 0 && on_hit(a, a->buf + 4)) {
				memmove(a->buf, nl + 1, strlen(nl + 1) + 1);
				a->buflen = strlen(a->buf);
				return 0;
			}
			memmove(a->buf, nl + 1, strlen(nl + 1) + 1);
			a->buflen = strlen(a->buf);
		}
		if (a->buflen == sizeof(a->buf) - 1)
			a->buflen = 0; /* garbage without a newline: drop it */
	}
	wait_child(a);
	return 0;
}

int rs_start1(const struct rs_op *op, const struct rs_route *r,
	      int try_number, enum rs_action action, const char *failpoint,
	      struct rs_attempt *a)
{
	struct rs_fault one[2] = {
		{ action, failpoint, 1 },
		{ RS_NONE, NULL, 0 },
	};

	return rs_start(op, r, try_number, one, a);
}

int rs_start(const struct rs_op *op, const struct rs_route *r, int try_number,
	     const struct rs_fault *faults, struct rs_attempt *a)
{
	int sv[2];

	memset(a, 0, sizeof(*a));
	a->try_number = try_number;
	for (int i = 0; faults && i < RS_MAX_FAULTS && faults[i].action != RS_NONE; i++)
		a->faults[i] = faults[i];
	a->fd = -1;
	a->pid = -1;
	snprintf(a->xcom, sizeof(a->xcom), "%s/xcom-%d", op->dir, try_number);
	snprintf(a->run, sizeof(a->run), "%s/run-%d", op->dir, try_number);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return fail("socketpair: %s", strerror(errno));
	a->pid = fork();
	if (a->pid < 0)
		return fail("fork: %s", strerror(errno));
	if (a->pid == 0)
		child(op, r, try_number, sv[1], a);
	setpgid(a->pid, a->pid); /* no race with the child's own call */
	close(sv[1]);
	a->fd = sv[0];
	return supervise(a);
}

int rs_resume(struct rs_attempt *a)
{
	if (!a->paused)
		return fail("try %d is not paused", a->try_number);
	a->paused = false;
	kill(-a->pid, SIGCONT);
	answer(a, 'c');
	return supervise(a);
}

void rs_reap(struct rs_attempt *a)
{
	if (a->pid <= 0)
		return;
	kill(-a->pid, SIGKILL);
	kill(-a->pid, SIGCONT);
	wait_child(a);
}

int rs_occurrence(const struct rs_attempt *a, int i)
{
	int n = 0;

	for (int k = 0; k <= i && k < a->nhits; k++)
		n += strcmp(a->hits[k], a->hits[i]) == 0;
	return n;
}

bool rs_hit(const struct rs_attempt *a, const char *name)
{
	return count_hits(a, name) > 0;
}

int rs_first_target_call(const struct rs_attempt *a)
{
	static const char *const calls[] = {
		"before_fence_prepare", "before_target_commit", "before_probe",
		"before_reconcile_probe", NULL,
	};

	for (int i = 0; i < a->nhits; i++)
		for (const char *const *c = calls; *c; c++)
			if (strcmp(a->hits[i], *c) == 0)
				return i;
	return -1;
}

int rs_retry(const struct rs_op *op, const struct rs_route *r, int first,
	     int max, struct rs_attempt *last)
{
	for (int t = first; t <= max; t++) {
		int existed = rs_journal_state(op) > FC_STATE_NONE;
		int call;

		if (rs_start(op, r, t, NULL, last))
			return -1;
		call = rs_first_target_call(last);
		if (existed && call >= 0 &&
		    strcmp(last->hits[call], "before_reconcile_probe") != 0) {
			rs_log(op, t);
			return fail("try %d: first target call on an existing "
				    "operation is %s, not a probe", t,
				    last->hits[call]);
		}
		if (last->status == 0 || last->status == 100)
			return 0;
		if (last->status != 75) {
			rs_log(op, t);
			return fail("try %d exited %d", t, last->status);
		}
	}
	return fail("no try of %d..%d ended with 0 or 100", first, max);
}

/* ---- checking the outcome -------------------------------------------- */

/* Size and mtime of every file of the target, as one string. */
static void stamp_dir(const char *path, char *out, size_t len)
{
	struct stat st;
	DIR *d;
	struct dirent *de;

	if (lstat(path, &st) != 0)
		return;
	snprintf(out + strlen(out), len - strlen(out), "%s:%lld:%ld.%09ld;", path,
		 (long long)st.st_size, (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	if (!S_ISDIR(st.st_mode) || !(d = opendir(path)))
		return;
	while ((de = readdir(d))) {
		char sub[1024];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		stamp_dir(sub, out, len);
	}
	closedir(d);
}

void rs_target_stamp(const struct rs_op *op, char *out, size_t len)
{
	char p[RS_PATH + 8];

	out[0] = '\0';
	stamp_dir(op->target_path, out, len);
	snprintf(p, sizeof(p), "%s-wal", op->target_path);
	stamp_dir(p, out, len);
	snprintf(p, sizeof(p), "%s-shm", op->target_path);
	stamp_dir(p, out, len);
}


struct row_tally {
	int *count;
	int n;
	long long total;
	char bad[128];
};

static int tally_row(void *ctx, const char *row_key, const char *operation_id,
		     long long count)
{
	struct row_tally *t = ctx;
	char *end;
	long i;

	t->total += count;
	if (!row_key || row_key[0] != 'k') {
		snprintf(t->bad, sizeof(t->bad), "row key '%s' not from the source",
			 row_key ? row_key : "(null)");
		return 0;
	}
	i = strtol(row_key + 1, &end, 10);
	if (*end || i < 0 || i >= t->n)
		snprintf(t->bad, sizeof(t->bad), "row key '%s' not from the source",
			 row_key);
	else
		t->count[i] += (int)count;
	return 0;
}

static int tally(const struct rs_op *op, struct row_tally *t)
{
	char err[512];

	memset(t, 0, sizeof(*t));
	t->n = op->nrows;
	t->count = calloc((size_t)op->nrows + 1, sizeof(int));
	if (!t->count)
		return fail("out of memory");
	if (target_observe_rows(op->target, "events", tally_row, t, err,
				sizeof(err))) {
		free(t->count);
		return fail("cannot observe '%s': %s", op->target, err);
	}
	return 0;
}

int rs_check_rows(const struct rs_op *op, int each)
{
	struct row_tally t;
	int rc = 0;

	if (tally(op, &t))
		return -1;
	if (t.bad[0])
		rc = fail("%s", t.bad);
	for (int i = 0; i < t.n && !rc; i++)
		if (t.count[i] != each)
			rc = fail("row k%06d is in the target %d times, expected %d "
				  "(%lld rows in all)", i, t.count[i], each, t.total);
	free(t.count);
	return rc;
}

int rs_check_complete(const struct rs_op *op, const struct rs_attempt *a)
{
	if (a->status != 0) {
		rs_log(op, a->try_number);
		return fail("try %d exited %d", a->try_number, a->status);
	}
	if (rs_check_rows(op, 1))
		return -1;
	if (rs_journal_state(op) != FC_COMPLETE)
		return fail("journal is not COMPLETE");
	return rs_check_history(op);
}

long long rs_total_rows(const struct rs_op *op)
{
	struct row_tally t;

	if (tally(op, &t))
		return -1;
	free(t.count);
	return t.total;
}

int rs_ids(const struct rs_op *op, char *opid, char *intent)
{
	char err[512];
	workload *w;

	if (workload_load(op->workload, &w, err, sizeof(err)))
		return fail("%s", err);
	strcpy(opid, workload_operation_id(w));
	strcpy(intent, workload_intent_digest(w));
	workload_free(w);
	return 0;
}

int rs_journal_state(const struct rs_op *op)
{
	char opid[80], intent[80], err[512];
	struct journal_entry e;
	journal *j;
	int rc;

	if (rs_ids(op, opid, intent))
		return -1;
	/* Do not create the journal by looking at it. */
	if (access(op->journal + strlen("sqlite:"), F_OK) != 0)
		return FC_STATE_NONE;
	if (journal_open(op->journal, &j, err, sizeof(err)))
		return fail("%s", err), -1;
	rc = journal_init(j);
	if (!rc)
		rc = journal_get(j, opid, &e);
	journal_close(j);
	if (rc == FC_NOT_FOUND)
		return FC_STATE_NONE;
	if (rc)
		return fail("journal_get: %s", error_name(rc)), -1;
	return (int)e.state;
}

int rs_check_history(const struct rs_op *op)
{
	char opid[80], intent[80], err[512];
	struct journal_transition *h = NULL;
	enum fc_state prev = FC_STATE_NONE;
	journal *j;
	size_t n = 0;
	int rc;

	if (rs_ids(op, opid, intent))
		return -1;
	if (journal_open(op->journal, &j, err, sizeof(err)))
		return fail("%s", err);
	rc = journal_history(j, opid, &h, &n);
	journal_close(j);
	if (rc)
		return fail("journal_history: %s", error_name(rc));
	for (size_t i = 0; i < n && !rc; i++) {
		if (h[i].version != (long long)i + 1)
			rc = fail("history row %zu has version %lld", i, h[i].version);
		else if (h[i].from != prev)
			rc = fail("history row %zu starts at %s, not %s", i,
				  state_name(h[i].from), state_name(prev));
		else if (!state_transition_legal(h[i].from, h[i].to))
			rc = fail("history row %zu: illegal %s -> %s", i,
				  state_name(h[i].from), state_name(h[i].to));
		prev = h[i].to;
	}
	free(h);
	return rc;
}

int rs_return_field(const struct rs_op *op, int try_number, const char *key,
		    char *out, size_t len)
{
	char path[RS_PATH + 32];
	json_t *doc, *v;

	snprintf(path, sizeof(path), "%s/xcom-%d/return.json", op->dir, try_number);
	out[0] = '\0';
	doc = json_load_file(path, 0, NULL);
	if (!doc)
		return fail("no return.json for try %d", try_number);
	v = json_object_get(doc, key);
	if (json_is_string(v))
		snprintf(out, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(out, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_boolean(v))
		snprintf(out, len, "%s", json_is_true(v) ? "true" : "false");
	json_decref(doc);
	return 0;
}
