#!/bin/sh
# The test command (README, .ci/run): pytest from a virtual environment that this
# script makes once in .venv/ (git-ignored), so it works where the system Python
# refuses `pip install` (Debian/Ubuntu: externally-managed-environment).
#   sh tests/run.sh [pytest arguments]        e.g.  sh tests/run.sh -q tests/test_core.py
# With no arguments it runs the whole suite on 2 workers (pytest-xdist, one test file
# per worker at a time: --dist loadfile keeps a file's shared fixtures in one process);
# NOTREST_TEST_WORKERS sets how many (0: in this process only).
# NOTREST_TEST_PYTHON picks the interpreter (default python3), NOTREST_VENV the
# folder. The end-to-end tests run the real clients from .e2e/ (see tests/e2e/rig.py)
# and skip with one line each when they are not installed.
set -eu
cd "$(dirname "$0")/.."
py=${NOTREST_TEST_PYTHON:-python3}
venv=${NOTREST_VENV:-.venv}
if ! command -v "$py" >/dev/null 2>&1; then
  printf 'tests/run.sh: no %s on PATH (Debian/Ubuntu: apt-get install python3 python3-venv)\n' "$py" >&2
  exit 3
fi
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pytest, xdist' >/dev/null 2>&1; then
  if ! "$py" -m venv "$venv" >/dev/null 2>&1; then
    rm -rf "$venv"
    printf 'tests/run.sh: %s cannot make a virtual environment (Debian/Ubuntu: apt-get install python3-venv)\n' "$py" >&2
    exit 3
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pytest pytest-xdist
fi
if [ $# -eq 0 ] && [ "${NOTREST_TEST_WORKERS:-2}" != 0 ]; then
  set -- -n "${NOTREST_TEST_WORKERS:-2}" --dist loadfile
fi
exec "$venv/bin/python" -m pytest "$@"
