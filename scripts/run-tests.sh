#!/bin/sh
# Runs every test (C unit tests are driven from pytest) with a Python that
# sees Debian's packages. The last line is the summary of all of them.
#
# With pytest-xdist (Debian: python3-pytest-xdist), in two parts: the tests not
# marked `serial` in one worker process more than the CPUs (--dist loadgroup: tests/conftest.py
# groups a file's tests in one worker, so its module fixtures are built once,
# except files whose tests share nothing, and hands the longest files out
# first), then the `serial` ones (tests/conftest.py: measured timings, or MPI
# training on both cores) by themselves. Without it, or with
# RUN_TESTS_WORKERS=0, everything in one process as before. Arguments go to
# pytest; paths among them replace `tests`.
set -u
cd "$(dirname "$0")/.."
PY=$(scripts/find-python.sh) || { echo "run-tests: no python3 with pandas, matplotlib and scipy found" >&2; echo "0 passed, 1 failed"; exit 1; }
targets=tests
for arg in "$@"; do
    case "$arg" in -*) ;; *) [ -e "${arg%%::*}" ] && targets= ;; esac
done
# the tier (tests/conftest.py, LONG_TESTS): quick (make test) leaves the long tier out, long runs it
# alone, all runs both; tests named by path run whatever their tier unless RUN_TESTS_TIER says
tier=${RUN_TESTS_TIER:-$([ -n "$targets" ] && echo quick || echo all)}
case "$tier" in
    quick) only="not long" ;;
    long)  only="long" ;;
    all)   only="" ;;
    *) echo "run-tests: RUN_TESTS_TIER=$tier: not quick, long or all" >&2; echo "0 passed, 1 failed"; exit 2 ;;
esac
marked() { [ -n "$only" ] && echo "($1) and ($only)" || echo "$1"; }
# one worker more than the CPUs: the tests beside each other wait on their subprocesses (mpirun,
# Slurm, pipes, sleeps) about a fifth of the time, which a third worker fills on 2 cores (measured:
# make test 9:49 with 2 workers, 8:47 with 3, on the 2-vCPU Xeon VM); the timed tests run alone after
workers=${RUN_TESTS_WORKERS:-$(( $(nproc 2>/dev/null || echo 1) + 1 ))}
if [ "$workers" = 0 ] || ! "$PY" -c "import xdist" 2>/dev/null; then
    exec "$PY" -m pytest -q -p no:cacheprovider ${only:+-m "$only"} $targets "$@"
fi
log=$(mktemp) || exit 1
trap 'rm -f "$log" "$log.rc"' EXIT
# shown as it runs and kept for the summary; the pipe would hide pytest's exit status, so it is kept aside
{ "$PY" -m pytest -q -p no:cacheprovider -n "$workers" --dist loadgroup -m "$(marked "not serial")" $targets "$@"; echo $? > "$log.rc"; } | tee "$log"
first=$(cat "$log.rc")
{ "$PY" -m pytest -q -p no:cacheprovider -m "$(marked serial)" $targets "$@"; echo $? > "$log.rc"; } | tee -a "$log"
second=$(cat "$log.rc")
# one summary line for both parts: the counts of each outcome added up
"$PY" - "$log" <<'PYEOF'
import re, sys
counts = {}
for line in open(sys.argv[1]):
    if re.search(r"\b(passed|failed|error|errors|skipped|deselected|no tests ran)\b.* in [0-9.]+s", line):
        for n, what in re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|warnings?)", line):
            what = {"error": "errors", "warning": "warnings"}.get(what, what)
            counts[what] = counts.get(what, 0) + int(n)
order = ["passed", "failed", "errors", "skipped", "xfailed", "xpassed", "warnings"]
print(", ".join(f"{counts[k]} {k}" for k in order if counts.get(k)) or "no tests ran")
PYEOF
# exit 5 is "no tests collected" (a part can be empty when paths are given)
[ "$first" -eq 0 ] || [ "$first" -eq 5 ] || exit "$first"
[ "$second" -eq 0 ] || [ "$second" -eq 5 ] || exit "$second"
exit 0
