/* nocontainer -- run a command as an unprivileged container would run it.
 *
 *   nocontainer [--drop-caps] -- CMD [ARGS...]
 *
 * Docker's default seccomp profile denies what makes namespaces: unshare,
 * setns and a clone with any CLONE_NEW* flag fail with EPERM, and clone3
 * fails with ENOSYS (its flags sit in memory a filter cannot read, so libc
 * falls back to clone, which the filter can judge).  --drop-caps also takes
 * away what a container's root lacks: every capability but Docker's
 * default set (CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID,
 * SETPCAP, NET_BIND_SERVICE, NET_RAW, SYS_CHROOT, MKNOD, AUDIT_WRITE,
 * SETFCAP) goes from the bounding, permitted, effective, inheritable and
 * ambient sets, CAP_SYS_ADMIN first among them; root can still switch
 * uid.  Then CMD is exec'd with the filter in force for it and all it
 * starts.
 *
 * The sandbox_fallback.sh integration test runs `fencecert certify` under
 * it to check the containment fallbacks (docs/security.md).
 *
 * Exit status: CMD's, or 64 for a usage error, 70 when the filter or the
 * capabilities cannot be set, 127 when CMD cannot be run.
 */
#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

static const int kept_caps[] = {
	CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL,
	CAP_SETGID, CAP_SETUID, CAP_SETPCAP, CAP_NET_BIND_SERVICE,
	CAP_NET_RAW, CAP_SYS_CHROOT, CAP_MKNOD, CAP_AUDIT_WRITE, CAP_SETFCAP,
};

static void usage(void)
{
	fprintf(stderr, "usage: nocontainer [--drop-caps] -- CMD [ARGS...]\n");
	exit(64);
}

static int kept(int cap)
{
	for (size_t i = 0; i < sizeof(kept_caps) / sizeof(*kept_caps); i++)
		if (kept_caps[i] == cap)
			return 1;
	return 0;
}

static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
	int n = CAP_LAST_CAP;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = CAP_LAST_CAP;
		fclose(f);
	}
	return n;
}

/* Keep only kept_caps, in every set a process has. */
static int drop_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	int last = last_cap();

	for (int c = 0; c <= last; c++)
		if (!kept(c) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
		    errno != EINVAL) {
			fprintf(stderr, "nocontainer: cannot drop capability %d "
				"from the bounding set: %s\n", c, strerror(errno));
			return -1;
		}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL) {
		fprintf(stderr, "nocontainer: cannot clear the ambient set: %s\n",
			strerror(errno));
		return -1;
	}
	if (syscall(SYS_capget, &h, d) < 0) {
		fprintf(stderr, "nocontainer: capget: %s\n", strerror(errno));
		return -1;
	}
	for (int c = 0; c < 64; c++) {
		unsigned bit = 1u << (c % 32);
		if (kept(c))
			continue;
		d[c / 32].effective &= ~bit;
		d[c / 32].permitted &= ~bit;
		d[c / 32].inheritable &= ~bit;
	}
	if (syscall(SYS_capset, &h, d) < 0) {
		fprintf(stderr, "nocontainer: capset: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static int deny(scmp_filter_ctx ctx, int err, int nr, unsigned nargs,
		const struct scmp_arg_cmp *arg)
{
	int rc = nargs ? seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(err), nr,
						nargs, arg)
		       : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0);
	if (rc < 0)
		fprintf(stderr, "nocontainer: cannot add a seccomp rule for "
			"syscall %d: %s\n", nr, strerror(-rc));
	return rc;
}

/* Namespaces cannot be made: Docker's default profile, as far as they go. */
static int load_filter(void)
{
	static const unsigned long ns_flags[] = {
		CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
		CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP,
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc = ctx ? 0 : -ENOMEM;

	if (!rc)
		rc = deny(ctx, EPERM, SCMP_SYS(unshare), 0, NULL);
	if (!rc)
		rc = deny(ctx, EPERM, SCMP_SYS(setns), 0, NULL);
	if (!rc)
		rc = deny(ctx, ENOSYS, SCMP_SYS(clone3), 0, NULL);
	for (size_t i = 0; !rc && i < sizeof(ns_flags) / sizeof(*ns_flags); i++) {
		struct scmp_arg_cmp a = SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i],
						ns_flags[i]);
		rc = deny(ctx, EPERM, SCMP_SYS(clone), 1, &a);
	}
	/* root (CAP_SYS_ADMIN) may load a filter without no_new_privs, as a
	 * container runtime does; anyone else needs it */
	if (!rc && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) == 0 &&
	    seccomp_load(ctx) == 0) {
		seccomp_release(ctx);
		return 0;
	}
	if (!rc) {
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1);
		if (!rc)
			rc = seccomp_load(ctx);
		if (rc)
			fprintf(stderr, "nocontainer: cannot load the seccomp "
				"filter: %s\n", strerror(-rc));
	}
	seccomp_release(ctx);
	return rc;
}

int main(int argc, char **argv)
{
	int i = 1, caps = 0;

	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--drop-caps") == 0)
			caps = 1;
		else
			usage();
	}
	if (i + 1 >= argc)
		usage();
	if (load_filter())
		return 70;
	if (caps && drop_caps())
		return 70;
	execvp(argv[i + 1], argv + i + 1);
	fprintf(stderr, "nocontainer: cannot run '%s': %s\n", argv[i + 1],
		strerror(errno));
	return 127;
}
