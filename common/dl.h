/*
 * dl.h -- a shared library loaded on first use.
 *
 * fencecert links its everyday libraries (sqlite3, jansson, yaml, seccomp,
 * libcrypto) statically, so every `fencecert route` exec a certification
 * starts costs the dynamic loader almost nothing.  libpq and libcurl pull in
 * some thirty more shared objects (gnutls, krb5, ldap, ...); they are opened
 * with dlopen() only by a process that talks to PostgreSQL or etcd.  Each is
 * wrapped by one shim file (dl_pq.c, dl_curl.c) that defines the library's
 * functions fencecert calls, under their own names, forwarding to the loaded
 * copy; callers keep including <libpq-fe.h> / <curl/curl.h>.
 *
 * A shim describes its library with a struct dl_lib whose symbol and slot
 * tables it owns.  Loading is thread-safe; a success is kept for the life of
 * the process, a failure is not (the next call tries again and says why).
 */
#ifndef FENCECERT_DL_H
#define FENCECERT_DL_H

#include <pthread.h>
#include <stddef.h>

#include "common/error.h"

struct dl_lib {
	const char *name;            /* "libpq": what messages call it */
	const char *soname;          /* "libpq.so.5": what dlopen() is given */
	const char *env;             /* "FENCECERT_LIBPQ": another file to use */
	const char *const *symbols;  /* the functions to resolve ... */
	void **slots;                /* ... and where their addresses go */
	size_t n;
	pthread_mutex_t lock;
	int loaded;                  /* read with __atomic_load_n */
};

#define DL_LIB_INIT(name_, soname_, env_, symbols_, slots_, n_) \
	{ name_, soname_, env_, symbols_, slots_, n_, \
	  PTHREAD_MUTEX_INITIALIZER, 0 }

/*
 * Load the library (the file named by $env if set, else soname) and resolve
 * every symbol.  Returns 0, or `code` with a message naming the library and
 * the loader's reason in err ("cannot load libpq (libpq.so.5): ...").
 */
int dl_lib_load(struct dl_lib *l, int code, char *err, size_t errlen)
	FC_MUST_CHECK;

/* 1 when the library is usable (loading it now if need be), else 0. */
int dl_lib_ready(struct dl_lib *l);

/*
 * DL_SHIM(LIST, name, soname, env) writes a shim: the symbol table, the
 * static struct dl_lib dl_self, and a forwarder for each function of LIST.
 * LIST(F, V, H) names each function once: F(return type, name, parameters,
 * arguments, result when the library cannot be loaded), V(name, parameters,
 * arguments) for a void function, H(name) for one whose forwarder the shim
 * writes itself (variadic ones), calling it through DL_FN(name).  The
 * forwarders are checked by the compiler against the library header's
 * declarations of the same names.
 */
#define DL_FN(name) ((__typeof__(&name))dl_slots[DL_SLOT_##name])

#define DL__SLOT_F(ret, name, params, args, fail) DL_SLOT_##name,
#define DL__SLOT_V(name, params, args) DL_SLOT_##name,
#define DL__SLOT_H(name) DL_SLOT_##name,
#define DL__NAME_F(ret, name, params, args, fail) #name,
#define DL__NAME_V(name, params, args) #name,
#define DL__NAME_H(name) #name,
#define DL__FORWARD_F(ret, name, params, args, fail) \
	ret (name) params \
	{ \
		if (!dl_lib_ready(&dl_self)) \
			return fail; \
		return DL_FN(name) args; \
	}
#define DL__FORWARD_V(name, params, args) \
	void (name) params \
	{ \
		if (dl_lib_ready(&dl_self)) \
			DL_FN(name) args; \
	}
#define DL__FORWARD_H(name)

#define DL_SHIM(LIST, name, soname, env) \
	enum { LIST(DL__SLOT_F, DL__SLOT_V, DL__SLOT_H) DL__NSLOTS }; \
	static const char *const dl_symbols[] = { \
		LIST(DL__NAME_F, DL__NAME_V, DL__NAME_H) \
	}; \
	static void *dl_slots[DL__NSLOTS]; \
	static struct dl_lib dl_self = DL_LIB_INIT(name, soname, env, \
		dl_symbols, dl_slots, DL__NSLOTS); \
	LIST(DL__FORWARD_F, DL__FORWARD_V, DL__FORWARD_H)

#endif
