/*
 * fork_server.c -- serve spawn requests of the harness (fork_server.h,
 * docs/fork-server.md).
 *
 * Invariants:
 *  1. The server is single-threaded and allocates nothing the child needs
 *     after the clone: a request is parsed completely before the clone, so
 *     the child only makes system calls and returns into main.  The
 *     helpers it calls in the loop (fds_recv(), child_setup_fd_high())
 *     allocate nothing either, and set errno only when they fail.
 *  2. The child is cloned with CLONE_PARENT: it is the harness's child, so
 *     the harness reaps it, gets its SIGCHLD and may setpgid() it like any
 *     child it spawned itself.  It checks that the harness still lives
 *     after arming PR_SET_PDEATHSIG (the harness may die first): getppid()
 *     against the harness, or, cloned into a PID namespace of its own
 *     (the request's NS), a pidfd of the harness the server opened once.
 *     Contained, the child is the namespace's init (common/child_setup.h):
 *     it forks the route process, which carries on into main, and stays
 *     behind to reap, to kill what the route leaves and to report.
 *  3. The child sets itself up with child_setup_clone(), the steps an
 *     exec'd attempt takes (common/child_setup.h): it ends holding exactly
 *     fds 0-2 and the failpoint end as fd 3; everything else the server had
 *     open (its socket, the received fds) is closed.
 *  4. The seccomp filter is loaded last, after the report fd was closed:
 *     the child then only sends the listener and closes two fds, calls no
 *     filter intercepts (common/child_setup.h, invariant 3).
 *  5. A malformed request is answered "error EPROTO" and its fds closed;
 *     the server goes on serving.  EOF on the socket ends the server.
 *  6. Sanitized builds clone the same way: the server has one thread, so
 *     no sanitizer lock can be held across the clone (what their fork
 *     interceptors protect against), and the child keeps the runtime's
 *     signal handlers and exit-time leak check.
 *  7. Between two clones the server writes no page a child inherits (a
 *     write to one costs a copy-on-write fault and a TLB shootdown per page
 *     while the child lives).  The serve loop runs on its own stack
 *     (MADV_DONTFORK), calls no malloc, and receives each request into the
 *     hand-over area, which it empties (MADV_DONTNEED) after the clone, so
 *     it writes fresh pages the next time.  The child starts on a stack
 *     in that area and resumes serve_enter()'s frame on the main stack
 *     with setcontext(): it returns from fork_server_serve() as the
 *     program's main() carries on when exec'd.
 *     The kernel's own writes count too: it updates a thread's rseq area
 *     (in its TLS page) whenever it returns to user space on another CPU,
 *     so the server unregisters it before serving and each child
 *     registers it again, as glibc did at the program's start.
 *  8. What a child will surely write it gets in one call, not a fault per
 *     page: the heap's last HEAP_POPULATE bytes and the main stack's
 *     STACK_POPULATE below the frame it resumes (MADV_POPULATE_WRITE; the
 *     server dropped its own pages of that stack range, so they are fresh,
 *     not copies).  Only page tables change, no byte an attempt reads.
 *
 *  9. A contained attempt's clone is the init of its PID namespace: it
 *     starts the route's process and stays behind (common/child_setup.h).
 *     It shares the server's memory (CLONE_VM: no page tables copied for
 *     it, none torn down after it) on a stack of its own from INIT_SLOTS
 *     not inherited by children (MADV_DONTFORK), and makes raw system
 *     calls only, so it writes no page of the server's but that stack.
 *     Its route's process is cloned from it onto the hand-over area's
 *     stack, a copy of the server as an uncontained child is; the server
 *     waits until then before it touches the request again.  A slot's
 *     word is the server's until the clone (CHILD_INIT_STARTING), the
 *     init's once it started its route (the kernel writes the route's
 *     pid there in that clone, CLONE_PARENT_SETTID, so an init stopped
 *     before its own wake cannot hold the server), and free again when
 *     it exits (the kernel clears it: CLONE_CHILD_CLEARTID).  No slot
 *     free, or a sanitized build: the init is a copy of the server.
 *
 *   serve_enter() --swapcontext--> serve_loop() on its stack: recv, parse,
 *        ^                           clone(child_main) --+--> reply, release
 *        +------ setcontext(&main_ctx) -- child_main() <-+    (next request)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/rseq.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/child_setup.h"
#include "common/fds.h"
#include "common/protocol.h"
#include "common/sanitizer.h"
#include "routes/fork_server.h"

/* The serve loop's own stack (not inherited; sanitized frames are big). */
#define LOOP_STACK_SIZE (256 * 1024)
/* The stack a child sets itself up on, before it resumes the main
 * stack (sanitized frames are big).  Its top is just past a page
 * boundary: what clone() stores there shares the page with the request,
 * the child's frames go below (hand_empty()). */
#define CHILD_STACK_SIZE (64 * 1024 + 64)
/* What a child populates (invariant 8): an attempt of `fencecert route`
 * writes about 40 kB of stack and the whole of the server's heap (132 kB)
 * before it grows its own. */
#define STACK_POPULATE (48 * 1024)
#define HEAP_POPULATE (256 * 1024)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#define MAX_ARGC 4096
#define MAX_ENVC 65536
/* The inits of contained attempts that share the server's memory
 * (invariant 9): at most this many alive, each on its own stack. */
#define INIT_SLOTS 64
#define INIT_STACK_SIZE (32 * 1024)

/* a request's fds arrive in one fds_recv() */
_Static_assert(FORK_SERVER_FDS_MAX <= FDS_MAX, "FDS_MAX too small");

struct request {
	int argc;
	char **argv;           /* in the hand-over area */
	char **env;
	const char *cwd;       /* NULL: inherit */
	bool fp;
	enum child_contain contain;
	struct sock_filter *bpf;
	size_t bpf_len;        /* instructions */
	int fds[FORK_SERVER_FDS_MAX];
	int nfds;
	int *started;          /* its init's slot word (invariant 9), or NULL */
	struct sandbox sb;     /* CHILD_CONTAIN_SANDBOX: from the request's
				  PROTO_ENV_WRITABLE (common/sandbox.h) */
};

/*
 * The hand-over area: the clone's first stack frames, then one request,
 * its message and what the parse builds from it (argv, environment, the
 * aligned filter) bump-allocated after the message, so a request with a
 * few kB of environment is the one page the server writes.  Mapped once,
 * inherited by each child (which starts on stack[] and reads its request
 * here), emptied by the server after each clone (invariant 7).
 */
struct hand {
	_Alignas(16) char stack[CHILD_STACK_SIZE];
	struct request rq;
	size_t len, used;      /* of buf: the message, then handed out */
	_Alignas(16) char buf[2 * FORK_SERVER_MSG_MAX +
			      (MAX_ARGC + MAX_ENVC + 2) * sizeof(char *)];
};

/* Set before the loop starts, read-only while it serves (invariant 7). */
static struct {
	int sock;
	pid_t harness, self;
	int harness_pidfd;     /* readable once the harness ended; -1 */
	struct child_setup ids; /* uid_map and gid_map for a user namespace */
	struct hand *hand;
	/* the dispositions the program started with (default, as the
	 * harness execs it; a sanitizer runtime's own handlers in sanitized
	 * builds): what an exec'd attempt would start main() with */
	struct sigaction initial_actions[32];
	/* signals whose disposition warm_up changed: a child resets these */
	int changed[32];
	int nchanged;
	ucontext_t main_ctx, loop_ctx;
	uintptr_t main_sp;     /* below serve_enter()'s frame, page-aligned */
	uintptr_t stack_lo;    /* the main stack's lowest address (0: unknown) */
	uintptr_t heap_lo;     /* the brk heap's (0: none) */
	bool rseq_off;         /* the server unregistered glibc's rseq area */
	/* invariant 9: INIT_SLOTS stacks and their words (CHILD_INIT_*),
	 * not inherited by children (MADV_DONTFORK); NULL: none */
	char *init_stacks;
	int *init_words;
} srv;

static pid_t server_pid; /* in a child: the server that cloned it */
/* in a child: its request, and its argv for as long as it lives (volatile:
 * kept, so leak checkers see it referenced) */
static struct request *child_rq;
static char **volatile child_argv;

pid_t fork_server_pid(void)
{
	return server_pid;
}

/* Close the request's fds (writes nothing: the page is the child's too). */
static void request_release(const struct request *rq)
{
	for (int i = 0; i < rq->nfds; i++)
		if (rq->fds[i] >= 0)
			close(rq->fds[i]);
}

/* n bytes of the hand-over area, 16-aligned; NULL when it is full. */
static void *hand_alloc(struct hand *h, size_t n)
{
	size_t at = (h->used + 15) & ~(size_t)15;

	if (n > sizeof(h->buf) - at)
		return NULL;
	h->used = at + n;
	return h->buf + at;
}

/* Give the pages the server wrote back: the child has its copy.  They
 * start with the 16 bytes clone() stored below the stack's top. */
static void hand_empty(struct hand *h)
{
	uintptr_t page = (uintptr_t)getpagesize();
	uintptr_t from = (uintptr_t)(h->stack + sizeof(h->stack) - 16) &
			 ~(page - 1);
	size_t n = h->used > h->len ? h->used : h->len;
	uintptr_t to = (uintptr_t)(h->buf + n);

	to = (to + page - 1) & ~(page - 1);
	if (madvise((void *)from, to - from, MADV_DONTNEED) < 0) {
		/* the pages stay; the next request writes them again */
	}
}

/* The next NUL-terminated field at *pos, or NULL past the end. */
static char *field(char **pos, char *end)
{
	char *s = *pos, *nul;

	if (s >= end || !(nul = memchr(s, '\0', (size_t)(end - s))))
		return NULL;
	*pos = nul + 1;
	return s;
}

/* A decimal count in [0, max]; no strtol(): it writes errno, a page
 * the children share (invariant 7). */
static bool count_field(char **pos, char *end, long max, long *out)
{
	const char *s = field(pos, end);
	long v = 0;

	if (!s || !*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (max - (*s - '0')) / 10)
			return false;
		v = v * 10 + (*s - '0');
	}
	if (v > max) /* one digit above a max below 10 passes the above */
		return false;
	*out = v;
	return true;
}

static char **str_list(struct hand *h, char **pos, char *end, long n)
{
	char **v = hand_alloc(h, ((size_t)n + 1) * sizeof(*v));

	for (long i = 0; v && i < n; i++)
		if (!(v[i] = field(pos, end)))
			return NULL;
	if (v)
		v[n] = NULL;
	return v;
}

/* A sandboxed request's writable directories: PROTO_ENV_WRITABLE of its
 * environment, copied into the hand-over area and cut at each ':'.
 * false when it is missing or names too many. */
static bool request_sandbox(struct hand *h, struct request *rq)
{
	static const char var[] = PROTO_ENV_WRITABLE "=";
	const char *value = NULL;
	size_t len;
	char *copy;

	for (char **e = rq->env; *e && !value; e++)
		if (strncmp(*e, var, sizeof(var) - 1) == 0)
			value = *e + sizeof(var) - 1;
	if (!value || !*value)
		return false;
	len = strlen(value);
	if (!(copy = hand_alloc(h, len + 1)))
		return false;
	memcpy(copy, value, len + 1);
	sandbox_init(&rq->sb, true);
	for (char *w = copy; w;) {
		char *colon = strchr(w, ':');

		if (colon)
			*colon = '\0';
		if (*w != '/' || sandbox_add_writable(&rq->sb, w))
			return false;
		w = colon ? colon + 1 : NULL;
	}
	return true;
}

/* Parse the message h->buf[0..h->len) into h->rq (fds already there);
 * false if malformed. */
static bool request_parse(struct hand *h)
{
	struct request *rq = &h->rq;
	char *pos = h->buf, *end = h->buf + h->len, *tag, *cwd;
	long argc, envc, fp, bpf, ns;

	tag = field(&pos, end);
	if (!tag || strcmp(tag, FORK_SERVER_SPAWN) != 0 ||
	    !count_field(&pos, end, MAX_ARGC, &argc) || argc < 1 ||
	    !count_field(&pos, end, MAX_ENVC, &envc) ||
	    !(cwd = field(&pos, end)) || !count_field(&pos, end, 1, &fp) ||
	    !count_field(&pos, end, FORK_SERVER_MSG_MAX, &bpf) ||
	    bpf % (long)sizeof(struct sock_filter) ||
	    !count_field(&pos, end, CHILD_CONTAIN_REAPER, &ns) ||
	    ns == CHILD_CONTAIN_FS)
		return false;
	rq->argc = (int)argc;
	rq->cwd = *cwd ? cwd : NULL;
	rq->fp = fp;
	rq->contain = (enum child_contain)ns;
	if (!(rq->argv = str_list(h, &pos, end, argc)) ||
	    !(rq->env = str_list(h, &pos, end, envc)) ||
	    end - pos != bpf || rq->nfds != 4 + (int)fp + (bpf > 0))
		return false;
	if (rq->contain == CHILD_CONTAIN_SANDBOX && !request_sandbox(h, rq))
		return false;
	rq->bpf_len = (size_t)bpf / sizeof(struct sock_filter);
	if (bpf) {
		rq->bpf = hand_alloc(h, (size_t)bpf); /* aligned for the kernel */
		if (!rq->bpf)
			return false;
		memcpy(rq->bpf, pos, (size_t)bpf);
	}
	return true;
}

/* Receive one request into h; 0 on EOF, -1 on a socket error, 1 with
 * h->rq filled (argv NULL when it was malformed). */
static int request_recv(int sock, struct hand *h)
{
	struct request *rq = &h->rq;
	bool whole;
	ssize_t n;

	*rq = (struct request){ 0 };
	h->len = h->used = 0;
	n = fds_recv(sock, h->buf, FORK_SERVER_MSG_MAX, rq->fds,
		     FORK_SERVER_FDS_MAX, &rq->nfds, &whole);
	if (n <= 0)
		return n == 0 ? 0 : -1;
	h->len = h->used = (size_t)n;
	if (!whole || !request_parse(h))
		rq->argv = NULL;
	return 1;
}

static void reply(int sock, const char *fmt, long v)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), fmt, v);

	if (send(sock, buf, (size_t)n, MSG_NOSIGNAL) != n) {
		/* the harness is gone: the next recvmsg sees EOF */
	}
}

/*
 * A child ends by flushing stdio and _exit(): the handlers registered
 * before it was cloned (library destructors run by _dl_fini) were the
 * server's, and undoing the server's initialisation in every attempt is
 * pure cost.  Handlers the attempt registers itself still run (first).
 * Sanitized builds exit normally: their runtimes report in exit handlers.
 */
#if !FC_SANITIZED
static void child_exit(int status, void *arg)
{
	(void)arg;
	fflush(NULL);
	_exit(status);
}
#endif

/* The request's fds must not sit on 0-3, where the child dup2s. */
static bool fds_high(struct request *rq)
{
	for (int i = 0; i < rq->nfds; i++)
		if ((rq->fds[i] = child_setup_fd_high(rq->fds[i])) < 0)
			return false;
	return true;
}

/* Populate [hi - len, hi) of page-aligned hi, not below floor (0: the
 * range is unknown, nothing is done). */
static void populate_range(uintptr_t floor, uintptr_t hi, size_t len)
{
	uintptr_t lo = hi > floor + len ? hi - len : floor;

	if (floor && lo < hi && madvise((void *)lo, hi - lo,
					MADV_POPULATE_WRITE) < 0) {
		/* an older kernel: the pages fault in one by one */
	}
}

/* In a child: map what it will surely write in two calls (invariant 8). */
static void populate(void)
{
	uintptr_t page = (uintptr_t)getpagesize();
	uintptr_t brk_now = ((uintptr_t)sbrk(0) + page - 1) & ~(page - 1);

	populate_range(srv.heap_lo, brk_now, HEAP_POPULATE);
	populate_range(srv.stack_lo, srv.main_sp + page, STACK_POPULATE);
}

/* glibc's registration of the thread's rseq area: the same arguments
 * unregister it in the server and register it in a child (invariant 7). */
static long rseq_call(int flags)
{
	unsigned len = __rseq_size > 32 ? __rseq_size : 32;

	return syscall(SYS_rseq, (char *)__builtin_thread_pointer() +
		       __rseq_offset, len, flags, RSEQ_SIG);
}

/* What a request's child is handed to set itself up. */
static void request_setup(const struct request *rq, struct child_setup *cs)
{
	*cs = (struct child_setup){
		.parent = srv.harness, .parent_pidfd = srv.harness_pidfd,
		.contain = rq->contain,
		.sandbox = rq->contain == CHILD_CONTAIN_SANDBOX ? &rq->sb : NULL,
		.in_fd = rq->fds[0], .out_fd = rq->fds[1], .err_fd = rq->fds[2],
		.report_fd = rq->fds[3], .fp_fd = rq->fp ? rq->fds[4] : -1,
		.cwd = rq->cwd,
		/* the clone has the server's dispositions: the initial ones
		 * but for what warm_up changed */
		.signals = srv.changed, .nsignals = srv.nchanged,
		.actions = srv.initial_actions,
		.filter = rq->bpf, .filter_len = rq->bpf_len,
		.seccomp_sock = rq->bpf ? rq->fds[4 + rq->fp] : -1,
	};
	memcpy(cs->uid_map, srv.ids.uid_map, sizeof(cs->uid_map));
	memcpy(cs->gid_map, srv.ids.gid_map, sizeof(cs->gid_map));
}

/* The route's process (uncontained: the clone itself), on the hand-over
 * area's stack: set up, then resume serve_enter()'s frame on the main
 * stack (invariant 7). */
static int child_main(void *arg)
{
	const struct request *rq = arg;
	struct child_setup cs;

	request_setup(rq, &cs);
	/* _exits 127 when a step fails; the mask is main_ctx's */
	child_setup_clone(&cs, rq->env);
	child_rq = arg;
	if (srv.rseq_off && rseq_call(0) < 0) {
		/* sched_getcpu() asks the kernel, as without rseq */
	}
	populate();
	setcontext(&srv.main_ctx);
	_exit(127); /* not reached */
}

/* A contained attempt's clone: the namespace's init, which starts the
 * route's process (child_main) and stays behind (invariant 9). */
static int init_main(void *arg)
{
	struct request *rq = arg;
	struct hand *h = srv.hand;
	struct child_setup cs;

	request_setup(rq, &cs);
	if (rq->started) /* sharing our memory: a stack of its own for it */
		child_setup_init_clone(&cs, child_main,
				       h->stack + sizeof(h->stack), rq,
				       rq->started);
	child_setup_init_clone(&cs, child_main, NULL, rq, NULL);
}

/* A free init slot, marked starting; NULL when all are taken. */
static int *init_slot(char **stack)
{
	for (int i = 0; srv.init_words && i < INIT_SLOTS; i++) {
		if (__atomic_load_n(&srv.init_words[i], __ATOMIC_ACQUIRE) !=
		    CHILD_INIT_FREE)
			continue;
		srv.init_words[i] = CHILD_INIT_STARTING;
		*stack = srv.init_stacks + (size_t)(i + 1) * INIT_STACK_SIZE;
		return &srv.init_words[i];
	}
	return NULL;
}

/* Clone the request's child: the route's process, or (contained) the
 * init of its namespace, sharing our memory (cheap: no page tables to
 * copy, none to tear down) when a slot is free and the sanitizers are
 * not watching, else a copy of us.  The child's parent is the harness
 * (invariant 2). */
static pid_t spawn_child(struct request *rq)
{
	struct hand *h = srv.hand;
	int ns = child_contain_flags(rq->contain);
	char *stack = NULL;
	pid_t pid;

	if (!child_contain_has_init(rq->contain))
		return clone(child_main, h->stack + sizeof(h->stack),
			     CLONE_PARENT | SIGCHLD, rq);
	rq->started = FC_SANITIZED ? NULL : init_slot(&stack);
	if (!rq->started)
		return clone(init_main, h->stack + sizeof(h->stack),
			     CLONE_PARENT | SIGCHLD | ns, rq);
	pid = clone(init_main, stack, CLONE_PARENT | CLONE_VM | SIGCHLD | ns |
		    CLONE_CHILD_CLEARTID, rq, NULL, NULL, rq->started);
	if (pid < 0)
		*rq->started = CHILD_INIT_FREE;
	return pid;
}

/* The server's loop, on its own stack; exits, never returns. */
static void serve_loop(void)
{
	struct hand *h = srv.hand;

	/* a child's setcontext() sets its mask: empty, as the harness starts
	 * an exec'd attempt (written once, before the first clone) */
	sigemptyset(&srv.main_ctx.uc_sigmask);
	srv.rseq_off = __rseq_size > 0 && rseq_call(RSEQ_FLAG_UNREGISTER) == 0;
	/* the main stack below the frame children resume: the server is done
	 * with it, the children get fresh pages there, not copies */
	if (srv.stack_lo && srv.main_sp - getpagesize() > srv.stack_lo &&
	    madvise((void *)srv.stack_lo, srv.main_sp - getpagesize() -
		    srv.stack_lo, MADV_DONTNEED) < 0) {
		/* they stay, and are copied */
	}
	for (;;) {
		struct request *rq = &h->rq;
		int r = request_recv(srv.sock, h);
		pid_t pid;

		if (r <= 0)
			exit(r == 0 ? 0 : 1);
		if (!rq->argv || !fds_high(rq)) {
			reply(srv.sock, "error %ld", EPROTO);
		} else {
			pid = spawn_child(rq);
			if (pid < 0)
				reply(srv.sock, "error %ld", errno);
			else
				reply(srv.sock, "pid %ld", pid);
			/* an init sharing our memory copies the request
			 * into its route's process: only then may it go */
			if (pid > 0 && rq->started)
				child_setup_wait_started(rq->started);
		}
		request_release(rq);
		hand_empty(h);
	}
}

/* Leave the main stack for the loop's; returns only in a child, which
 * resumes this frame (not inlined: the frame is small, and below it the
 * main stack is free). */
static __attribute__((noinline)) void serve_enter(void)
{
	srv.main_sp = ((uintptr_t)__builtin_frame_address(0) - 1024) &
		      ~((uintptr_t)getpagesize() - 1);
	if (swapcontext(&srv.main_ctx, &srv.loop_ctx) < 0)
		exit(1);
}

/* The lowest addresses of the main stack and the brk heap, from
 * /proc/self/maps (0 when it cannot be read: nothing is populated). */
static void find_stack_heap(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long lo, hi;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		if (strstr(line, " [stack]"))
			srv.stack_lo = lo;
		else if (strstr(line, " [heap]"))
			srv.heap_lo = lo;
	}
	if (f)
		fclose(f);
}

/* Map the inits' stacks and words (invariant 9), not inherited; without
 * them every init is a copy of the server. */
static void init_slots_prepare(void)
{
	size_t page = (size_t)getpagesize();
	size_t len = page + (size_t)INIT_SLOTS * INIT_STACK_SIZE;
	char *m;

	if (FC_SANITIZED)
		return;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		 MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (m == MAP_FAILED)
		return;
	if (madvise(m, len, MADV_DONTFORK) < 0) {
		munmap(m, len);
		return;
	}
	srv.init_words = (int *)m;
	srv.init_stacks = m + page;
}

/* Map the loop's stack (not inherited) and the hand-over area (inherited,
 * read by each child); set the contexts up.  false: it cannot serve. */
static bool serve_prepare(void)
{
	size_t page = (size_t)getpagesize();
	int prot = PROT_READ | PROT_WRITE;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	char *stack = mmap(NULL, LOOP_STACK_SIZE + page, prot,
			   flags | MAP_STACK, -1, 0);
	void *hand = mmap(NULL, sizeof(struct hand), prot, flags, -1, 0);

	if (stack == MAP_FAILED || hand == MAP_FAILED ||
	    mprotect(stack, page, PROT_NONE) < 0 || /* guard */
	    madvise(stack, LOOP_STACK_SIZE + page, MADV_DONTFORK) < 0 ||
	    getcontext(&srv.loop_ctx) < 0)
		return false;
	srv.hand = hand;
	find_stack_heap();
	init_slots_prepare();
	srv.loop_ctx.uc_stack.ss_sp = stack + page;
	srv.loop_ctx.uc_stack.ss_size = LOOP_STACK_SIZE;
	srv.loop_ctx.uc_link = NULL;
	makecontext(&srv.loop_ctx, serve_loop, 0);
	return true;
}

/* The signals whose disposition differs from the initial one now. */
static void note_changed_signals(void)
{
	srv.nchanged = 0;
	for (int s = 1; s < 32; s++) {
		struct sigaction now, *was = &srv.initial_actions[s];

		memset(&now, 0, sizeof(now));
		if (s == SIGKILL || s == SIGSTOP || sigaction(s, NULL, &now) < 0)
			continue;
		if (now.sa_handler != was->sa_handler ||
		    now.sa_flags != was->sa_flags ||
		    memcmp(&now.sa_mask, &was->sa_mask, sizeof(now.sa_mask)))
			srv.changed[srv.nchanged++] = s;
	}
}

int fork_server_serve(int *argc, char ***argv, void (*warm_up)(void))
{
	const char *v = getenv(PROTO_ENV_FORK_SERVER_FD);
	char *end;
	long fdl;

	if (!v || !*v)
		return 0;
	errno = 0;
	fdl = strtol(v, &end, 10);
	if (errno || *end || fdl < 0 || fdl > 65535 ||
	    fcntl((int)fdl, F_GETFD) < 0) {
		fprintf(stderr, "fencecert: USAGE: %s='%s' is not an open "
			"descriptor\n", PROTO_ENV_FORK_SERVER_FD, v);
		exit(64);
	}
	srv.sock = (int)fdl;
	srv.harness = getppid();
	srv.self = getpid();
	/* a contained child's init cannot ask getppid() (invariant 2) */
	srv.harness_pidfd = child_setup_fd_high((int)syscall(SYS_pidfd_open,
							     srv.harness, 0));
	child_setup_id_maps(&srv.ids);
	memset(srv.initial_actions, 0, sizeof(srv.initial_actions));
	for (int s = 1; s < 32; s++)
		sigaction(s, NULL, &srv.initial_actions[s]);
	fcntl(srv.sock, F_SETFD, FD_CLOEXEC);
	if (warm_up)
		warm_up();
	note_changed_signals();
	if (!serve_prepare())
		exit(1);
	fflush(NULL);
	if (send(srv.sock, FORK_SERVER_HELLO, strlen(FORK_SERVER_HELLO),
		 MSG_NOSIGNAL) < 0)
		exit(1);
	serve_enter();
	/* in a child, set up (child_main) */
#if !FC_SANITIZED
	on_exit(child_exit, NULL);
#endif
	server_pid = srv.self;
	child_argv = child_rq->argv;
	*argc = child_rq->argc;
	*argv = child_argv;
	return 0;
}
