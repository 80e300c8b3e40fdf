#!/bin/sh
# Prints a Python 3 interpreter that can import the Debian-packaged libraries
# the harness needs, whichever `python3` comes first on PATH.
for candidate in /usr/bin/python3 python3 /usr/local/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import pandas, matplotlib, scipy' >/dev/null 2>&1; then
        command -v "$candidate"
        exit 0
    fi
done
exit 1
