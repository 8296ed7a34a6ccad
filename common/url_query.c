/* url_query.c -- see url_query.h. */
#include <string.h>

#include "common/url_query.h"

int url_query_split(const char *url, char *out, url_query_take_fn *take,
		    void *ctx)
{
	const char *q = strchr(url, '?'), *item;
	size_t used = q ? (size_t)(q - url) : strlen(url);
	char sep = '?';
	int rc = 0;

	memcpy(out, url, used);
	for (item = q ? q + 1 : ""; *item; ) {
		size_t len = strcspn(item, "&");

		if (len && (rc = take(ctx, item, len)) < 0)
			break;
		if (len && !rc) {
			out[used++] = sep;
			memcpy(out + used, item, len);
			used += len;
			sep = '&';
		}
		item += len + (item[len] ? 1 : 0);
	}
	out[used] = '\0';
	return rc < 0 ? rc : 0;
}
