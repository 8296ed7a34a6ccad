/*
 * sanitizer.h -- FC_SANITIZED: 1 in a build with AddressSanitizer or
 * ThreadSanitizer (make SANITIZE=...), 0 otherwise.
 *
 * Who includes it: code that starts processes and must behave differently
 * under those runtimes, for their reasons: they reserve terabytes of shadow
 * memory (no RLIMIT_AS, common/child_setup.c), do not expect a second
 * thread of control on a borrowed address space (no CLONE_VM,
 * harness/proc/supervise_spawn.c), and report in their exit handlers (a
 * fork server's child runs them, routes/fork_server.c).
 */
#ifndef FENCECERT_SANITIZER_H
#define FENCECERT_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FC_SANITIZED 1
#endif
#endif
#ifndef FC_SANITIZED
#define FC_SANITIZED 0
#endif

#endif
