"""fencecert_airflow -- run a fencecert route from an Airflow task.

Standard library only; importing this module never imports Airflow.  A task
calls it with its context::

    from airflow.decorators import task
    import fencecert_airflow

    @task(retries=3)
    def load_orders(**context):
        return fencecert_airflow.run_from_context(
            context,
            journal="postgresql://fencecert@db/journal",
            target="sqlite:/data/warehouse.db",
            workload="/etc/pipelines/orders/p0.json",
            base_dir="/var/lib/fencecert")

The route runs as a child process with the SPEC section 7 environment built
from the context (try number, a fresh XCom directory per try, a run
directory per task instance).  Its exit status becomes what Airflow must do:

    0    the operation is COMPLETE: the parsed return.json is returned (and
         so pushed to XCom as evidence -- never as the correctness boundary:
         the journal and the target fence are that)
    75   transient: a retryable exception (AirflowException when Airflow is
         importable, else RetryableRouteError); Airflow may retry
    100  fail-closed stop (COMMIT_UNKNOWN, INTENT_CONFLICT, ...):
         AirflowFailException when importable, else FailClosedError -- no
         retry; an operator runs `fencecert recover` (docs/runbook.md)
    64   usage or configuration error: also no retry (RouteConfigError, an
         AirflowFailException when importable)

Anything else (a signal, an unexpected status, a timeout) is retryable: the
next try reconciles through the journal before touching the target.

When Airflow is importable the exceptions raised are both the Airflow class
and this module's class (e.g. an AirflowFailException that is also a
FailClosedError), so callers can catch either.
"""

import importlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys

__all__ = [
    "EXIT_COMPLETE", "EXIT_RETRY", "EXIT_STOP", "EXIT_USAGE",
    "FencecertRouteError", "RetryableRouteError", "FailClosedError",
    "RouteConfigError", "context_values", "identity_from_context",
    "route_dirs", "route_env", "run_route", "run_from_context",
]

EXIT_COMPLETE, EXIT_USAGE, EXIT_RETRY, EXIT_STOP = 0, 64, 75, 100

# How much of the route's stderr an exception message carries.
STDERR_TAIL_CHARS = 2000


class FencecertRouteError(RuntimeError):
    """A route attempt did not complete; `status` is its exit status (a
    negative number for a signal, None for a timeout)."""

    def __init__(self, status, message, stderr_tail=""):
        super().__init__(message)
        self.status = status
        self.stderr_tail = stderr_tail


class RetryableRouteError(FencecertRouteError):
    """Exit 75 (or anything unexpected): the orchestrator may retry."""


class FailClosedError(FencecertRouteError):
    """Exit 100: the route stopped because the outcome cannot be proven (or
    the intent conflicts).  Retrying cannot help; an operator must look."""


class RouteConfigError(FencecertRouteError):
    """Exit 64: bad workload, URL or arguments.  Retrying cannot help."""


# ---- mapping to Airflow's exceptions, looked up at raise time -------------

_combined = {}


def _airflow_exception(name):
    """airflow.exceptions.<name>, or None when Airflow is not importable."""
    try:
        module = importlib.import_module("airflow.exceptions")
    except ImportError:
        return None
    return getattr(module, name, None)


def _exception_class(ours, airflow_name):
    """`ours`, or a class that is both `ours` and Airflow's `airflow_name`
    so that Airflow's task runner reacts to it as it documents."""
    theirs = _airflow_exception(airflow_name)
    if theirs is None:
        return ours
    key = (ours, theirs)
    if key not in _combined:
        _combined[key] = type(ours.__name__, (ours, theirs),
                              {"__module__": __name__})
    return _combined[key]


def _fail(status, stderr):
    """Raise the exception exit `status` stands for."""
    tail = (stderr or "")[-STDERR_TAIL_CHARS:]
    what = ("timed out" if status is None else
            "killed by signal %d" % -status if status < 0 else
            "exited %d" % status)
    message = "fencecert route %s" % what
    if tail.strip():
        message += ": " + tail.strip().splitlines()[-1]
    if status == EXIT_STOP:
        cls = _exception_class(FailClosedError, "AirflowFailException")
        message += " (fail-closed: do not retry; see 'fencecert recover')"
    elif status == EXIT_USAGE:
        cls = _exception_class(RouteConfigError, "AirflowFailException")
    else:
        cls = _exception_class(RetryableRouteError, "AirflowException")
    raise cls(status, message, tail)


# ---- the environment ------------------------------------------------------

def _attr(obj, name, default=None):
    """obj.name for a TaskInstance, obj[name] for a dict-like fake."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def context_values(context):
    """The values of an Airflow task context this module uses: dag_id,
    task_id, run_id, map_index (-1 when not mapped) and try_number."""
    ti = context.get("ti") or context.get("task_instance")
    if ti is None:
        raise RouteConfigError(EXIT_USAGE, "the Airflow context has no 'ti'")
    try_number = int(_attr(ti, "try_number", 0) or 0)
    if try_number < 1:
        raise RouteConfigError(EXIT_USAGE, "try_number %r is not a positive "
                               "number" % _attr(ti, "try_number"))
    map_index = _attr(ti, "map_index", -1)
    return {
        "dag_id": str(_attr(ti, "dag_id", "") or context.get("dag_id", "")),
        "task_id": str(_attr(ti, "task_id", "")),
        "run_id": str(_attr(ti, "run_id", "") or context.get("run_id", "")),
        "map_index": -1 if map_index is None else int(map_index),
        "try_number": try_number,
    }


def _iso(value):
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def identity_from_context(context):
    """Identity fields for a workload file from the context: the dag, the
    data interval (the run's *logical* identity) and the mapped partition.
    Never the try number, the run id, a host or the time: a retry and a
    re-run of the same interval must derive the same operation_id."""
    v = context_values(context)
    start = context.get("data_interval_start")
    end = context.get("data_interval_end")
    if start is None or end is None:
        raise RouteConfigError(EXIT_USAGE, "the Airflow context has no data "
                               "interval; pass the identity explicitly")
    return {
        "dag": v["dag_id"],
        "run": _iso(start),
        "interval": "%s/%s" % (_iso(start), _iso(end)),
        "partition": str(v["map_index"]),
    }


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _part(text):
    """A path component (or lease owner piece) from any string."""
    return _UNSAFE.sub("_", str(text)) or "_"


def route_dirs(values, base_dir):
    """(xcom_dir, run_dir) for one try: the XCom dir is per try (Airflow
    clears XCom when a try starts), the run dir per task instance (local
    scratch that survives tries on the same worker, lost with the pod)."""
    task = os.path.join(_part(values["dag_id"]), _part(values["run_id"]),
                        _part(values["task_id"]),
                        "map%d" % values["map_index"])
    xcom = os.path.join(base_dir, "xcom", task,
                        "try-%d" % values["try_number"])
    return xcom, os.path.join(base_dir, "run", task)


def route_env(*, journal, target, workload, try_number, xcom_dir, run_dir,
              lease_owner=None, lease_ttl_ms=None, fencecert=None,
              base_env=None):
    """The SPEC section 7 environment of one attempt.  The failpoint channel
    is never passed on: outside the harness every failpoint is a no-op."""
    env = dict(os.environ if base_env is None else base_env)
    env.pop("FENCECERT_FAILPOINT_FD", None)
    env.update({
        "FENCECERT_JOURNAL": journal,
        "FENCECERT_TARGET": target,
        "FENCECERT_WORKLOAD": workload,
        "FENCECERT_TRY_NUMBER": str(int(try_number)),
        "FENCECERT_XCOM_DIR": xcom_dir,
        "FENCECERT_RUN_DIR": run_dir,
    })
    if lease_owner:
        env["FENCECERT_LEASE_OWNER"] = lease_owner
    if lease_ttl_ms:
        env["FENCECERT_LEASE_TTL_MS"] = str(int(lease_ttl_ms))
    if fencecert:
        env["FENCECERT_BIN"] = fencecert
    return env


# ---- running one attempt ---------------------------------------------------

def _fresh_xcom(xcom_dir):
    """Airflow clears XCom at the start of a try; so does this: evidence a
    previous run left in this directory must not be taken for ours."""
    os.makedirs(xcom_dir, exist_ok=True)
    try:
        os.unlink(os.path.join(xcom_dir, "return.json"))
    except FileNotFoundError:
        pass


def _read_return(xcom_dir, stderr):
    path = os.path.join(xcom_dir, "return.json")
    try:
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
    except (OSError, ValueError) as e:
        # COMPLETE without evidence: a retry hands back the recorded result
        # without touching the target, so asking for one is safe.
        cls = _exception_class(RetryableRouteError, "AirflowException")
        raise cls(EXIT_COMPLETE, "fencecert route exited 0 but its "
                  "return.json is unreadable (%s)" % e, stderr or "")
    if not isinstance(result, dict):
        cls = _exception_class(RetryableRouteError, "AirflowException")
        raise cls(EXIT_COMPLETE, "fencecert route exited 0 but its "
                  "return.json is not a JSON object", stderr or "")
    return result


def run_route(argv, env, *, xcom_dir, timeout=None, echo=True):
    """Run one attempt of the route `argv` with `env` and map its exit status
    (module docstring).  Returns the parsed return.json on exit 0.  The
    route's stdout and stderr are echoed to ours (the task log) unless
    `echo` is false.  A timeout kills the route's whole process group."""
    _fresh_xcom(xcom_dir)
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        status = None
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    if echo:
        sys.stdout.write(out)
        sys.stderr.write(err)
    if status == EXIT_COMPLETE:
        return _read_return(xcom_dir, err)
    _fail(status, err)
    return None  # not reached: _fail raises


def run_from_context(context, *, journal, target, workload, base_dir,
                     argv=None, fencecert="fencecert", lease_ttl_ms=None,
                     timeout=None):
    """Run `argv` (default: `fencecert route`) as this try of the task in
    `context`.  Returns the route's return.json as a dict (Airflow pushes
    it to XCom); raises as run_route() does."""
    values = context_values(context)
    xcom_dir, run_dir = route_dirs(values, base_dir)
    os.makedirs(run_dir, exist_ok=True)
    owner = "airflow:%s:%s:%s:map%d:try%d" % (
        _part(values["dag_id"]), _part(values["run_id"]),
        _part(values["task_id"]), values["map_index"], values["try_number"])
    binary = shutil.which(fencecert) or fencecert
    env = route_env(journal=journal, target=target, workload=workload,
                    try_number=values["try_number"], xcom_dir=xcom_dir,
                    run_dir=run_dir, lease_owner=owner[:127],
                    lease_ttl_ms=lease_ttl_ms, fencecert=binary)
    return run_route(argv or [binary, "route"], env, xcom_dir=xcom_dir,
                     timeout=timeout)
