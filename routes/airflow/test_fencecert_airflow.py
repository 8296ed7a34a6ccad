"""Tests of fencecert_airflow, runnable without Airflow:

    cd routes/airflow && python3 -m unittest -v test_fencecert_airflow

Fake routes are tiny shell scripts that exit 0/75/100/64 (the one exiting 0
writes return.json and a dump of its environment).  Airflow is kept out by
mapping its modules to None in sys.modules; a fake `airflow.exceptions`
module is injected the same way to show the mapping to AirflowException /
AirflowFailException.  With $FENCECERT set (tests/integration/
airflow_helper.sh sets it), one test also runs the real `fencecert route`.
"""

import json
import os
import shutil
import stat
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fencecert_airflow as fa  # noqa: E402

AIRFLOW_MODULES = ("airflow", "airflow.exceptions")


class FakeTI:
    def __init__(self, try_number, map_index=-1):
        self.dag_id = "orders"
        self.task_id = "load"
        self.run_id = "scheduled__2026-11-01T00:00:00+00:00"
        self.map_index = map_index
        self.try_number = try_number


def context(try_number=1, map_index=-1):
    return {"ti": FakeTI(try_number, map_index),
            "data_interval_start": "2026-11-01T00:00:00+00:00",
            "data_interval_end": "2026-11-02T00:00:00+00:00"}


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fc-airflow-")
        self.addCleanup(shutil.rmtree, self.tmp)
        saved = {m: sys.modules.get(m, Ellipsis) for m in AIRFLOW_MODULES}
        self.addCleanup(self._restore, saved)
        self.without_airflow()

    @staticmethod
    def _restore(saved):
        for name, mod in saved.items():
            if mod is Ellipsis:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod

    def without_airflow(self):
        # A None entry makes `import airflow...` raise ImportError even on
        # a machine where Airflow is installed.
        for name in AIRFLOW_MODULES:
            sys.modules[name] = None

    def with_fake_airflow(self):
        pkg = types.ModuleType("airflow")
        exc = types.ModuleType("airflow.exceptions")

        class AirflowException(Exception):
            pass

        class AirflowFailException(AirflowException):
            pass

        exc.AirflowException = AirflowException
        exc.AirflowFailException = AirflowFailException
        pkg.exceptions = exc
        sys.modules["airflow"] = pkg
        sys.modules["airflow.exceptions"] = exc
        return exc

    def script(self, name, body):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def route(self, status):
        """A fake route: dumps its environment, writes return.json on 0."""
        return self.script("route-%d" % status, """\
env > "$FENCECERT_RUN_DIR/env.txt"
if [ %d -eq 0 ]; then
    printf '{"state":"COMPLETE","try_number":%%s,"mutated":true}' \
        "$FENCECERT_TRY_NUMBER" > "$FENCECERT_XCOM_DIR/return.json"
fi
echo "route says goodbye with %d" >&2
exit %d
""" % (status, status, status))

    def run_ctx(self, argv, ctx=None, **kw):
        return fa.run_from_context(
            ctx or context(), journal="sqlite:" + self.tmp + "/j.db",
            target="sqlite:" + self.tmp + "/t.db",
            workload=self.tmp + "/w.json", base_dir=self.tmp + "/base",
            argv=argv, **kw)

    def env_of_last_run(self, ctx=None):
        values = fa.context_values(ctx or context())
        _, run_dir = fa.route_dirs(values, self.tmp + "/base")
        with open(os.path.join(run_dir, "env.txt")) as f:
            return dict(line.rstrip("\n").split("=", 1)
                        for line in f if "=" in line)


class WithoutAirflow(Base):
    def test_import_needs_no_airflow(self):
        with self.assertRaises(ImportError):
            import airflow.exceptions  # noqa: F401
        self.assertIsNone(fa._airflow_exception("AirflowFailException"))

    def test_exit_0_returns_return_json(self):
        result = self.run_ctx([self.route(0)], context(try_number=2))
        self.assertEqual(result, {"state": "COMPLETE", "try_number": 2,
                                  "mutated": True})

    def test_exit_75_is_retryable(self):
        with self.assertRaises(fa.RetryableRouteError) as cm:
            self.run_ctx([self.route(75)])
        self.assertIsInstance(cm.exception, RuntimeError)
        self.assertEqual(cm.exception.status, 75)
        self.assertIn("goodbye with 75", str(cm.exception))

    def test_exit_100_is_fail_closed(self):
        with self.assertRaises(fa.FailClosedError) as cm:
            self.run_ctx([self.route(100)])
        self.assertNotIsInstance(cm.exception, fa.RetryableRouteError)
        self.assertEqual(cm.exception.status, 100)
        self.assertIn("fencecert recover", str(cm.exception))

    def test_exit_64_is_config_error(self):
        with self.assertRaises(fa.RouteConfigError) as cm:
            self.run_ctx([self.route(64)])
        self.assertNotIsInstance(cm.exception, fa.RetryableRouteError)
        self.assertEqual(cm.exception.status, 64)

    def test_unexpected_status_and_signal_are_retryable(self):
        with self.assertRaises(fa.RetryableRouteError) as cm:
            self.run_ctx([self.script("crash", "exit 3\n")])
        self.assertEqual(cm.exception.status, 3)
        with self.assertRaises(fa.RetryableRouteError) as cm:
            self.run_ctx([self.script("killed", "kill -9 $$\n")])
        self.assertEqual(cm.exception.status, -9)

    def test_timeout_kills_and_is_retryable(self):
        marker = os.path.join(self.tmp, "child-survived")
        slow = self.script("slow", "(sleep 2; touch '%s') &\nsleep 30\n"
                           % marker)
        with self.assertRaises(fa.RetryableRouteError) as cm:
            self.run_ctx([slow], timeout=0.5)
        self.assertIsNone(cm.exception.status)
        # The whole process group went, the background child too.
        import time
        time.sleep(2.5)
        self.assertFalse(os.path.exists(marker))

    def test_exit_0_without_evidence_is_retryable(self):
        with self.assertRaises(fa.RetryableRouteError) as cm:
            self.run_ctx([self.script("silent", "exit 0\n")])
        self.assertEqual(cm.exception.status, 0)

    def test_environment_from_context(self):
        os.environ["FENCECERT_FAILPOINT_FD"] = "9"
        self.addCleanup(os.environ.pop, "FENCECERT_FAILPOINT_FD", None)
        ctx = context(try_number=3, map_index=7)
        self.run_ctx([self.route(0)], ctx, lease_ttl_ms=1500)
        env = self.env_of_last_run(ctx)
        self.assertEqual(env["FENCECERT_TRY_NUMBER"], "3")
        self.assertEqual(env["FENCECERT_JOURNAL"], "sqlite:%s/j.db" % self.tmp)
        self.assertEqual(env["FENCECERT_TARGET"], "sqlite:%s/t.db" % self.tmp)
        self.assertEqual(env["FENCECERT_WORKLOAD"], self.tmp + "/w.json")
        self.assertEqual(env["FENCECERT_LEASE_TTL_MS"], "1500")
        self.assertTrue(env["FENCECERT_XCOM_DIR"].endswith("/map7/try-3"))
        self.assertTrue(env["FENCECERT_RUN_DIR"].endswith("/load/map7"))
        self.assertNotIn("FENCECERT_FAILPOINT_FD", env)
        owner = env["FENCECERT_LEASE_OWNER"]
        self.assertTrue(owner.endswith(":map7:try3"))
        self.assertNotIn(" ", owner)

    def test_xcom_is_fresh_per_try(self):
        ctx = context(try_number=2)
        xcom, _ = fa.route_dirs(fa.context_values(ctx), self.tmp + "/base")
        os.makedirs(xcom)
        with open(os.path.join(xcom, "return.json"), "w") as f:
            f.write('{"state":"COMPLETE","stale":true}')
        # A route that fails leaves no evidence behind to be mistaken...
        with self.assertRaises(fa.RetryableRouteError):
            self.run_ctx([self.route(75)], ctx)
        self.assertFalse(os.path.exists(os.path.join(xcom, "return.json")))
        # ...and tries never share a directory.
        other, _ = fa.route_dirs(fa.context_values(context(3)), "/b")
        self.assertNotEqual(os.path.basename(xcom), os.path.basename(other))

    def test_identity_has_no_try_or_run_id(self):
        a = fa.identity_from_context(context(try_number=1, map_index=4))
        b = fa.identity_from_context(context(try_number=5, map_index=4))
        self.assertEqual(a, b)
        self.assertEqual(a["interval"], "2026-11-01T00:00:00+00:00/"
                         "2026-11-02T00:00:00+00:00")
        self.assertEqual(a["partition"], "4")
        text = json.dumps(a)
        self.assertNotIn("scheduled__", text)
        with self.assertRaises(fa.RouteConfigError):
            fa.identity_from_context({"ti": FakeTI(1)})

    def test_bad_context(self):
        with self.assertRaises(fa.RouteConfigError):
            fa.context_values({})
        with self.assertRaises(fa.RouteConfigError):
            fa.context_values({"ti": FakeTI(0)})


class WithFakeAirflow(Base):
    def setUp(self):
        super().setUp()
        self.exc = self.with_fake_airflow()

    def test_exit_100_is_airflow_fail_exception(self):
        with self.assertRaises(self.exc.AirflowFailException) as cm:
            self.run_ctx([self.route(100)])
        # ...and still this module's class, for callers that catch it.
        self.assertIsInstance(cm.exception, fa.FailClosedError)
        self.assertEqual(cm.exception.status, 100)

    def test_exit_64_is_airflow_fail_exception(self):
        with self.assertRaises(self.exc.AirflowFailException) as cm:
            self.run_ctx([self.route(64)])
        self.assertIsInstance(cm.exception, fa.RouteConfigError)

    def test_exit_75_is_plain_airflow_exception(self):
        with self.assertRaises(self.exc.AirflowException) as cm:
            self.run_ctx([self.route(75)])
        self.assertNotIsInstance(cm.exception, self.exc.AirflowFailException)
        self.assertIsInstance(cm.exception, fa.RetryableRouteError)

    def test_exit_0_unchanged(self):
        self.assertEqual(self.run_ctx([self.route(0)])["state"], "COMPLETE")


@unittest.skipUnless(os.environ.get("FENCECERT") and
                     os.access(os.environ.get("FENCECERT", ""), os.X_OK),
                     "set $FENCECERT to the fencecert binary")
class RealRoute(Base):
    def test_two_tries_one_mutation(self):
        with open(os.path.join(self.tmp, "part.csv"), "w") as f:
            f.write('row_key,payload\nk1,hello\nk2,"a,b"\n')
        ident = fa.identity_from_context(context())
        ident.update({"release": "r1", "deployment": "d1",
                      "workload": "load_orders", "target": "events"})
        workload = {"identity": ident,
                    "intent": {"pack": "pk1", "strategy": "append",
                               "target_contract": "events.v1",
                               "schema": "s1"},
                    "source": "part.csv", "table": "events"}
        with open(os.path.join(self.tmp, "w.json"), "w") as f:
            json.dump(workload, f)
        binary = os.environ["FENCECERT"]
        first = self.run_ctx(None, context(1), fencecert=binary)
        again = self.run_ctx(None, context(2), fencecert=binary)
        self.assertEqual(first["state"], "COMPLETE")
        self.assertTrue(first["mutated"])
        self.assertEqual(again["operation_id"], first["operation_id"])
        self.assertFalse(again["mutated"])
        self.assertEqual(again["try_number"], 2)


if __name__ == "__main__":
    unittest.main()
