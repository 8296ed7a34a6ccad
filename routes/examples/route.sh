#!/bin/sh
# route.sh -- a complete, certifiable fencecert route in POSIX shell.
#
# It loads the CSV source partition named by $FENCECERT_WORKLOAD into a
# SQLite target ($FENCECERT_TARGET = sqlite:PATH) following the protocol of
# docs/routes.md, the same one the C route (fencecert route) follows:
#
#   ids -> journal entry -> lease (epoch E) -> fence prepare(E) -> PREPARED
#   -> COMMITTING -> rows + fence row in ONE transaction -> probe
#   -> TARGET_COMMITTED -> return.json -> COMPLETE
#
# and on a retry it reads the journal before touching anything, stops on an
# intent mismatch, and probes the fence before any other target call.
#
# Tools: the fencecert binary ($FENCECERT_BIN, default `fencecert`) for the
# journal and the ids, the sqlite3 CLI for the target and for reading JSON
# (json_extract), sha256sum for the source hash, dd for the one reply byte of
# the failpoint channel, sync and mv for the evidence files.  Exit status: 0
# complete, 75 retry later, 100 stop (an operator must look), 64
# configuration.
#
# The harness starts this script once per attempt, thousands of times per
# suite, so it starts few processes: one sqlite3 call reads every JSON field
# a step needs (jvars), JSON is built by the shell (its values are integers,
# sha256 ids and checked names), files are read with `read`, not cat.
#
# Limit of this example: the target must be sqlite:PATH.
# shellcheck disable=SC2154 # the variables jvars sets through eval
set -u

FC=${FENCECERT_BIN:-fencecert}
TRY=${FENCECERT_TRY_NUMBER:-1}
OWNER=${FENCECERT_LEASE_OWNER:-route}
TTL=${FENCECERT_LEASE_TTL_MS:-30000}
# Scratch space inside the attempt's run dir, so a killed attempt leaves
# nothing behind once the harness wipes it.  mkdir fails if the name exists
# (a killed attempt with our pid): then mktemp picks a fresh one.
run=${FENCECERT_RUN_DIR:-${TMPDIR:-/tmp}}
{ [ -d "$run" ] || mkdir -p "$run"; } || exit 75
scratch=$run/route.$$
mkdir "$scratch" 2>/dev/null || scratch=$(mktemp -d "$run/route.XXXXXX") || exit 75
trap 'rm -rf "$scratch"' EXIT

# ---- the failpoint channel: "HIT name", then one byte: c = go on ----------
# One dd per failpoint, on purpose: `read` waits for a newline the harness
# never sends, and a long-lived converter (dd cbs=1 conv=unblock) writes each
# byte's newline only when the next byte comes.
fp() {
	[ -n "${FENCECERT_FAILPOINT_FD:-}" ] || return 0
	printf 'HIT %s\n' "$1" >&"$FENCECERT_FAILPOINT_FD" || return 1
	[ "$(dd bs=1 count=1 2>/dev/null <&"$FENCECERT_FAILPOINT_FD")" = c ]
}

# ---- small helpers ---------------------------------------------------------
state=NONE
finish() { # finish STATUS MESSAGE: the one report line, then exit
	printf 'route.sh: try %s: %s, exit %s: %s\n' "$TRY" "$state" "$1" "$2" >&2
	exit "$1"
}

NL='
'
slurp() { # slurp FILE: its text in $text, as "$(cat FILE)" gives it
	text='' line=''
	while IFS= read -r line; do text=$text$line$NL; done <"$1"
	text=$text$line
	while :; do
		case $text in *"$NL") text=${text%"$NL"} ;; *) break ;; esac
	done
}

err() { slurp "$scratch/err"; } # the last tool's error text, in $text

dir_of() { # dir_of PATH: what dirname PATH prints, in $dir
	case $1 in
	*/*) dir=${1%/*}; dir=${dir:-/} ;;
	*) dir=. ;;
	esac
}

# sqlq EXPR: in $sqlq, an SQL expression giving EXPR's value (NULL: empty)
# quoted for sh: 'text' with each ' written '"'"'.
sqlq() {
	sqlq="'''' || replace(ifnull($1, ''), '''', '''\"''\"''') || ''''"
}

# jvars FILE VAR EXPR [VAR EXPR]...: sets each VAR with ONE sqlite3 call.
# EXPR is a JSON path ($.a.b) into the file, or an SQL expression over j,
# the file's text.  A VAR is empty when its value is null or missing, when
# the file cannot be read, or when it is not JSON (sqlite3 says so on
# stderr).
jvars() {
	jv_sql="SELECT ''" jv_file=$1
	shift
	while [ $# -ge 2 ]; do
		case $2 in
		'$'*) sqlq "json_extract(j, '$2')" ;;
		*) sqlq "$2" ;;
		esac
		eval "$1="
		jv_sql="$jv_sql || '$1=' || $sqlq || char(10)"
		shift 2
	done
	eval "$(sqlite3 :memory: "WITH f(j) AS (SELECT readfile('$jv_file')) $jv_sql FROM f")"
}

# jobj KEY=VALUE...: in $json the object json_object() writes for them:
# integers and true/false bare, any other value a string with \ and "
# escaped.  (The strings here are ids, state names, checked table names and
# fixed words: never a control character.)
jobj() {
	json=
	for kv; do
		v=${kv#*=}
		case $v in
		true|false) ;;
		''|*[!0-9]*|0?*)
			for c in '\' '"'; do
				s=
				while :; do
					case $v in
					*"$c"*) s=$s${v%%"$c"*}\\$c v=${v#*"$c"} ;;
					*) break ;;
					esac
				done
				v=$s$v
			done
			v=\"$v\" ;;
		esac
		json=$json,\"${kv%%=*}\":$v
	done
	json="{${json#,}}"
}

journal() { # journal SUBCOMMAND ARGS: result in $scratch/out.json, status $?
	"$FC" journal "$@" --journal "$FENCECERT_JOURNAL" \
		>"$scratch/out.json" 2>"$scratch/err"
}

read_entry() { # the entry the journal returned: state, version, e_* fields
	jvars "$scratch/out.json" state '$.state' version '$.version' \
		e_intent '$.intent_digest' e_epoch '$.lease_epoch' \
		e_rows '$.evidence.rows' e_result_epoch '$.evidence.epoch' \
		e_created '$.created'
}

journal_failed() { # journal_failed STATUS DOING: exit as the protocol says
	err
	case $1 in
	5) finish 100 "INTENT_CONFLICT while $2" ;;
	4|64) finish 100 "journal refused $2: $text" ;;
	*) finish 75 "journal unavailable or moved while $2: $text" ;;
	esac
}

move() { # move STATE BEFORE AFTER EVIDENCE: one CAS under our lease
	fp "$2" || { why="journal unavailable while moving to $1 (failpoint $2)"; return 1; }
	journal cas --op "$op" --expect-version "$version" --from "$state" \
		--to "$1" --epoch "$epoch" --evidence "$4"
	rc=$?
	[ $rc -eq 0 ] || { err; why="cannot move to $1: $text"; return 1; }
	read_entry
	fp "$3" || { why="journal reply lost after moving to $1 (failpoint $3)"; return 1; }
}

# ---- the workload -----------------------------------------------------------
[ -n "${FENCECERT_JOURNAL:-}" ] && [ -n "${FENCECERT_WORKLOAD:-}" ] &&
	[ -n "${FENCECERT_TARGET:-}" ] || finish 64 "FENCECERT_JOURNAL, FENCECERT_TARGET and FENCECERT_WORKLOAD are required"
case $FENCECERT_TARGET in
sqlite:?*) db=${FENCECERT_TARGET#sqlite:} ;;
*) finish 64 "this example supports sqlite:PATH targets only" ;;
esac
# TRY goes into the evidence JSON as a number: digits, no leading zero.
try_ok=false
case $TRY in ''|*[!0-9]*) ;; *[1-9]*) try_ok=true ;; esac
$try_ok || finish 64 "FENCECERT_TRY_NUMBER '$TRY' is not a positive number"
while :; do case $TRY in 0*) TRY=${TRY#0} ;; *) break ;; esac; done
W=$FENCECERT_WORKLOAD
[ -r "$W" ] || finish 64 "cannot read workload '$W'"
# Every field the route needs, and in $args the `fencecert id` arguments:
# --field NAME=VALUE per identity field, --intent-field per intent field.
sqlq "key || '=' || value"
jvars "$W" w_identity '$.identity' w_intent '$.intent' w_source '$.source' \
	w_table '$.table' strategy '$.intent.strategy' args "'set --' ||
	ifnull((SELECT group_concat(' --field ' || $sqlq, '') FROM
		(SELECT * FROM json_each(j, '\$.identity') ORDER BY id)), '') ||
	ifnull((SELECT group_concat(' --intent-field ' || $sqlq, '') FROM
		(SELECT * FROM json_each(j, '\$.intent') ORDER BY id)), '')"
for key in identity intent source table; do
	eval "[ -n \"\$w_$key\" ]" || finish 64 "workload '$W' lacks \"$key\""
done
src=$w_source table=$w_table
case $src in /*) ;; *) dir_of "$W"; src=$dir/$src ;; esac
[ -r "$src" ] || finish 64 "cannot read source '$src'"
case $table in ''|[0-9]*|*[!A-Za-z0-9_]*) finish 64 "bad table name '$table'" ;; esac
case $strategy in append|replace) ;; *) finish 64 "unknown strategy '$strategy'" ;; esac
CR=$(printf '\r')
header=
IFS= read -r header <"$src"
while :; do # without any CR, as `tr -d '\r'` would leave it
	case $header in *"$CR"*) header=${header%%"$CR"*}${header#*"$CR"} ;; *) break ;; esac
done
[ "$header" = row_key,payload ] ||
	finish 64 "source '$src': line 1: bad header; expected 'row_key,payload'"

# operation_id over every identity field; intent_digest over every intent
# field plus source=<sha256 of the CSV bytes>.
sha=
read -r sha _ <<EOF
$(sha256sum <"$src")
EOF
eval "$args"
set -- "$@" --intent-field "source=sha256:$sha"
"$FC" id "$@" >"$scratch/ids.json" 2>"$scratch/err" || { err; finish 64 "$text"; }
jvars "$scratch/ids.json" op '$.operation_id' intent '$.intent_digest'
epoch=0 mutated=false applied=false

# ---- the target: the same tables as fences/fence_sqlite.c ------------------
SCHEMA="CREATE TABLE IF NOT EXISTS fencecert_fence(operation_id TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL, intent_digest TEXT NOT NULL, rows INTEGER NOT NULL,
  applied_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS fencecert_epoch(operation_id TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL);"

target() { # target SQL...: one sqlite3 session, stops at the first error
	sqlite3 -bail -batch "$db" ".timeout 3000" ".output /dev/null" \
		"PRAGMA journal_mode=WAL" "PRAGMA synchronous=FULL" ".output" "$@" \
		>"$scratch/target.out" 2>"$scratch/err"
}

prepare_fence() { # epoch E becomes the lowest epoch allowed to apply
	fp before_fence_prepare || { why="fence prepare failed (failpoint)"; return 1; }
	target "BEGIN IMMEDIATE" "$SCHEMA" \
		"INSERT INTO fencecert_epoch VALUES('$op', $epoch) ON CONFLICT(operation_id)
		 DO UPDATE SET epoch = excluded.epoch WHERE excluded.epoch > fencecert_epoch.epoch" \
		"COMMIT" "SELECT epoch FROM fencecert_epoch WHERE operation_id = '$op'" ||
		{ err; why="cannot prepare the fence: $text"; return 1; }
	slurp "$scratch/target.out"
	[ "$text" = "$epoch" ] ||
		{ why="fence prepared by a newer epoch"; stale=true; return 1; }
	fp after_fence_prepare || { why="fence prepare reply lost (failpoint)"; return 1; }
}

probe() { # probe BEFORE AFTER: sets answer to APPLIED, ABSENT or UNKNOWN
	answer=UNKNOWN
	fp "$1" || { why="probe failed (failpoint $1)"; return 0; }
	dir_of "$db"
	if [ ! -e "$db" ] && [ -d "$dir" ]; then
		answer=ABSENT
	else
		# One session, two reads: does the fence table exist (if not, the
		# second SELECT fails and -bail stops), then our fence row as
		# "row|epoch|rows|intent" (the intent last: it takes any '|').
		sqlite3 -bail -readonly "$db" ".timeout 3000" \
			"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND
			 name = 'fencecert_fence'" \
			"SELECT 'row', epoch, rows, intent_digest FROM fencecert_fence
			 WHERE operation_id = '$op'" >"$scratch/probe" 2>/dev/null
		p_rc=$? tables='' tag=''
		{ IFS= read -r tables && IFS='|' read -r tag p_epoch p_rows p_intent; } \
			<"$scratch/probe"
		if [ "$tables" = 0 ]; then
			answer=ABSENT
		elif [ -n "$tables" ] && [ $p_rc -eq 0 ]; then
			answer=ABSENT
			[ "$tag" = row ] && answer=APPLIED
		fi
	fi
	[ "$answer" = UNKNOWN ] && why="probe failed"
	fp "$2" || { answer=UNKNOWN; why="probe reply lost (failpoint $2)"; }
	return 0
}

apply() { # rows and fence row in one transaction; refused if fenced out
	delete="SELECT 0" # append: nothing to delete
	[ "$strategy" = replace ] &&
		delete="DELETE FROM \"$table\" WHERE row_key IN (SELECT row_key FROM temp.src)"
	target "CREATE TEMP TABLE src(row_key TEXT, payload TEXT)" \
		".import --csv --skip 1 --schema temp '$src' src" \
		"BEGIN IMMEDIATE" "$SCHEMA" \
		"CREATE TABLE IF NOT EXISTS \"$table\"(row_key TEXT, payload TEXT, operation_id TEXT)" \
		"CREATE TEMP TABLE stale(n INTEGER CHECK (n = 0))" \
		"INSERT INTO temp.stale SELECT count(*) FROM fencecert_epoch
		 WHERE operation_id = '$op' AND epoch > $epoch" \
		"INSERT INTO fencecert_fence VALUES('$op', $epoch, '$intent',
		 (SELECT count(*) FROM temp.src), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))" \
		"$delete" \
		"INSERT INTO \"$table\"(row_key, payload, operation_id)
		 SELECT row_key, payload, '$op' FROM temp.src" \
		"INSERT INTO fencecert_epoch VALUES('$op', $epoch) ON CONFLICT(operation_id)
		 DO UPDATE SET epoch = excluded.epoch WHERE excluded.epoch > fencecert_epoch.epoch" \
		"COMMIT"
}

# ---- evidence ----------------------------------------------------------------
write_json() { # write_json DIR NAME JSON: temp file, sync, rename
	[ -n "$1" ] || return 0
	{ [ -d "$1" ] || mkdir -p "$1"; } && printf '%s\n' "$3" >"$1/.$2.tmp" && sync "$1/.$2.tmp" &&
		mv "$1/.$2.tmp" "$1/$2" && sync "$1"
}

write_evidence() { # write_evidence CHECKPOINT_STATE
	fp before_evidence || return 1
	jobj operation_id="$op" intent_digest="$intent" state="$1" rows="$r_rows" \
		epoch="$r_epoch" try_number="$TRY"
	write_json "${FENCECERT_RUN_DIR:-}" checkpoint.json "$json" || return 1
	jobj operation_id="$op" intent_digest="$intent" state=COMPLETE \
		rows_written="$r_rows" try_number="$TRY" epoch="$r_epoch" mutated="$mutated"
	write_json "${FENCECERT_XCOM_DIR:-}" return.json "$json" || return 1
	fp after_evidence
}

finish_evidence() { # TARGET_COMMITTED / COMMITTED_INCOMPLETE -> COMPLETE
	if ! write_evidence TARGET_COMMITTED; then
		rm -f "${FENCECERT_XCOM_DIR:-/nonexistent}/return.json"
		jobj epoch="$r_epoch" rows="$r_rows" fence=sqlite "reason=evidence not written"
		[ "$state" = TARGET_COMMITTED ] &&
			move COMMITTED_INCOMPLETE before_committed_incomplete \
				after_committed_incomplete "$json"
		finish 75 "evidence not written"
	fi
	jobj rows="$r_rows" try="$TRY" epoch="$r_epoch"
	move COMPLETE before_complete after_complete "$json" || finish 75 "$why"
	finish 0 "rows $r_rows, epoch $r_epoch, mutated $mutated"
}

recorded_result() { # rows and epoch of the committed result, from the journal
	r_rows=$e_rows r_epoch=$e_result_epoch
	if [ -z "$r_rows" ] || [ -z "$r_epoch" ]; then
		journal history --op "$op" || journal_failed $? "reading the history"
		jvars "$scratch/out.json" \
			r_rows "(SELECT json_extract(value, '\$.evidence.rows') FROM
				json_each(j) WHERE json_extract(value, '\$.evidence.epoch')
				IS NOT NULL ORDER BY key DESC LIMIT 1)" \
			r_epoch "(SELECT json_extract(value, '\$.evidence.epoch') FROM
				json_each(j) WHERE json_extract(value, '\$.evidence.rows')
				IS NOT NULL ORDER BY key DESC LIMIT 1)"
	fi
	[ -n "$r_rows" ] && [ -n "$r_epoch" ] ||
		finish 100 "journal says $state but records no result"
}

accept_applied() { # the fence shows the operation: is it ours?
	[ "$p_intent" = "$intent" ] || finish 100 "INTENT_CONFLICT: the target holds another intent"
	[ "$p_epoch" -le "$epoch" ] || finish 75 "applied by a newer epoch $p_epoch"
	r_rows=$p_rows r_epoch=$p_epoch
	[ "$applied" = true ] && [ "$p_epoch" -eq "$epoch" ] && mutated=true
	jobj epoch="$r_epoch" rows="$r_rows" fence=sqlite
	move TARGET_COMMITTED before_target_committed after_target_committed "$json" ||
		finish 75 "$why"
	finish_evidence
}

pre_commit_failed() { # before any mutation could land: record it, retry later
	reason=$why
	jobj epoch="$epoch" "reason=failed before commit"
	move FAILED_PRE_COMMIT before_failed_pre_commit after_failed_pre_commit "$json"
	finish 75 "$reason"
}

commit_unknown() {
	reason=$why
	jobj epoch="$epoch" "reason=fence outcome not provable"
	move COMMIT_UNKNOWN before_commit_unknown after_commit_unknown "$json" ||
		finish 75 "$why"
	finish 100 "COMMIT_UNKNOWN ($reason): an operator must resolve it"
}

# ---- the mutation --------------------------------------------------------------
apply_and_prove() { # in COMMITTING, fence prepared at our epoch
	fp before_target_commit || { why="apply failed (failpoint)"; pre_commit_failed; }
	applied=true present=false
	apply && present=true
	fp after_target_commit || present=false
	probe before_probe after_probe
	case $answer in
	APPLIED) accept_applied ;;
	ABSENT)
		[ "$present" = true ] && { why="apply succeeded but the fence is absent"; commit_unknown; }
		err
		why="apply failed: $text"
		pre_commit_failed ;;
	*)
		[ "$present" = true ] && finish 75 "applied, but $why; operation left COMMITTING"
		commit_unknown ;;
	esac
}

run_from_pre_commit() { # PREPARING or PREPARED under our lease
	if [ "${prepared:-false}" != true ]; then
		stale=false
		prepare_fence || { [ "$stale" = true ] && finish 75 "$why"; pre_commit_failed; }
	fi
	if [ "$state" = PREPARING ]; then
		jobj epoch="$epoch" fence=sqlite
		move PREPARED before_prepared after_prepared "$json" || finish 75 "$why"
	fi
	nrows=$(sqlite3 -bail :memory: "CREATE TABLE src(row_key TEXT, payload TEXT)" \
		".import --csv --skip 1 '$src' src" "SELECT count(*) FROM src") ||
		finish 64 "cannot parse source '$src'"
	jobj epoch="$epoch" rows="$nrows"
	move COMMITTING before_committing after_committing "$json" || finish 75 "$why"
	apply_and_prove
}

reconcile_committing() { # an earlier attempt may or may not have applied
	probe before_reconcile_probe after_reconcile_probe
	if [ "$answer" = ABSENT ]; then
		stale=false
		prepare_fence || finish 75 "$why; operation left COMMITTING"
		prepared=true
		probe before_reconcile_probe after_reconcile_probe
	fi
	case $answer in
	APPLIED) accept_applied ;;
	ABSENT)
		jobj epoch="$epoch" "reason=fence absent after prepare"
		move FAILED_PRE_COMMIT before_failed_pre_commit after_failed_pre_commit "$json" &&
			restart
		run_from_pre_commit ;;
	*) commit_unknown ;;
	esac
}

restart() { # FAILED_PRE_COMMIT -> PREPARING, or exit 75
	jobj epoch="$epoch"
	move PREPARING before_restart after_restart "$json" || finish 75 "$why"
}

deliver_recorded() { # COMPLETE already: hand back the result, touch nothing
	recorded_result
	write_evidence COMPLETE || finish 75 "evidence not written"
	finish 0 "already COMPLETE, no target I/O"
}

lease_expires_soon() { # another owner's lease runs out soon: wait for it
	journal get --op "$op" || return 1
	jvars "$scratch/out.json" left "json_extract(j, '\$.lease_expires_at') -
		CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
	bound=$TTL
	[ "$bound" -gt 5000 ] && bound=5000
	[ -n "$left" ] && [ "$left" -le "$bound" ] || return 1
	ms=$((left + 5))
	[ "$ms" -gt 0 ] && sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))" # GNU/busybox sleep
	return 0
}

# ---- the attempt -----------------------------------------------------------------
journal init || journal_failed $? "opening the journal"
fresh=false
journal get --op "$op"
rc=$?
if [ $rc -eq 2 ]; then
	fp before_intent || finish 75 "journal unavailable while creating the intent (failpoint)"
	jobj table="$table" strategy="$strategy"
	journal create --op "$op" --intent "$intent" --meta "$json" ||
		journal_failed $? "creating the intent"
	fp after_intent || finish 75 "journal reply lost after creating the intent (failpoint)"
elif [ $rc -ne 0 ]; then
	journal_failed $rc "reading the operation"
fi
read_entry
[ $rc -eq 2 ] && [ "$e_created" = 1 ] && fresh=true

[ "$e_intent" = "$intent" ] ||
	finish 100 "INTENT_CONFLICT: the journal holds another intent for $op"
case $state in
COMPLETE) deliver_recorded ;;
COMMIT_UNKNOWN) finish 100 "operation is COMMIT_UNKNOWN: an operator must resolve it" ;;
esac

fp before_lease || finish 75 "journal unavailable while taking the lease (failpoint)"
waits=0
until journal lease --op "$op" --owner "$OWNER" --ttl-ms "$TTL"; do
	rc=$? # 7: LEASE_HELD by another owner
	[ $rc -eq 7 ] && [ $waits -lt 3 ] && lease_expires_soon ||
		journal_failed $rc "taking the lease"
	waits=$((waits + 1))
done
read_entry
epoch=$e_epoch
fp after_lease || finish 75 "journal reply lost after taking the lease (failpoint)"

case $state in
COMPLETE) deliver_recorded ;;
COMMIT_UNKNOWN) finish 100 "operation is COMMIT_UNKNOWN: an operator must resolve it" ;;
TARGET_COMMITTED|COMMITTED_INCOMPLETE) recorded_result; finish_evidence ;;
COMMITTING) reconcile_committing ;;
esac
if [ "$fresh" != true ]; then # reconcile before any other target I/O
	probe before_reconcile_probe after_reconcile_probe
	case $answer in
	UNKNOWN) finish 75 "$why; operation left $state" ;;
	APPLIED) finish 100 "the target holds the operation although the journal says $state" ;;
	esac
fi
if [ "$state" = FAILED_PRE_COMMIT ]; then
	restart
fi
run_from_pre_commit
