#!/bin/sh
# Runs every test (C unit tests are driven from pytest) with a Python that
# sees Debian's packages. The last line is pytest's summary.
set -u
cd "$(dirname "$0")/.."
PY=$(scripts/find-python.sh) || { echo "run-tests: no python3 with pandas, matplotlib and scipy found" >&2; echo "0 passed, 1 failed"; exit 1; }
exec "$PY" -m pytest -q -p no:cacheprovider tests "$@"
