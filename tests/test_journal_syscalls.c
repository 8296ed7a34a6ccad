/*
 * test_journal_syscalls.c -- self-certification of the SQLite journal
 * adapter under syscall faults (docs/syscall-faults.md); the driver, the
 * exploration and the checks are tests/journal_syscalls.c's.
 *
 * Scope: the journal's files (journal.db, -journal, -wal; not the -shm
 * index, which SQLite rebuilds and never relies on after a crash).  Every
 * occurrence of fsync / fdatasync / write / pwrite64 on them, each with
 * kill_before, kill_after and errno:EIO.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "tests/journal_syscalls.h"

static const char *const file_actions[] = { "kill_before", "kill_after",
					    "errno:EIO", NULL };

static const struct jsys_syscall syscalls[] = {
	{ "fsync", file_actions, 1 },
	{ "fdatasync", file_actions, 1 },
	{ "write", file_actions, 1 },
	{ "pwrite64", file_actions, 1 },
};

static void fresh(struct jsys_run *r)
{
	snprintf(r->url, sizeof(r->url), "sqlite:%s/journal.db", r->dir);
}

static void scope(const struct jsys_run *r, struct inject_seccomp_plan *p)
{
	char glob[700];

	snprintf(glob, sizeof(glob), "%s/journal.db*", r->dir);
	assert_int_equal(inject_seccomp_plan_watch(p, glob), 0);
	assert_int_equal(inject_seccomp_plan_ignore(p, "*-shm"), 0);
}

static void test_every_sync_and_write(void **state)
{
	static const struct jsys_backend sqlite = {
		.name = "sqlite", .syscalls = syscalls,
		.nsyscalls = sizeof(syscalls) / sizeof(syscalls[0]),
		.fresh = fresh, .scope = scope,
	};
	unsigned long counts[16];

	(void)state;
	jsys_explore(&sqlite, counts);
	assert_true(counts[0] + counts[1] > 0); /* the journal syncs */
	assert_true(counts[2] + counts[3] > 0); /* and writes */
}

int main(int argc, char **argv)
{
	return jsys_main(argc, argv, "test_every_sync_and_write",
			 test_every_sync_and_write, NULL);
}
