/*
 * dl_curl.c -- the libcurl functions fencecert calls, forwarded to
 * libcurl.so.4 opened on first use (see dl.h for why).
 *
 * CURL_FUNCS names each function once, in DL_SHIM's form (dl.h).  The two
 * variadic ones are forwarded by hand the way libcurl reads them: an
 * option's number says the type of its argument (CURLOPTTYPE_* ranges), and
 * curl_easy_getinfo() always takes a pointer.
 */
#define CURL_DISABLE_TYPECHECK 1
#include <stdarg.h>
#include <curl/curl.h>

#include "common/dl.h"
#include "common/dl_curl.h"

#define CURL_FUNCS(F, V, H) \
	V(curl_easy_cleanup, (CURL *curl), (curl)) \
	F(char *, curl_easy_escape, (CURL *h, const char *s, int len), \
	  (h, s, len), NULL) \
	H(curl_easy_getinfo) \
	F(CURL *, curl_easy_init, (void), (), NULL) \
	F(CURLcode, curl_easy_perform, (CURL *curl), (curl), \
	  CURLE_FAILED_INIT) \
	H(curl_easy_setopt) \
	F(const char *, curl_easy_strerror, (CURLcode code), (code), \
	  "libcurl is not loaded") \
	F(char *, curl_easy_unescape, (CURL *h, const char *s, int len, \
	  int *outlen), (h, s, len, outlen), NULL) \
	V(curl_free, (void *p), (p)) \
	V(curl_global_cleanup, (void), ()) \
	F(CURLcode, curl_global_init, (long flags), (flags), \
	  CURLE_FAILED_INIT) \
	F(struct curl_slist *, curl_slist_append, (struct curl_slist *l, \
	  const char *s), (l, s), NULL) \
	V(curl_slist_free_all, (struct curl_slist *l), (l))

DL_SHIM(CURL_FUNCS, "libcurl", "libcurl.so.4", "FENCECERT_LIBCURL")

int dl_curl_load(char *err, size_t errlen)
{
	return dl_lib_load(&dl_self, FC_JOURNAL_UNAVAILABLE, err, errlen);
}

typedef void (*curl_fn)(void);

CURLcode (curl_easy_setopt)(CURL *curl, CURLoption option, ...)
{
	CURLcode rc;
	va_list ap;

	if (!dl_lib_ready(&dl_self))
		return CURLE_FAILED_INIT;
	va_start(ap, option);
	if (option < CURLOPTTYPE_OBJECTPOINT)
		rc = DL_FN(curl_easy_setopt)(curl, option, va_arg(ap, long));
	else if (option < CURLOPTTYPE_FUNCTIONPOINT)
		rc = DL_FN(curl_easy_setopt)(curl, option, va_arg(ap, void *));
	else if (option < CURLOPTTYPE_OFF_T)
		rc = DL_FN(curl_easy_setopt)(curl, option,
					     va_arg(ap, curl_fn));
	else if (option < CURLOPTTYPE_BLOB)
		rc = DL_FN(curl_easy_setopt)(curl, option,
					     va_arg(ap, curl_off_t));
	else
		rc = DL_FN(curl_easy_setopt)(curl, option, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

CURLcode (curl_easy_getinfo)(CURL *curl, CURLINFO info, ...)
{
	va_list ap;
	void *out; /* every CURLINFO_* type is answered through a pointer */

	va_start(ap, info);
	out = va_arg(ap, void *);
	va_end(ap);
	if (!dl_lib_ready(&dl_self))
		return CURLE_FAILED_INIT;
	return DL_FN(curl_easy_getinfo)(curl, info, out);
}
