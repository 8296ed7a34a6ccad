#!/bin/sh
# check_layers.sh -- ci/check-layers passes on this tree and fails, naming
# the file and the rule, on each kind of violation planted in a copy of it:
# a harness part including routes/, a layer pointing up (reports including
# the suite model, common including journal), a `../` include, an internal
# `x__` function used outside its folder.
set -eu
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fc-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

ci/check-layers || { echo "FAIL: the tree itself breaks the rule"; exit 1; }

copy() {
	rm -rf "$tmp/t"
	mkdir -p "$tmp/t/ci"
	for d in common journal fences routes recover harness reports cli tests bench; do
		[ -d "$d" ] && cp -r "$d" "$tmp/t/"
	done
	cp ci/check-layers "$tmp/t/ci/"
}

# plant FILE LINE EXPECT: append LINE to FILE in a fresh copy; check-layers
# must exit 1 and print EXPECT
plant() {
	copy
	printf '%s\n' "$2" >>"$tmp/t/$1"
	rc=0
	"$tmp/t/ci/check-layers" >"$tmp/out" 2>&1 || rc=$?
	if [ "$rc" -ne 1 ] || ! grep -qF "$3" "$tmp/out"; then
		echo "FAIL: planted '$2' in $1: exit $rc, expected 1 and '$3'"
		cat "$tmp/out"
		exit 1
	fi
	echo "caught: $(grep -F "$3" "$tmp/out" | head -n 1)"
}

plant harness/proc/supervise.c '#include "routes/runtime.h"' \
	'harness/proc may not include "routes/runtime.h"'
plant harness/run/collect.c '#include "recover/recover.h"' \
	'harness/run may not include "recover/recover.h"'
plant reports/gate.c '#include "harness/model/scenario.h"' \
	'reports may not include "harness/model/scenario.h"'
plant common/fsutil.c '#include "journal/journal.h"' \
	'common may not include "journal/journal.h"'
plant harness/model/record.c '#include "harness/run/orchestrator.h"' \
	'harness/model may not include "harness/run/orchestrator.h"'
plant fences/fence.c '#include "../journal/journal.h"' \
	'include "../journal/journal.h" is not a path from the root'
plant tests/test_states.c '#include "states.h"' \
	'include "states.h" is not a path from the root'
plant fences/fence.c 'static int x(void) { return journal__fail(0, 0, 0); }' \
	'fences/fence.c: uses journal__fail, internal to journal/'
echo "check_layers: the tree passes, 8 planted violations caught"
