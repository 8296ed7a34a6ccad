/*
 * dl_curl.h -- libcurl, opened on first use (see dl.h).
 *
 * Callers include <curl/curl.h> and call curl_* as usual; dl_curl.c
 * defines the functions fencecert uses and forwards them to libcurl.so.4
 * (or the file named by FENCECERT_LIBCURL).  Call dl_curl_load() before
 * the first curl_* call of a code path, so that a missing libcurl is
 * reported as such.
 */
#ifndef FENCECERT_DL_CURL_H
#define FENCECERT_DL_CURL_H

#include <stddef.h>

#include "common/error.h"

/* 0, or FC_JOURNAL_UNAVAILABLE with "cannot load libcurl (...): ..." in err. */
int dl_curl_load(char *err, size_t errlen) FC_MUST_CHECK;

#endif
