#!/bin/sh
# Prints the Python 3 interpreter the harness runs under: the first of $PERFSTUDY_PYTHON, the
# repository's .venv/ (python3 -m venv .venv && .venv/bin/pip install -r requirements.txt), then
# /usr/bin/python3, python3 and /usr/local/bin/python3 on PATH, that can import pandas, matplotlib,
# scipy and tomllib (3.11 or newer), whichever `python3` comes first on PATH. It looks them up
# without importing them: make reads this on every call, and importing them takes a second.
# Exit 1, printing nothing, when none can.
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd) || exit 1
for candidate in "${PERFSTUDY_PYTHON-}" "$root/.venv/bin/python3" /usr/bin/python3 python3 /usr/local/bin/python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import importlib.util as u, sys
sys.exit(0 if all(u.find_spec(m) for m in ("pandas", "matplotlib", "scipy", "tomllib")) else 1)' >/dev/null 2>&1; then
        command -v "$candidate"
        exit 0
    fi
done
exit 1
