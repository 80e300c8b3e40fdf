#!/bin/sh
# Prints a Python 3 interpreter that can import the Debian-packaged libraries
# the harness needs, whichever `python3` comes first on PATH. It looks them up without
# importing them: make reads this on every call, and importing them takes a second.
for candidate in /usr/bin/python3 python3 /usr/local/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import importlib.util as u, sys
sys.exit(0 if all(u.find_spec(m) for m in ("pandas", "matplotlib", "scipy")) else 1)' >/dev/null 2>&1; then
        command -v "$candidate"
        exit 0
    fi
done
exit 1
