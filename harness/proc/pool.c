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
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/json_text.h"
#include "harness/proc/pool.h"

#define POOL_MAX_WORKERS 64
#define POOL_LINE_MAX (256L * 1024 * 1024) /* one result line */
#define POOL_KEEP_HEAP (64 * 1024 * 1024) /* heap a worker does not trim */

struct worker {
	pid_t pid;
	int job_fd;     /* coordinator -> worker */
	int res_fd;     /* worker -> coordinator */
	bool busy;
	void *tag;
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
};

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

static void worker_main(pool *p, int self, int job_fd, int res_fd,
			pid_t parent) __attribute__((noreturn));
static void worker_main(pool *p, int self, int job_fd, int res_fd,
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
		if (i == self)
			continue;
		if (p->w[i].job_fd >= 0)
			close(p->w[i].job_fd);
		if (p->w[i].res_fd >= 0)
			close(p->w[i].res_fd);
	}
	if (p->turn_r >= 0) {
		turn.r = p->turn_r;
		turn.w = p->turn_w;
		turn.held = &p->holds[self];
		turn.cpu = p->cpu;
	} else {
		pin_to(p->cpu[self]); /* invariant 5: a worker per CPU */
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
		json_t *job = json_loads(line, 0, NULL), *res;
		if (!job)
			break;
		pool_turn_take();
		res = p->work(p->ctx, job);
		pool_turn_give();
		json_decref(job);
		if (!res || send_line(res_fd, res)) {
			json_decref(res);
			break;
		}
		json_decref(res);
	}
	free(line);
	if (p->fini)
		p->fini(p->ctx);
	_exit(0);
}

static int start_worker(pool *p, int i, char *err, size_t errlen)
{
	int jp[2], rp[2];
	pid_t pid, parent = getpid();

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
	fflush(NULL);
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
	p->w[i] = (struct worker){ .pid = pid, .job_fd = jp[1], .res_fd = rp[0] };
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

int pool_submit(pool *p, json_t *job, void *tag)
{
	for (int i = 0; i < p->n; i++) {
		struct worker *w = &p->w[i];
		if (w->busy || w->pid <= 0)
			continue;
		if (send_line(w->job_fd, job))
			return FC_IO;
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
	return was_busy ? 1 : 0;
}

/* Read what is there; return 1 with a complete line's JSON, 0 if none
 * yet, -1 at EOF. */
static int read_result(struct worker *w, json_t **result)
{
	char *nl;

	for (;;) {
		ssize_t r;
		if (w->len && (nl = memchr(w->buf, '\n', w->len))) {
			size_t len = (size_t)(nl - w->buf);
			*result = json_loadb(w->buf, len, 0, NULL);
			w->len -= len + 1;
			memmove(w->buf, nl + 1, w->len);
			return *result ? 1 : -1;
		}
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
		if (!memchr(w->buf + w->len - (size_t)r, '\n', (size_t)r))
			return 0; /* poll again rather than block */
	}
}

int pool_collect(pool *p, long long timeout_ms, json_t **result, void **tag)
{
	struct pollfd fds[POOL_MAX_WORKERS];
	int idx[POOL_MAX_WORKERS], n = 0, rc;

	*result = NULL;
	*tag = NULL;
	for (int i = 0; i < p->n; i++) {
		struct worker *w = &p->w[i];
		if (!w->busy)
			continue;
		if (w->len && memchr(w->buf, '\n', w->len)) {
			rc = read_result(w, result);
			w->busy = false;
			*tag = w->tag;
			if (rc < 0)
				return replace(p, i, result, tag);
			return 1;
		}
		fds[n].fd = w->res_fd;
		fds[n].events = POLLIN;
		idx[n++] = i;
	}
	if (!n)
		return 0;
	rc = poll(fds, (nfds_t)n, timeout_ms < 0 ? -1 : (int)timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : FC_IO;
	for (int k = 0; k < n; k++) {
		struct worker *w = &p->w[idx[k]];
		if (!fds[k].revents)
			continue;
		rc = read_result(w, result);
		if (rc == 0)
			continue;
		if (rc < 0)
			return replace(p, idx[k], result, tag);
		w->busy = false;
		*tag = w->tag;
		return 1;
	}
	return 0;
}
