/*
 * inject_seccomp_filter.c -- a plan compiled into the classic BPF program
 * the route's child loads (common/child_setup.c, step 7), with libseccomp.
 *
 * Invariants:
 *  1. The program allows every call but the plan's, which it turns into
 *     notifications (SCMP_ACT_NOTIFY): the child loads it with a new
 *     listener and hands that to the supervisor.
 *  2. Only the native architecture is filtered; calls from other ABIs (i386,
 *     x32) are allowed untouched rather than killed by the bad-arch default.
 *  3. Compiled in the supervisor before the child starts, never in the
 *     child: the child only loads it, allocating nothing (an exec'd child
 *     shares the supervisor's memory, a fork server's clone its server's).
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/inject/inject_seccomp_impl.h"

static bool intercepts_any(const struct inject_seccomp_plan *p)
{
	for (int i = 0; i < inject_seccomp__nsyscalls; i++)
		if (p->intercept[i])
			return true;
	return false;
}

static int build_filter(const struct inject_seccomp_plan *p,
			scmp_filter_ctx *out)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

	if (!ctx)
		return FC_NOMEM;
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW) < 0)
		goto fail;
	for (int i = 0; i < inject_seccomp__nsyscalls; i++) {
		int nr;

		if (!p->intercept[i])
			continue;
		nr = seccomp_syscall_resolve_name(inject_seccomp__syscalls[i].name);
		if (nr < 0 || seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 0) < 0)
			goto fail;
	}
	*out = ctx;
	return 0;
fail:
	seccomp_release(ctx);
	return FC_IO;
}

int inject_seccomp_plan_bpf(const struct inject_seccomp_plan *p, void **prog,
			    size_t *len)
{
	scmp_filter_ctx ctx;
	struct stat st;
	char *buf = NULL;
	int rc, fd;

	*prog = NULL;
	*len = 0;
	if (!intercepts_any(p))
		return FC_USAGE;
	rc = build_filter(p, &ctx);
	if (rc)
		return rc;
	/* libseccomp 2.5 exports to an fd only */
	fd = memfd_create("fencecert-bpf", MFD_CLOEXEC);
	rc = fd < 0 || seccomp_export_bpf(ctx, fd) < 0 || fstat(fd, &st) < 0 ?
		FC_IO : 0;
	seccomp_release(ctx);
	if (!rc && !(buf = malloc((size_t)st.st_size + 1)))
		rc = FC_NOMEM;
	if (!rc && pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		rc = FC_IO;
	if (fd >= 0)
		close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	*prog = buf;
	*len = (size_t)st.st_size;
	return 0;
}
