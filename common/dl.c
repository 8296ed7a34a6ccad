/*
 * dl.c -- load a shared library on first use (see dl.h).
 *
 * The fast path is one atomic load: the shims call dl_lib_ready() on every
 * forwarded call.  Slots are written before `loaded` is released, so a
 * thread that sees loaded == 1 sees every slot.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/dl.h"

static int resolve(struct dl_lib *l, void *handle, char *err, size_t errlen)
{
	for (size_t i = 0; i < l->n; i++) {
		l->slots[i] = dlsym(handle, l->symbols[i]);
		if (!l->slots[i]) {
			snprintf(err, errlen, "%s lacks %s", l->name,
				 l->symbols[i]);
			return -1;
		}
	}
	return 0;
}

static int load_locked(struct dl_lib *l, char *err, size_t errlen)
{
	const char *file = l->env ? getenv(l->env) : NULL;
	void *handle;

	if (!file || !*file)
		file = l->soname;
	/* RTLD_LOCAL: its symbols stay out of the way of our own (we carry
	 * a static libcrypto; libpq and libcurl bring their own). */
	handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		snprintf(err, errlen, "cannot load %s (%s): %s", l->name, file,
			 dlerror());
		return -1;
	}
	if (resolve(l, handle, err, errlen)) {
		dlclose(handle);
		return -1;
	}
	__atomic_store_n(&l->loaded, 1, __ATOMIC_RELEASE);
	return 0;
}

int dl_lib_load(struct dl_lib *l, int code, char *err, size_t errlen)
{
	int rc = 0;

	if (__atomic_load_n(&l->loaded, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&l->lock);
	if (!__atomic_load_n(&l->loaded, __ATOMIC_ACQUIRE))
		rc = load_locked(l, err, errlen) ? code : 0;
	pthread_mutex_unlock(&l->lock);
	return rc;
}

int dl_lib_ready(struct dl_lib *l)
{
	char err[256];

	if (__atomic_load_n(&l->loaded, __ATOMIC_ACQUIRE))
		return 1;
	return dl_lib_load(l, -1, err, sizeof(err)) == 0;
}
