#!/usr/bin/env python3
"""own_ids.py -- a route that names its operations its own way.

routes/examples/route.py (journal through `$FENCECERT_BIN journal`, fence
row in the same SQLite transaction as the rows) with one change: the ids
come from this loader's own encoding, not from docs/identity.md -- as every
connector written before fencecert has its own.  The harness must find its
journal entries anyway (tests/integration/certificates_earned.sh).

OWN_IDS=stable (default): "myloader:" + sha1 of the identity fields, the
same on every try: a correct route.
OWN_IDS=per-try: the try number goes into the id, so every retry opens a
new journal entry and reconciles against nothing: wrong on purpose.
"""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "routes", "examples"))
import route  # noqa: E402  (the example, imported as a module)

MODE = os.environ.get("OWN_IDS", "stable")


def derive_ids(w):
    fields = "|".join(f"{k}={w['identity'][k]}" for k in sorted(w["identity"]))
    if MODE == "per-try":
        fields += f"|try={route.TRY}"
    op = "myloader:" + hashlib.sha1(fields.encode()).hexdigest()
    intent = "myintent:" + hashlib.sha1(
        (json.dumps(w["intent"], sort_keys=True) + w["source_digest"]).encode()
    ).hexdigest()
    return op, intent


route.derive_ids = derive_ids
sys.exit(route.main())
