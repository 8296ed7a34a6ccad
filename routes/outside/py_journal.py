#!/usr/bin/env python3
"""py_journal.py -- a loader written by a team that keeps its own journal.

It loads the source partition CSV into a SQLite table with Python's own
sqlite3 module and keeps the state of each load in a fencecert journal
through the CLI (`$FENCECERT_BIN journal create|lease|cas`), but it is not
fencecert's runtime and does not follow docs/identity.md:

- its load ids are its own: "etl:" + dag/workload:run:partition>target,
  readable in its logs (an id too long or holding odd characters falls
  back to "etl:sha1:" + a hash of the same fields);
- its fence is its own: a `loads` row, keyed by the load id, inserted in
  the same transaction as the rows; a `load_claims` row holds the highest
  lease epoch that claimed the load, so an older try cannot land later;
- it speaks no failpoint channel: the suite reaches it with syscall faults.

One try:

    create (or find) the load -> lease (epoch E) -> by the journal's state:
      COMPLETE                      evidence only
      COMMIT_UNKNOWN                stop (exit 100)
      TARGET_COMMITTED, ..._INCOMPLETE  evidence, COMPLETE
      COMMITTING                    look at the fence: there -> TARGET_COMMITTED;
                                    absent -> claim(E), look again: absent ->
                                    FAILED_PRE_COMMIT -> PREPARING -> load
      PREPARING, PREPARED, FAILED_PRE_COMMIT
                                    fence there -> stop (the journal and the
                                    target disagree); else load
    load: claim(E) -> PREPARED -> COMMITTING -> rows + fence row, one
          transaction -> fence there -> TARGET_COMMITTED -> return.json
          -> COMPLETE

Exit status: 0 loaded, 75 try again, 100 stop (an operator must look),
64 configuration.
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

DONE, USAGE, AGAIN, STOP = 0, 64, 75, 100
BIN = os.environ.get("FENCECERT_BIN", "fencecert")
TRY = os.environ.get("FENCECERT_TRY_NUMBER", "1")


class Stop(Exception):
    def __init__(self, status, why):
        super().__init__(why)
        self.status = status


# ---- the load: what to read, what to call it ------------------------------
def read_load(path):
    try:
        with open(path, encoding="utf-8") as f:
            w = json.load(f)
        ident, table = w["identity"], w["table"]
        src = os.path.join(os.path.dirname(path), w["source"])
        with open(src, "rb") as f:
            data = f.read()
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Stop(USAGE, f"cannot read the load '{path}': {e}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", table):
        raise Stop(USAGE, f"bad table name '{table}'")
    rows = list(csv.reader(data.decode("utf-8").splitlines(True)))
    if not rows or rows[0] != ["row_key", "payload"]:
        raise Stop(USAGE, f"'{src}' does not start with row_key,payload")
    rows = [r for r in rows[1:] if r]
    if any(len(r) != 2 or not r[0] for r in rows):
        raise Stop(USAGE, f"'{src}' holds a malformed record")
    fields = [ident.get(k, "") for k in ("dag", "workload", "run", "partition", "target")]
    load_id = "etl:%s/%s:%s:%s>%s" % tuple(fields)
    if len(load_id) > 79 or not re.fullmatch(r"[!-~]+", load_id):
        load_id = "etl:sha1:" + hashlib.sha1("\0".join(fields).encode()).hexdigest()
    # what the load is: the file's bytes and how it is loaded
    what = "sha1:" + hashlib.sha1(
        w["intent"].get("strategy", "append").encode() + b"\0" + data).hexdigest()
    return load_id, what, table, rows


# ---- the journal, through the fencecert CLI --------------------------------
class Journal:
    def __init__(self, url, load_id):
        self.url, self.id = url, load_id
        self.entry = None

    def call(self, sub, *args):
        cmd = [BIN, "journal", sub, "--journal", self.url, "--op", self.id, *args]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise Stop(USAGE, f"cannot run '{BIN}': {e}")
        if p.returncode == 0:
            self.entry = json.loads(p.stdout)
            return 0
        if p.returncode in (4, 5):  # illegal transition, another intent
            raise Stop(STOP, f"journal {sub}: {p.stderr.strip()}")
        if p.returncode == 7:  # another owner's lease
            return 7
        raise Stop(AGAIN, f"journal {sub}: {p.stderr.strip()}")

    @property
    def state(self):
        return self.entry["state"]

    def move(self, to, epoch, **evidence):
        self.call("cas", "--expect-version", str(self.entry["version"]),
                  "--from", self.state, "--to", to, "--epoch", str(epoch),
                  "--evidence", json.dumps(evidence))

    def lease(self, owner, ttl_ms):
        for _ in range(4):
            if self.call("lease", "--owner", owner, "--ttl-ms", str(ttl_ms)) == 0:
                return self.entry["lease_epoch"]
            time.sleep(ttl_ms / 1000.0 + 0.01)  # most likely a try that died
        raise Stop(AGAIN, "the load's lease stays held by another owner")


# ---- the target: rows, the fence row and the claims ------------------------
class Target:
    """One connection for the whole try (WAL mode, synchronous=FULL)."""

    def __init__(self, path, table, load_id):
        self.path, self.table, self.id = path, table, load_id
        self.db = None

    def open(self):
        if self.db is None:
            db = sqlite3.connect(self.path, timeout=5, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(
                "BEGIN;"
                f"CREATE TABLE IF NOT EXISTS {self.table}(row_key TEXT, payload TEXT);"
                "CREATE TABLE IF NOT EXISTS loads(load_id TEXT PRIMARY KEY,"
                " epoch INTEGER NOT NULL, rows INTEGER NOT NULL);"
                "CREATE TABLE IF NOT EXISTS load_claims(load_id TEXT PRIMARY KEY,"
                " epoch INTEGER NOT NULL);"
                "COMMIT;")
            self.db = db
        return self.db

    def close(self):
        if self.db is not None:
            self.db.close()
            self.db = None

    def loaded(self):
        """True or False; None when it cannot be known."""
        try:
            return self.open().execute("SELECT 1 FROM loads WHERE load_id = ?",
                                       (self.id,)).fetchone() is not None
        except sqlite3.Error:
            return None

    def _write(self, epoch, body):
        """body(db) inside BEGIN IMMEDIATE, refused when a newer try claimed
        the load; rolled back on any error."""
        db = self.open()
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT epoch FROM load_claims WHERE load_id = ?",
                             (self.id,)).fetchone()
            if row is not None and row[0] > epoch:
                raise Stop(AGAIN, f"a newer try (epoch {row[0]}) claimed the load")
            result = body(db)
            db.execute("COMMIT")
            return result
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def claim(self, epoch):
        """From now on no try with an older epoch can load."""
        self._write(epoch, lambda db: db.execute(
            "INSERT INTO load_claims VALUES (?, ?) ON CONFLICT(load_id)"
            " DO UPDATE SET epoch = excluded.epoch", (self.id, epoch)))

    def load(self, epoch, rows):
        """Rows and fence row in one transaction; False when already loaded."""
        def body(db):
            if db.execute("SELECT 1 FROM loads WHERE load_id = ?", (self.id,)).fetchone():
                return False
            db.executemany(f"INSERT INTO {self.table}(row_key, payload) VALUES (?, ?)", rows)
            db.execute("INSERT INTO loads VALUES (?, ?, ?)", (self.id, epoch, len(rows)))
            return True
        return self._write(epoch, body)


# ---- one try ------------------------------------------------------------------
def evidence(load_id, nrows):
    xcom = os.environ.get("FENCECERT_XCOM_DIR")
    if not xcom:
        return
    os.makedirs(xcom, exist_ok=True)
    tmp = os.path.join(xcom, ".return.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"operation_id": load_id, "state": "COMPLETE",
                   "rows_written": nrows, "try": TRY}, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, os.path.join(xcom, "return.json"))


def finish(j, epoch, nrows):
    try:
        evidence(j.id, nrows)
    except OSError as e:
        raise Stop(AGAIN, f"cannot write return.json: {e}")
    j.move("COMPLETE", epoch, rows=nrows)
    return "COMPLETE"


def load(j, t, epoch, rows):
    t.claim(epoch)
    if j.state == "FAILED_PRE_COMMIT":
        j.move("PREPARING", epoch)
    if j.state == "PREPARING":
        j.move("PREPARED", epoch, claim=epoch)
    j.move("COMMITTING", epoch, rows=len(rows))
    try:
        t.load(epoch, rows)
    except sqlite3.Error:
        pass  # the fence row decides
    there = t.loaded()
    if there is None:
        j.move("COMMIT_UNKNOWN", epoch, why="the load's fence cannot be read")
        raise Stop(STOP, "COMMIT_UNKNOWN: an operator must look")
    if not there:
        j.move("FAILED_PRE_COMMIT", epoch, why="the load did not land")
        raise Stop(AGAIN, "the load did not land")
    j.move("TARGET_COMMITTED", epoch, rows=len(rows))
    return finish(j, epoch, len(rows))


def reconcile_committing(j, t, epoch, rows):
    there = t.loaded()
    if there is False:
        t.claim(epoch)  # an older try's load can no longer land
        there = t.loaded()
    if there is None:
        j.move("COMMIT_UNKNOWN", epoch, why="the load's fence cannot be read")
        raise Stop(STOP, "COMMIT_UNKNOWN: an operator must look")
    if there:
        j.move("TARGET_COMMITTED", epoch, rows=len(rows))
        return finish(j, epoch, len(rows))
    j.move("FAILED_PRE_COMMIT", epoch, why="fence absent after the claim")
    return load(j, t, epoch, rows)


def settled(j, nrows):
    """The journal says there is nothing to load: a result, or a stop."""
    if j.state == "COMPLETE":
        evidence(j.id, nrows)
        return "already COMPLETE"
    if j.state == "COMMIT_UNKNOWN":
        raise Stop(STOP, "the load is COMMIT_UNKNOWN: an operator must look")
    return None


def run_load(j, t, what, table, rows):
    j.call("create", "--intent", what, "--meta", json.dumps({"table": table}))
    done = settled(j, len(rows))
    if done:
        return done
    ttl = int(os.environ.get("FENCECERT_LEASE_TTL_MS", "30000"))
    epoch = j.lease(os.environ.get("FENCECERT_LEASE_OWNER", "py_journal"), ttl)
    done = settled(j, len(rows))  # the entry as the lease found it
    if done:
        return done
    if j.state in ("TARGET_COMMITTED", "COMMITTED_INCOMPLETE"):
        return finish(j, epoch, len(rows))
    if j.state == "COMMITTING":
        return reconcile_committing(j, t, epoch, rows)
    there = t.loaded()
    if there is None:
        raise Stop(AGAIN, "the load's fence cannot be read")
    if there:
        raise Stop(STOP, f"the target holds the load although the journal says {j.state}")
    return load(j, t, epoch, rows)


def run():
    env = os.environ
    for name in ("FENCECERT_JOURNAL", "FENCECERT_TARGET", "FENCECERT_WORKLOAD"):
        if not env.get(name):
            raise Stop(USAGE, f"{name} is not set")
    if not env["FENCECERT_TARGET"].startswith("sqlite:"):
        raise Stop(USAGE, "this loader writes to sqlite:PATH targets only")
    load_id, what, table, rows = read_load(env["FENCECERT_WORKLOAD"])
    j = Journal(env["FENCECERT_JOURNAL"], load_id)
    t = Target(env["FENCECERT_TARGET"][len("sqlite:"):], table, load_id)
    try:
        return run_load(j, t, what, table, rows)
    finally:
        t.close()


def main():
    try:
        status, why = DONE, run()
    except Stop as s:
        status, why = s.status, str(s)
    except (sqlite3.Error, OSError, ValueError) as e:
        status, why = AGAIN, f"{type(e).__name__}: {e}"
    print(f"py_journal: try {TRY}: exit {status}: {why}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
