/*
 * pool.c -- forked workers, one job at a time each, JSON lines back
 * (pool.h).
 *
 * Invariants:
 *  1. A worker holds only its own two pipe ends; it closes every other
 *     worker's ends after fork, so EOF on a job pipe reaches exactly one
 *     worker and EOF on a result pipe means exactly one worker died.
 *  2. A worker is busy from submit until its result line (or its death) is
 *     seen; only idle workers get jobs.
 *  3. The coordinator never blocks writing a job: job lines are small and
 *     the worker reads its pipe whenever it is idle.
 *  4. Turns: with fewer turns than workers, a worker runs its job only
 *     while it holds a turn, one byte it read from the turn pipe, and
 *     writes it back when the job ends or while it waits on the clock
 *     (pool_turn_give()).  A worker's `holds` flag (shared memory) is set
 *     from its read to its write, so the byte of a worker that died
 *     holding it is written back by the coordinator (one killed in the
 *     instant between its read and its flag takes its turn along: the
 *     run goes on with one fewer).  The byte is the turn's number, the
 *     flag that number plus one, so the byte written back is the one read.
 *  5. CPUs: when pinning and this process may use at least as many CPUs
 *     as there are turns (without turns: workers), turn k (worker k) is
 *     tied to the k-th of them.  A worker runs on its turn's CPU from the
 *     moment it takes the turn, and the processes it starts from then on
 *     inherit that (supervise_forksrv.c moves its fork server along), so
 *     a worker and its route hand the CPU to each other instead of waking
 *     one another across CPUs.  Pinning is a speed-up only: a call that
 *     fails leaves the process where it was.
 *  6. Results carry their job: every line on a result pipe is one JSON
 *     object naming the job it answers (pool_job, the coordinator's
 *     number for it, sent with the job) and carrying the worker's nonce
 *     (pool_nonce: POOL_NONCE_LEN random bytes the coordinator draws for
 *     each worker before it forks it; the worker forgets every other
 *     worker's, and the nonce never crosses a pipe).  The coordinator
 *     takes a line only from a busy worker, for the job it runs, with
 *     its nonce; anything else -- a line from an idle worker, a second
 *     line after the result, another job's, no or a wrong nonce, text
 *     that is not such an object -- is written there by someone else (a
 *     route that found the pipe through /proc/<worker>/fd), and ends the
 *     run (pool_errmsg()).  The nonce keeps a writer out, not a reader:
 *     a route that can open the pipe can read a line, and the sandbox
 *     (docs/security.md) is what keeps it from the worker's /proc.
 *  7. The run watchdog: when busy workers show no progress -- no result,
 *     no pool_progress() line, no death -- for stall_ms, the run ends
 *     (pool_errmsg() names the jobs it is stuck at) and every worker is
 *     killed; a worker's hang costs the run a bounded time, never for
 *     ever.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fsutil.h"
#include "common/json_text.h"
#include "harness/proc/pool.h"

#define POOL_MAX_WORKERS 64
#define POOL_LINE_MAX (256L * 1024 * 1024) /* one result line */
#define POOL_KEEP_HEAP (64 * 1024 * 1024) /* heap a worker does not trim */
#define POOL_NONCE_LEN 16  /* random bytes per worker (invariant 6) */
#define POOL_NONCE_HEX (2 * POOL_NONCE_LEN + 1)
#define POOL_WHAT_MAX 160  /* of a job's line kept to name it when stuck */

struct worker {
	pid_t pid;
	int job_fd;     /* coordinator -> worker */
	int res_fd;     /* worker -> coordinator, non-blocking here */
	bool busy;
	void *tag;
	unsigned long long job; /* the job it runs (busy) or ran last */
	char nonce[POOL_NONCE_HEX]; /* invariant 6, as hex */
	char what[POOL_WHAT_MAX];   /* the start of the job's line */
	char *buf;      /* partial result line */
	size_t len, cap;
};

struct pool {
	struct worker w[POOL_MAX_WORKERS];
	int n;
	pool_work_fn work;
	pool_fini_fn fini;
	void *ctx;
	int turn_r, turn_w;   /* the turn pipe; -1: as many turns as workers */
	unsigned char *holds; /* shared: worker i holds turn holds[i] - 1
				 (0: none; invariant 4) */
	int cpu[POOL_MAX_WORKERS]; /* turn's (worker's) CPU; -1: unpinned */
	unsigned long long jobs;   /* jobs submitted: the last one's number */
	long long stall_ms;        /* invariant 7 */
	long long moved_ms;        /* when a busy worker last showed progress */
	int failed;                /* a refused line or the watchdog ended
				      the run: every later call fails so */
	char err[1024];
};

/* In a worker: where its lines go, the job it runs and its nonce
 * (pool_progress()). */
static struct {
	int fd;
	unsigned long long job;
	const char *nonce;
} self = { -1, 0, NULL };

/* In a worker: its pool's turn pipe, its own `holds` flag, and the CPU
 * of each turn (invariant 5). */
static struct {
	int r, w;
	unsigned char *held;
	const int *cpu;
} turn = { -1, -1, NULL, NULL };

/* Run on `cpu` from now on (-1: leave it). */
static void pin_to(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

void pool_turn_take(void)
{
	unsigned char b;
	ssize_t n;

	if (turn.r < 0 || *turn.held)
		return;
	while ((n = read(turn.r, &b, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		return; /* the coordinator is gone: run anyway */
	*turn.held = (unsigned char)(b + 1);
	if (b < POOL_MAX_WORKERS)
		pin_to(turn.cpu[b]);
}

/* Give a held turn back: clear its flag, then write its byte. */
static void turn_put(int w, unsigned char *held)
{
	unsigned char b = (unsigned char)(*held - 1);

	*held = 0;
	while (write(w, &b, 1) < 0 && errno == EINTR)
		;
}

void pool_turn_give(void)
{
	if (turn.r >= 0 && *turn.held)
		turn_put(turn.w, turn.held);
}

/* One write() for the line and its newline: the reader wakes once per
 * line, not once for the text and again for the "\n". */
static int send_line(int fd, json_t *v)
{
	size_t len;
	char *line = json_text_dumps(v, true, 1, &len);
	int rc;

	if (!line)
		return FC_NOMEM;
	line[len] = '\n';
	rc = fs_write_all(fd, line, len + 1);
	free(line);
	return rc;
}

/* In a worker: res, an object, as the line for the job it runs
 * (invariant 6). */
static int send_result(json_t *res)
{
	if (!json_is_object(res) ||
	    json_object_set_new(res, "pool_job", json_integer(
			(json_int_t)self.job)) ||
	    json_object_set_new(res, "pool_nonce", json_string(self.nonce)))
		return FC_USAGE;
	return send_line(self.fd, res);
}

void pool_progress(void)
{
	json_t *line;

	if (self.fd < 0 || !self.job)
		return;
	line = json_pack("{s:b}", "pool_progress", 1);
	if (line && send_result(line) == 0) {
		json_decref(line);
		return;
	}
	json_decref(line);
	_exit(1); /* the coordinator is gone, or out of memory */
}

/* A job line, {"pool_job": N, "job": JOB}: JOB (borrowed from *line_v,
 * which the caller releases) and N in self.job; NULL if it is not one. */
static json_t *job_of(const char *text, json_t **line_v)
{
	json_t *n, *job;

	*line_v = json_loads(text, 0, NULL);
	n = json_object_get(*line_v, "pool_job");
	job = json_object_get(*line_v, "job");
	if (!json_is_integer(n) || json_integer_value(n) < 1 || !job)
		return NULL;
	self.job = (unsigned long long)json_integer_value(n);
	return job;
}

static void worker_main(pool *p, int me, int job_fd, int res_fd,
			pid_t parent) __attribute__((noreturn));
static void worker_main(pool *p, int me, int job_fd, int res_fd,
			pid_t parent)
{
	FILE *in;
	char *line = NULL;
	size_t cap = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(1);
	/* the coordinator's handlers are for the coordinator */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	for (int i = 0; i < p->n; i++) {
		if (i == me)
			continue;
		if (p->w[i].job_fd >= 0)
			close(p->w[i].job_fd);
		if (p->w[i].res_fd >= 0)
			close(p->w[i].res_fd);
		/* invariant 6: another worker's nonce is not this one's to
		 * know (its route could read this memory some day) */
		explicit_bzero(p->w[i].nonce, sizeof(p->w[i].nonce));
	}
	self.fd = res_fd;
	self.nonce = p->w[me].nonce;
	if (p->turn_r >= 0) {
		turn.r = p->turn_r;
		turn.w = p->turn_w;
		turn.held = &p->holds[me];
		turn.cpu = p->cpu;
	} else {
		pin_to(p->cpu[me]); /* invariant 5: a worker per CPU */
	}
	in = fdopen(job_fd, "r");
	if (!in)
		_exit(1);
	/* A schedule frees what it allocated; by default glibc hands the top
	 * of the heap back to the kernel each time (systrim) and the next
	 * schedule faults it in again.  A worker keeps its heap instead. */
	mallopt(M_TRIM_THRESHOLD, POOL_KEEP_HEAP);
	mallopt(M_MMAP_THRESHOLD, POOL_KEEP_HEAP / 16); /* fixed from now on */
	while (getline(&line, &cap, in) > 0) {
		json_t *msg, *job = job_of(line, &msg), *res;

		if (!job) {
			json_decref(msg);
			break;
		}
		pool_turn_take();
		res = p->work(p->ctx, job);
		pool_turn_give();
		json_decref(msg);
		if (!res || send_result(res)) {
			json_decref(res);
			break;
		}
		json_decref(res);
		self.job = 0;
	}
	free(line);
	if (p->fini)
		p->fini(p->ctx);
	_exit(0);
}

/* A fresh nonce for worker i (invariant 6), as hex. */
static int nonce_new(char hex[POOL_NONCE_HEX])
{
	unsigned char b[POOL_NONCE_LEN];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t r = getrandom(b + got, sizeof(b) - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return FC_IO;
		got += (size_t)r;
	}
	for (size_t k = 0; k < sizeof(b); k++)
		snprintf(hex + 2 * k, 3, "%02x", b[k]);
	explicit_bzero(b, sizeof(b));
	return 0;
}

static int start_worker(pool *p, int i, char *err, size_t errlen)
{
	int jp[2], rp[2];
	pid_t pid, parent = getpid();
	char nonce[POOL_NONCE_HEX];

	if (nonce_new(nonce)) {
		snprintf(err, errlen, "cannot draw a worker's nonce: %s",
			 strerror(errno));
		return FC_IO;
	}
	if (pipe2(jp, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot create pipe: %s", strerror(errno));
		return FC_IO;
	}
	if (pipe2(rp, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot create pipe: %s", strerror(errno));
		close(jp[0]);
		close(jp[1]);
		return FC_IO;
	}
	/* the worker knows its nonce from the fork, never from a pipe */
	memcpy(p->w[i].nonce, nonce, sizeof(nonce));
	explicit_bzero(nonce, sizeof(nonce));
	fflush(NULL);
	/* A forked worker keeps the coordinator's dumpable flag: as root,
	 * cli/main.c made it non-dumpable before anything started, so a
	 * route cannot open /proc/<worker>/mem or /proc/<worker>/fd/N
	 * (they need ptrace access) to read the nonce or reach the result
	 * pipe (invariant 6); not root, the supervisor makes the worker
	 * so where no namespace hides it (supervisor_containment()).  The
	 * worker never execs, which would make it dumpable again. */
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot start worker: %s", strerror(errno));
		close(jp[0]);
		close(jp[1]);
		close(rp[0]);
		close(rp[1]);
		return FC_IO;
	}
	if (pid == 0) {
		close(jp[1]);
		close(rp[0]);
		worker_main(p, i, jp[0], rp[1], parent);
	}
	close(jp[0]);
	close(rp[1]);
	/* the read end only: the worker's end stays blocking */
	(void)fcntl(rp[0], F_SETFL, O_NONBLOCK);
	p->w[i].pid = pid;
	p->w[i].job_fd = jp[1];
	p->w[i].res_fd = rp[0];
	p->w[i].busy = false;
	p->w[i].tag = NULL;
	p->w[i].job = 0;
	p->w[i].what[0] = '\0';
	return 0;
}

/* The turn pipe holding `turns` bytes and the shared flags (invariant
 * 4); nothing when every worker may run at once. */
static int turns_new(pool *p, int workers, int turns, char *err,
		     size_t errlen)
{
	int fd[2];
	unsigned char numbers[POOL_MAX_WORKERS];

	if (turns >= workers)
		return 0;
	p->holds = mmap(NULL, POOL_MAX_WORKERS, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p->holds == MAP_FAILED) {
		p->holds = NULL;
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	if (pipe2(fd, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "cannot create pipe: %s", strerror(errno));
		return FC_IO;
	}
	p->turn_r = fd[0]; /* pool_free() closes them from here on */
	p->turn_w = fd[1];
	for (int k = 0; k < turns; k++)
		numbers[k] = (unsigned char)k;
	if (fs_write_all(fd[1], numbers, (size_t)turns) != 0) {
		snprintf(err, errlen, "cannot fill the turn pipe: %s",
			 strerror(errno));
		return FC_IO;
	}
	return 0;
}

/* Each of `slots` turns (or workers) its own CPU of those this process
 * may use, in order, when pinning and there are enough of them
 * (invariant 5); else none pinned. */
static void cpus_new(pool *p, int slots, bool pin)
{
	cpu_set_t allowed;
	int k = 0;

	for (int i = 0; i < POOL_MAX_WORKERS; i++)
		p->cpu[i] = -1;
	if (!pin || sched_getaffinity(0, sizeof(allowed), &allowed) != 0 ||
	    CPU_COUNT(&allowed) < slots)
		return;
	for (int c = 0; c < CPU_SETSIZE && k < slots; c++)
		if (CPU_ISSET(c, &allowed))
			p->cpu[k++] = c;
}

int pool_new(int workers, int turns, bool pin, pool_work_fn work,
	     pool_fini_fn fini, void *ctx, pool **out, char *err,
	     size_t errlen)
{
	pool *p;
	int rc;

	*out = NULL;
	if (workers < 1 || workers > POOL_MAX_WORKERS || turns < 1) {
		snprintf(err, errlen, "workers must be 1 to %d, turns at least 1",
			 POOL_MAX_WORKERS);
		return FC_USAGE;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return FC_NOMEM;
	}
	p->work = work;
	p->fini = fini;
	p->ctx = ctx;
	p->stall_ms = POOL_STALL_MS;
	p->turn_r = p->turn_w = -1;
	for (int i = 0; i < POOL_MAX_WORKERS; i++)
		p->w[i].job_fd = p->w[i].res_fd = -1;
	if ((rc = turns_new(p, workers, turns, err, errlen))) {
		pool_free(p, NULL);
		return rc;
	}
	cpus_new(p, turns < workers ? turns : workers, pin);
	for (int i = 0; i < workers; i++) {
		if ((rc = start_worker(p, i, err, errlen))) {
			pool_free(p, NULL);
			return rc;
		}
		p->n = i + 1;
	}
	*out = p;
	return 0;
}

static void stop_worker(struct worker *w, bool kill_it)
{
	if (w->job_fd >= 0)
		close(w->job_fd);
	if (w->res_fd >= 0)
		close(w->res_fd);
	w->job_fd = w->res_fd = -1;
	if (w->pid > 0) {
		if (kill_it)
			kill(w->pid, SIGKILL);
		while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	w->pid = 0;
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

void pool_free(pool *p, void (*drop)(void *tag))
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++) {
		if (p->w[i].busy && drop)
			drop(p->w[i].tag);
		stop_worker(&p->w[i], p->w[i].busy);
	}
	if (p->turn_r >= 0) {
		close(p->turn_r);
		close(p->turn_w);
	}
	if (p->holds)
		munmap(p->holds, POOL_MAX_WORKERS);
	free(p);
}

bool pool_has_idle(const pool *p)
{
	for (int i = 0; i < p->n; i++)
		if (!p->w[i].busy && p->w[i].pid > 0)
			return true;
	return false;
}

size_t pool_busy(const pool *p)
{
	size_t n = 0;

	for (int i = 0; i < p->n; i++)
		n += p->w[i].busy;
	return n;
}

const char *pool_errmsg(const pool *p)
{
	return p->err;
}

void pool_set_stall_ms(pool *p, long long ms)
{
	p->stall_ms = ms > 0 ? ms : POOL_STALL_MS;
}

/* End the run: every worker is killed (pool_free() reaps them and drops
 * the jobs they ran), every later call fails with rc. */
static int fail(pool *p, int rc)
{
	for (int i = 0; i < p->n; i++)
		if (p->w[i].pid > 0)
			kill(p->w[i].pid, SIGKILL);
	p->failed = rc;
	return rc;
}

static int refuse(pool *p, const struct worker *w, const char *why)
{
	snprintf(p->err, sizeof(p->err), "a line on worker %d's result pipe "
		 "%s: refused (written by something else than the worker; the "
		 "run ends)", (int)w->pid, why);
	return fail(p, FC_CORRUPT);
}

int pool_submit(pool *p, json_t *job, void *tag)
{
	if (p->failed)
		return p->failed;
	for (int i = 0; i < p->n; i++) {
		struct worker *w = &p->w[i];
		json_t *line;
		char *text;
		int rc;

		if (w->busy || w->pid <= 0)
			continue;
		line = json_pack("{s:I, s:O}", "pool_job",
				 (json_int_t)(p->jobs + 1), "job", job);
		rc = line ? send_line(w->job_fd, line) : FC_NOMEM;
		if (!rc && (text = json_dumps(job, JSON_COMPACT))) {
			snprintf(w->what, sizeof(w->what), "%s", text);
			free(text);
		}
		json_decref(line);
		if (rc)
			return rc == FC_NOMEM ? rc : FC_IO;
		if (!pool_busy(p))
			p->moved_ms = clock_mono_ms(); /* the watch starts */
		w->job = ++p->jobs;
		w->busy = true;
		w->tag = tag;
		return 0;
	}
	return FC_USAGE;
}

/* A worker died: report its job as lost and start a replacement. */
static int replace(pool *p, int i, json_t **result, void **tag)
{
	char err[256];
	bool was_busy = p->w[i].busy;

	*tag = p->w[i].tag;
	*result = NULL;
	stop_worker(&p->w[i], true);
	p->w[i].busy = false;
	if (p->holds && p->holds[i]) /* invariant 4: its turn comes back */
		turn_put(p->turn_w, &p->holds[i]);
	if (start_worker(p, i, err, sizeof(err)))
		p->w[i].pid = 0; /* one worker fewer */
	p->moved_ms = clock_mono_ms();
	return was_busy ? 1 : 0;
}

/* Read what the pipe holds now into w's buffer: 0, or -1 at EOF or on
 * an error (a line longer than POOL_LINE_MAX included). */
static int fill(struct worker *w)
{
	for (;;) {
		ssize_t r;

		if (w->cap - w->len < 65536) {
			size_t nc = w->cap ? w->cap * 2 : 262144;
			char *nb;

			if (nc > POOL_LINE_MAX)
				return -1;
			nb = realloc(w->buf, nc);
			if (!nb)
				return -1;
			w->buf = nb;
			w->cap = nc;
		}
		r = read(w->res_fd, w->buf + w->len, w->cap - w->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 0;
		if (r <= 0)
			return -1;
		w->len += (size_t)r;
	}
}

/* Constant time: how long a guess matched says nothing. */
static bool nonce_is(const char *got, const char *want)
{
	unsigned char diff = 0;

	if (strlen(got) != POOL_NONCE_HEX - 1)
		return false;
	for (size_t k = 0; k < POOL_NONCE_HEX - 1; k++)
		diff |= (unsigned char)(got[k] ^ want[k]);
	return diff == 0;
}

/* The line text[0, len) from worker w (invariant 6): 1 with its result
 * (the pool's members taken out), 0 for a progress line, or the run's
 * end. */
static int accept_line(pool *p, struct worker *w, const char *text,
		       size_t len, json_t **result)
{
	json_t *v = json_loadb(text, len, 0, NULL);
	json_t *job = json_object_get(v, "pool_job");
	const char *nonce = json_string_value(json_object_get(v, "pool_nonce"));
	char why[128];
	int rc = 1;

	if (!json_is_object(v))
		rc = refuse(p, w, "is not a JSON object");
	else if (!w->busy)
		rc = refuse(p, w, "came while it ran no job (a second line?)");
	else if (!nonce || !nonce_is(nonce, w->nonce))
		rc = refuse(p, w, nonce ? "carries a wrong nonce" :
			    "carries no nonce");
	else if (!json_is_integer(job) ||
		 (unsigned long long)json_integer_value(job) != w->job) {
		snprintf(why, sizeof(why), "names job %lld, not job %llu it "
			 "runs", json_is_integer(job) ?
			 (long long)json_integer_value(job) : -1LL, w->job);
		rc = refuse(p, w, why);
	} else if (json_is_true(json_object_get(v, "pool_progress"))) {
		rc = 0;
	}
	if (rc == 1) {
		json_object_del(v, "pool_job");
		json_object_del(v, "pool_nonce");
		*result = v;
		return 1;
	}
	json_decref(v);
	if (rc == 0)
		p->moved_ms = clock_mono_ms();
	return rc;
}

/* Worker i's pipe is readable: take its lines.  1 with the result of
 * its job (or NULL: it died running it), 0 for nothing yet, or the run's
 * end. */
static int drain(pool *p, int i, json_t **result, void **tag)
{
	struct worker *w = &p->w[i];
	int eof = fill(w), rc;
	char *nl;

	while (w->len && (nl = memchr(w->buf, '\n', w->len))) {
		size_t len = (size_t)(nl - w->buf);

		rc = accept_line(p, w, w->buf, len, result);
		w->len -= len + 1;
		memmove(w->buf, nl + 1, w->len);
		if (rc < 0)
			return rc;
		if (rc == 0)
			continue;
		if (w->len) {
			json_decref(*result);
			*result = NULL;
			return refuse(p, w, "follows its job's result");
		}
		w->busy = false;
		*tag = w->tag;
		p->moved_ms = clock_mono_ms();
		return 1;
	}
	if (eof < 0)
		return replace(p, i, result, tag);
	return 0;
}

/* Invariant 7: nothing moved for stall_ms. */
static int stalled(pool *p)
{
	size_t at;
	long long ms = p->stall_ms;

	at = (size_t)snprintf(p->err, sizeof(p->err), "no schedule finished "
			      "in %lld %s; the run is stuck at",
			      ms % 1000 ? ms : ms / 1000, ms % 1000 ? "ms" : "s");
	for (int i = 0; i < p->n && at < sizeof(p->err); i++) {
		const struct worker *w = &p->w[i];

		if (!w->busy)
			continue;
		at += (size_t)snprintf(p->err + at, sizeof(p->err) - at,
				       " job %llu %s (worker %d);", w->job,
				       w->what, (int)w->pid);
	}
	if (at < sizeof(p->err) && at && p->err[at - 1] == ';')
		p->err[at - 1] = '\0';
	return fail(p, FC_IO);
}

int pool_collect(pool *p, long long timeout_ms, json_t **result, void **tag)
{
	struct pollfd fds[POOL_MAX_WORKERS];
	int idx[POOL_MAX_WORKERS], n = 0, rc;
	long long left;

	*result = NULL;
	*tag = NULL;
	if (p->failed)
		return p->failed;
	if (!pool_busy(p))
		return 0;
	left = p->moved_ms + p->stall_ms - clock_mono_ms();
	if (left <= 0)
		return stalled(p);
	/* idle workers too: a line from one is not its own (invariant 6),
	 * and an idle one that died is replaced */
	for (int i = 0; i < p->n; i++) {
		if (p->w[i].pid <= 0 || p->w[i].res_fd < 0)
			continue;
		fds[n].fd = p->w[i].res_fd;
		fds[n].events = POLLIN;
		idx[n++] = i;
	}
	if (timeout_ms >= 0 && timeout_ms < left)
		left = timeout_ms;
	rc = poll(fds, (nfds_t)n, left > INT_MAX ? INT_MAX : (int)left);
	if (rc < 0)
		return errno == EINTR ? 0 : FC_IO;
	for (int k = 0; k < n; k++) {
		if (!fds[k].revents)
			continue;
		rc = drain(p, idx[k], result, tag);
		if (rc != 0)
			return rc;
	}
	return 0;
}
