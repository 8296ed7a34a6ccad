#!/usr/bin/env python3
"""route.py -- a complete, certifiable fencecert route in Python 3.

It loads the CSV source partition named by $FENCECERT_WORKLOAD into a SQLite
target ($FENCECERT_TARGET = sqlite:PATH) following the protocol of
docs/routes.md, the same one the C route (`fencecert route`) follows:

    ids -> journal entry -> lease (epoch E) -> fence prepare(E) -> PREPARED
    -> COMMITTING -> rows + fence row in ONE transaction -> probe
    -> TARGET_COMMITTED -> return.json -> COMPLETE

On a retry it reads the journal before touching anything, stops on an
intent mismatch, and probes the fence before any other target call.

Standard library only.  The journal and the ids come from the fencecert
binary ($FENCECERT_BIN, default `fencecert` on PATH); the target tables are
the ones fences/fence_sqlite.c uses.  Exit status: 0 complete, 75 retry
later, 100 stop (an operator must look), 64 configuration.
"""

import csv
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import time

COMPLETE, USAGE, RETRY, STOP = 0, 64, 75, 100
FENCECERT = os.environ.get("FENCECERT_BIN", "fencecert")
TRY = os.environ.get("FENCECERT_TRY_NUMBER", "1")


class Stop(Exception):
    """Ends the attempt with an exit status and a reason."""

    def __init__(self, status, why):
        super().__init__(why)
        self.status = status


# ---- the failpoint channel: "HIT name", then one byte: b"c" = go on --------
FD = os.environ.get("FENCECERT_FAILPOINT_FD")


def fp(name):
    """True to go on; False when this step must fail (or the channel broke)."""
    if not FD:
        return True
    try:
        os.write(int(FD), b"HIT " + name.encode() + b"\n")
        return os.read(int(FD), 1) == b"c"
    except OSError:
        return False


# ---- the workload -------------------------------------------------------------
def load_workload(path):
    try:
        with open(path, encoding="utf-8") as f:
            w = json.load(f)
    except (OSError, ValueError) as e:
        raise Stop(USAGE, f"cannot read workload '{path}': {e}")
    for key in ("identity", "intent", "source", "table"):
        if key not in w:
            raise Stop(USAGE, f"workload '{path}' lacks \"{key}\"")
    if w["intent"].get("strategy") not in ("append", "replace"):
        raise Stop(USAGE, f"unknown strategy '{w['intent'].get('strategy')}'")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", w["table"]):
        raise Stop(USAGE, f"bad table name '{w['table']}'")
    w["source_path"] = os.path.join(os.path.dirname(path), w["source"])
    try:
        with open(w["source_path"], "rb") as f:
            w["source_digest"] = "sha256:" + hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        raise Stop(USAGE, f"cannot read source '{w['source_path']}': {e}")
    return w


def derive_ids(w):
    """operation_id over the identity fields; intent_digest over the intent
    fields plus source=<sha256 of the CSV bytes> (fencecert id computes both)."""
    args = [FENCECERT, "id"]
    for name, value in w["identity"].items():
        args += ["--field", f"{name}={value}"]
    for name, value in w["intent"].items():
        args += ["--intent-field", f"{name}={value}"]
    args += ["--intent-field", f"source={w['source_digest']}"]
    try:
        out = subprocess.run(args, capture_output=True, text=True)
    except OSError as e:
        raise Stop(USAGE, f"cannot run '{FENCECERT}': {e}")
    if out.returncode != 0:
        raise Stop(USAGE, out.stderr.strip())
    ids = json.loads(out.stdout)
    return ids["operation_id"], ids["intent_digest"]


def read_rows(w):
    with open(w["source_path"], newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        if next(reader, None) != ["row_key", "payload"]:
            raise Stop(USAGE, f"source '{w['source_path']}': line 1: bad header; "
                              "expected 'row_key,payload'")
        rows = [r for r in reader if r]
    for r in rows:
        if len(r) != 2 or not r[0]:
            raise Stop(USAGE, f"source '{w['source_path']}': malformed record {r!r:.40}")
    return rows


# ---- the journal, through `fencecert journal` ---------------------------------
class Journal:
    def __init__(self, url):
        self.url = url

    def call(self, sub, *args):
        """(exit status, parsed JSON output or None, error text)."""
        try:
            out = subprocess.run([FENCECERT, "journal", sub, "--journal", self.url, *args],
                                 capture_output=True, text=True)
        except OSError as e:
            raise Stop(USAGE, f"cannot run '{FENCECERT}': {e}")
        data = json.loads(out.stdout) if out.returncode == 0 and out.stdout else None
        return out.returncode, data, out.stderr.strip()


def journal_failed(rc, doing, err):
    if rc == 5:
        return Stop(STOP, f"INTENT_CONFLICT while {doing}: {err}")
    if rc in (4, 64):
        return Stop(STOP, f"journal refused {doing}: {err}")
    return Stop(RETRY, f"journal unavailable or moved while {doing}: {err}")


# ---- the target: the same tables as fences/fence_sqlite.c -------------------
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS fencecert_fence(operation_id TEXT PRIMARY KEY,"
    " epoch INTEGER NOT NULL, intent_digest TEXT NOT NULL, rows INTEGER NOT NULL,"
    " applied_at INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS fencecert_epoch(operation_id TEXT PRIMARY KEY,"
    " epoch INTEGER NOT NULL)",
)


class StaleEpoch(Exception):
    pass


class Target:
    """A SQLite target, opened on first use (never before the intent check)."""

    def __init__(self, path):
        self.path = path
        self.db = None

    def connect(self):
        if self.db is None:
            self.db = sqlite3.connect(self.path, timeout=3, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
        return self.db

    def prepare(self, op, epoch):
        """Make every apply with an epoch below `epoch` fail."""
        db = self.connect()
        db.execute("BEGIN IMMEDIATE")
        try:
            for sql in SCHEMA:
                db.execute(sql)
            cur = db.execute("SELECT epoch FROM fencecert_epoch WHERE operation_id = ?",
                             (op,)).fetchone()
            if cur and cur[0] > epoch:
                raise StaleEpoch(f"epoch {cur[0]} is prepared")
            db.execute("INSERT INTO fencecert_epoch VALUES(?, ?) ON CONFLICT(operation_id)"
                       " DO UPDATE SET epoch = excluded.epoch", (op, epoch))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.commit()

    def commit(self):
        try:
            self.db.execute("COMMIT")
        except sqlite3.Error:
            # Not committed: roll back so this connection cannot see it.
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def apply(self, op, intent, epoch, table, strategy, rows):
        """Rows and fence row in one transaction.  Returns normally only when
        it committed; StaleEpoch when fenced out; anything else: unknown."""
        db = self.connect()
        db.execute("BEGIN IMMEDIATE")
        try:
            for sql in SCHEMA:
                db.execute(sql)
            db.execute(f'CREATE TABLE IF NOT EXISTS "{table}"'
                       "(row_key TEXT, payload TEXT, operation_id TEXT)")
            if db.execute("SELECT 1 FROM fencecert_fence WHERE operation_id = ?",
                          (op,)).fetchone():
                raise sqlite3.IntegrityError("already applied")
            cur = db.execute("SELECT epoch FROM fencecert_epoch WHERE operation_id = ?",
                             (op,)).fetchone()
            if cur and cur[0] > epoch:
                raise StaleEpoch(f"epoch {cur[0]} is prepared")
            if strategy == "replace":
                db.executemany(f'DELETE FROM "{table}" WHERE row_key = ?',
                               [(k,) for k, _ in rows])
            db.executemany(f'INSERT INTO "{table}"(row_key, payload, operation_id)'
                           " VALUES(?, ?, ?)", [(k, p, op) for k, p in rows])
            db.execute("INSERT INTO fencecert_fence VALUES(?, ?, ?, ?, ?)",
                       (op, epoch, intent, len(rows), int(time.time() * 1000)))
            db.execute("INSERT INTO fencecert_epoch VALUES(?, ?) ON CONFLICT(operation_id)"
                       " DO UPDATE SET epoch = max(epoch, excluded.epoch)", (op, epoch))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.commit()

    def probe(self, op):
        """('APPLIED', epoch, intent, rows), ('ABSENT',) or ('UNKNOWN',)."""
        try:
            if not os.path.exists(self.path):
                parent = os.path.dirname(self.path) or "."
                return ("ABSENT",) if os.path.isdir(parent) else ("UNKNOWN",)
            db = self.connect()
            if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                              " AND name = 'fencecert_fence'").fetchone():
                return ("ABSENT",)
            row = db.execute("SELECT epoch, intent_digest, rows FROM fencecert_fence"
                             " WHERE operation_id = ?", (op,)).fetchone()
            return ("APPLIED", *row) if row else ("ABSENT",)
        except sqlite3.Error:
            return ("UNKNOWN",)


# ---- evidence ------------------------------------------------------------------
def write_json(directory, name, obj):
    """Temp file, fsync, rename, fsync of the directory."""
    if not directory:
        return
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, os.path.join(directory, name))
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---- one attempt ------------------------------------------------------------------
class Attempt:
    def __init__(self):
        env = os.environ
        for name in ("FENCECERT_JOURNAL", "FENCECERT_TARGET", "FENCECERT_WORKLOAD"):
            if not env.get(name):
                raise Stop(USAGE, f"{name} is required")
        if not TRY.isdigit() or int(TRY) < 1:
            raise Stop(USAGE, f"FENCECERT_TRY_NUMBER '{TRY}' is not a positive number")
        if not env["FENCECERT_TARGET"].startswith("sqlite:"):
            raise Stop(USAGE, "this example supports sqlite:PATH targets only")
        self.journal = Journal(env["FENCECERT_JOURNAL"])
        self.target = Target(env["FENCECERT_TARGET"][len("sqlite:"):])
        self.w = load_workload(env["FENCECERT_WORKLOAD"])
        self.op, self.intent = derive_ids(self.w)
        self.owner = env.get("FENCECERT_LEASE_OWNER", "route")
        self.ttl = env.get("FENCECERT_LEASE_TTL_MS", "30000")
        self.entry = {"state": "NONE"}
        self.epoch = 0
        self.rows = None
        self.prepared = self.applied = self.mutated = False
        self.result = None  # (rows, epoch) the fence / journal records

    @property
    def state(self):
        return self.entry["state"]

    # -- journal steps, each between its two failpoints --
    def move(self, to, before, after, evidence):
        if not fp(before):
            raise Stop(RETRY, f"journal unavailable while moving to {to} (failpoint {before})")
        rc, entry, err = self.journal.call(
            "cas", "--op", self.op, "--expect-version", str(self.entry["version"]),
            "--from", self.state, "--to", to, "--epoch", str(self.epoch),
            "--evidence", json.dumps(evidence))
        if rc != 0:
            raise journal_failed(rc, f"moving to {to}", err)
        self.entry = entry
        if not fp(after):
            raise Stop(RETRY, f"journal reply lost after moving to {to} (failpoint {after})")

    def best_effort_move(self, to, before, after, evidence):
        try:
            self.move(to, before, after, evidence)
        except Stop as s:
            if s.status == STOP:
                raise

    def take_lease(self):
        if not fp("before_lease"):
            raise Stop(RETRY, "journal unavailable while taking the lease (failpoint)")
        for _ in range(3):
            rc, entry, err = self.journal.call("lease", "--op", self.op, "--owner", self.owner,
                                               "--ttl-ms", self.ttl)
            if rc != 7 or not self.wait_for_lease():  # 7: LEASE_HELD
                break
        if rc != 0:
            raise journal_failed(rc, "taking the lease", err)
        self.entry, self.epoch = entry, entry["lease_epoch"]
        if not fp("after_lease"):
            raise Stop(RETRY, "journal reply lost after taking the lease (failpoint)")

    def wait_for_lease(self):
        """Another owner's lease runs out soon (most likely a try that just
        died): wait for it rather than give up.  False: give up (exit 75)."""
        rc, cur, _ = self.journal.call("get", "--op", self.op)
        if rc != 0 or not cur.get("lease_expires_at"):
            return False
        left = cur["lease_expires_at"] - time.time() * 1000
        if left > min(int(self.ttl), 5000):
            return False
        time.sleep(max(left, 0) / 1000 + 0.005)
        return True

    # -- target steps --
    def prepare_fence(self):
        """None on success, else a reason; StaleEpoch propagates."""
        if not fp("before_fence_prepare"):
            return "fence prepare failed (failpoint)"
        try:
            self.target.prepare(self.op, self.epoch)
        except sqlite3.Error as e:
            return f"cannot prepare the fence: {e}"
        self.prepared = True
        if not fp("after_fence_prepare"):
            return "fence prepare reply lost (failpoint)"
        return None

    def probe(self, reconcile):
        kind = "reconcile_probe" if reconcile else "probe"
        if not fp("before_" + kind):
            return ("UNKNOWN",)
        answer = self.target.probe(self.op)
        return answer if fp("after_" + kind) else ("UNKNOWN",)

    # -- the protocol --
    def accept_applied(self, answer):
        _, epoch, intent, rows = answer
        if intent != self.intent:
            raise Stop(STOP, "INTENT_CONFLICT: the target holds another intent")
        if epoch > self.epoch:
            raise Stop(RETRY, f"applied by a newer epoch {epoch}")
        self.result = (rows, epoch)
        self.mutated = self.applied and epoch == self.epoch
        self.move("TARGET_COMMITTED", "before_target_committed", "after_target_committed",
                  {"epoch": epoch, "rows": rows, "fence": "sqlite"})
        return self.finish_evidence()

    def write_evidence(self, checkpoint_state):
        rows, epoch = self.result
        if not fp("before_evidence"):
            return False
        try:
            write_json(os.environ.get("FENCECERT_RUN_DIR"), "checkpoint.json", {
                "operation_id": self.op, "intent_digest": self.intent,
                "state": checkpoint_state, "rows": rows, "epoch": epoch,
                "try_number": int(TRY)})
            write_json(os.environ.get("FENCECERT_XCOM_DIR"), "return.json", {
                "operation_id": self.op, "intent_digest": self.intent, "state": "COMPLETE",
                "rows_written": rows, "try_number": int(TRY), "epoch": epoch,
                "mutated": self.mutated})
        except OSError:
            return False
        return fp("after_evidence")

    def finish_evidence(self):
        rows, epoch = self.result
        if not self.write_evidence("TARGET_COMMITTED"):
            xcom = os.environ.get("FENCECERT_XCOM_DIR")
            if xcom and os.path.exists(os.path.join(xcom, "return.json")):
                os.unlink(os.path.join(xcom, "return.json"))
            if self.state == "TARGET_COMMITTED":
                self.best_effort_move("COMMITTED_INCOMPLETE", "before_committed_incomplete",
                                      "after_committed_incomplete",
                                      {"epoch": epoch, "rows": rows, "fence": "sqlite",
                                       "reason": "evidence not written"})
            raise Stop(RETRY, "evidence not written")
        self.move("COMPLETE", "before_complete", "after_complete",
                  {"rows": rows, "try": int(TRY), "epoch": epoch})
        return f"rows {rows}, epoch {epoch}, mutated {str(self.mutated).lower()}"

    def recorded_result(self):
        ev = self.entry.get("evidence") or {}
        if "rows" in ev and "epoch" in ev:
            self.result = (ev["rows"], ev["epoch"])
            return
        rc, history, err = self.journal.call("history", "--op", self.op)
        if rc != 0:
            raise journal_failed(rc, "reading the history", err)
        for t in reversed(history):
            ev = t.get("evidence") or {}
            if "rows" in ev and "epoch" in ev:
                self.result = (ev["rows"], ev["epoch"])
                return
        raise Stop(STOP, f"journal says {self.state} but records no result")

    def deliver_recorded(self):
        self.recorded_result()
        if not self.write_evidence("COMPLETE"):
            raise Stop(RETRY, "evidence not written")
        return "already COMPLETE, no target I/O"

    def pre_commit_failed(self, why):
        self.best_effort_move("FAILED_PRE_COMMIT", "before_failed_pre_commit",
                              "after_failed_pre_commit",
                              {"epoch": self.epoch, "reason": "failed before commit"})
        raise Stop(RETRY, why)

    def commit_unknown(self, why):
        self.move("COMMIT_UNKNOWN", "before_commit_unknown", "after_commit_unknown",
                  {"epoch": self.epoch, "reason": "fence outcome not provable"})
        raise Stop(STOP, f"COMMIT_UNKNOWN ({why}): an operator must resolve it")

    def apply_and_prove(self):
        if not fp("before_target_commit"):
            self.pre_commit_failed("apply failed (failpoint)")
        self.applied, present = True, False
        try:
            self.target.apply(self.op, self.intent, self.epoch, self.w["table"],
                              self.w["intent"]["strategy"], self.rows)
            present = True
        except StaleEpoch as e:
            raise Stop(RETRY, f"apply refused, a newer epoch prepared the fence: {e}")
        except sqlite3.Error:
            pass  # unknown: the probe decides
        if not fp("after_target_commit"):
            present = False
        answer = self.probe(reconcile=False)
        if answer[0] == "APPLIED":
            return self.accept_applied(answer)
        if answer[0] == "ABSENT":
            if present:
                self.commit_unknown("apply succeeded but the fence is absent")
            self.pre_commit_failed("apply did not land")
        if present:
            raise Stop(RETRY, "applied, but the probe failed; operation left COMMITTING")
        self.commit_unknown("apply and probe both failed")

    def run_from_pre_commit(self):
        if self.rows is None:
            self.rows = read_rows(self.w)
        if not self.prepared:
            try:
                why = self.prepare_fence()
            except StaleEpoch as e:
                raise Stop(RETRY, f"fence prepared by a newer epoch: {e}")
            if why:
                self.pre_commit_failed(why)
        if self.state == "PREPARING":
            self.move("PREPARED", "before_prepared", "after_prepared",
                      {"epoch": self.epoch, "fence": "sqlite"})
        self.move("COMMITTING", "before_committing", "after_committing",
                  {"epoch": self.epoch, "rows": len(self.rows)})
        return self.apply_and_prove()

    def reconcile_committing(self):
        answer = self.probe(reconcile=True)
        if answer[0] == "ABSENT":
            try:
                why = self.prepare_fence()
            except StaleEpoch as e:
                why = f"fence prepared by a newer epoch: {e}"
            if why:
                raise Stop(RETRY, f"{why}; operation left COMMITTING")
            answer = self.probe(reconcile=True)
        if answer[0] == "APPLIED":
            return self.accept_applied(answer)
        if answer[0] == "ABSENT":
            self.move("FAILED_PRE_COMMIT", "before_failed_pre_commit",
                      "after_failed_pre_commit",
                      {"epoch": self.epoch, "reason": "fence absent after prepare"})
            self.move("PREPARING", "before_restart", "after_restart", {"epoch": self.epoch})
            return self.run_from_pre_commit()
        self.commit_unknown("reconcile probe failed")

    def settled(self):
        """COMPLETE or COMMIT_UNKNOWN: nothing to do but report (None otherwise)."""
        if self.state == "COMPLETE":
            return self.deliver_recorded()
        if self.state == "COMMIT_UNKNOWN":
            raise Stop(STOP, "operation is COMMIT_UNKNOWN: an operator must resolve it")
        return None

    def run(self):
        rc, _, err = self.journal.call("init")
        if rc != 0:
            raise journal_failed(rc, "opening the journal", err)
        fresh = False
        rc, entry, err = self.journal.call("get", "--op", self.op)
        if rc == 2:
            self.rows = read_rows(self.w)
            if not fp("before_intent"):
                raise Stop(RETRY, "journal unavailable while creating the intent (failpoint)")
            rc, entry, err = self.journal.call(
                "create", "--op", self.op, "--intent", self.intent,
                "--meta", json.dumps({"table": self.w["table"],
                                      "strategy": self.w["intent"]["strategy"]}))
            if rc != 0:
                raise journal_failed(rc, "creating the intent", err)
            if not fp("after_intent"):
                raise Stop(RETRY, "journal reply lost after creating the intent (failpoint)")
            fresh = entry.pop("created", False)
        elif rc != 0:
            raise journal_failed(rc, "reading the operation", err)
        self.entry = entry
        if entry["intent_digest"] != self.intent:
            raise Stop(STOP, f"INTENT_CONFLICT: the journal holds another intent for {self.op}")
        done = self.settled()
        if done:
            return done
        self.take_lease()  # the entry as it is now
        done = self.settled()
        if done:
            return done
        if self.state in ("TARGET_COMMITTED", "COMMITTED_INCOMPLETE"):
            self.recorded_result()
            return self.finish_evidence()
        if self.state == "COMMITTING":
            return self.reconcile_committing()
        if not fresh:  # reconcile before any other target I/O
            answer = self.probe(reconcile=True)
            if answer[0] == "UNKNOWN":
                raise Stop(RETRY, f"probe failed; operation left {self.state}")
            if answer[0] == "APPLIED":
                raise Stop(STOP, "the target holds the operation although the journal"
                                 f" says {self.state}")
        if self.state == "FAILED_PRE_COMMIT":
            self.move("PREPARING", "before_restart", "after_restart", {"epoch": self.epoch})
        return self.run_from_pre_commit()


def main():
    attempt = None
    try:
        attempt = Attempt()
        status, why = COMPLETE, attempt.run()
    except Stop as s:
        status, why = s.status, str(s)
    state = attempt.state if attempt else "NONE"
    print(f"route.py: try {TRY}: {state}, exit {status}: {why}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
