#!/bin/sh
# airflow_helper.sh -- the unit tests of routes/airflow/fencecert_airflow.py
# (standard library unittest; Airflow is not needed and is kept out even if
# installed).  $FENCECERT (set by tests/run-all) lets one test run the real
# `fencecert route` twice through the helper: one mutation, two COMPLETEs.
set -eu

FENCECERT=${FENCECERT:-$PWD/${BUILD:-build}/fencecert}
export FENCECERT
# No __pycache__ in the source tree.
export PYTHONDONTWRITEBYTECODE=1
cd "$(dirname "$0")/../../routes/airflow"
python3 -m unittest -v test_fencecert_airflow
