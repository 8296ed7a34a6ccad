/*
 * etcd_prefix.c -- see etcd_prefix.h.
 */
#include <stdio.h>

#include "journal/etcd_client.h"
#include "etcd_prefix.h"

void etcd_test_delete_prefix(const char *members, const char *prefix)
{
	char err[256], start[300], end[300];
	struct etcd_txn_result res;
	etcd_client *c;
	struct etcd_txn t;

	snprintf(start, sizeof(start), "%s/", prefix);
	if (etcd_client_new(members, &c, err, sizeof(err)))
		return;
	if (!etcd_prefix_end(start, end, sizeof(end)) && !etcd_txn_init(&t)) {
		if (!etcd_txn_delete(&t, ETCD_SUCCESS, start, end) &&
		    !etcd_client_txn(c, &t, &res))
			etcd_txn_result_release(&res);
		etcd_txn_release(&t);
	}
	etcd_client_free(c);
}
