/*
 * fuzz_etcd.c -- libFuzzer target for etcd's answers as the client reads
 * them (common/etcd_client.h: etcd_range_decode(), etcd_txn_result_decode(),
 * the decoding etcd_client_range() and etcd_client_txn() apply to a
 * member's answer).  The journal, the etcd fence and the observer all read
 * through it, and an answer is whatever the network peer wrote.  Built and
 * run by tests/integration/fuzz_smoke.sh.
 *
 * Checks, trapping when one breaks:
 *   - a decoded key and value are NUL-terminated at their length, and a
 *     value_len fits what base64 of the answer's size can hold;
 *   - a txn answer has one range per response;
 *   - a refusal leaves nothing allocated in the result.
 */
#include <stdint.h>
#include <string.h>

#include "common/etcd_client.h"

static void check_range(const struct etcd_range *r, size_t size)
{
	if (r->n && !r->kvs)
		__builtin_trap();
	for (size_t i = 0; i < r->n; i++) {
		const struct etcd_kv *kv = &r->kvs[i];

		if (!kv->key || !kv->value || kv->value_len > size ||
		    kv->value[kv->value_len] != '\0')
			__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct etcd_range r;
	struct etcd_txn_result t;

	if (etcd_range_decode((const char *)data, size, &r) == 0) {
		check_range(&r, size);
		etcd_range_release(&r);
	} else if (r.kvs || r.n) {
		__builtin_trap();
	}
	if (etcd_txn_result_decode((const char *)data, size, &t) == 0) {
		if (t.n && !t.ranges)
			__builtin_trap();
		for (size_t i = 0; i < t.n; i++)
			check_range(&t.ranges[i], size);
		etcd_txn_result_release(&t);
	} else if (t.ranges || t.n) {
		__builtin_trap();
	}
	return 0;
}
