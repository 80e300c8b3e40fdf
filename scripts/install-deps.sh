#!/bin/sh
# Gets what the project needs, where it may. On Debian, as root or with a sudo that asks no password:
# installs the missing Debian packages through apt, and nothing else. Elsewhere (a cluster node with
# modules, no root): installs nothing, and names each missing piece in one line, what it costs and
# how to get it (scripts/needs.txt, and the build's probe); exit 0 when the study can run (make, a C
# compiler with OpenMP, a Python with the harness's libraries), 2 when it cannot.
#   install-deps.sh            what make run needs
#   install-deps.sh --test     and what only the tests need (TEST_PACKAGES)
#   install-deps.sh PKG ...    these Debian packages only (apt where it can, else nothing)
#   install-deps.sh --mode     prints "apt" or "report": which of the two this machine gets
# Safe to run repeatedly: apt is called only when something is absent.
set -eu
cd "$(dirname "$0")/.."
PACKAGES="gcc clang libclang-rt-14-dev libomp-dev make python3 python3-numpy python3-pandas python3-matplotlib
python3-scipy python3-pytest python3-pytest-xdist python3-jinja2 chromium libopenblas-serial-dev gnuplot-nox likwid libpapi-dev
papi-tools valgrind
openmpi-bin libopenmpi-dev hwloc python3-simgrid libsimgrid-dev
autoconf automake libtool pkg-config libnuma-dev libstarpu-dev cmake"
# What only the tests need (make test, test-long, test-all: `install-deps.sh --test`): PyTorch, the
# generator of the reference fixtures, whose self-checks tests/reference/ runs
TEST_PACKAGES="python3-torch"

apt_usable() {
    command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1 || return 1
    [ "$(id -u)" -eq 0 ] && return 0
    command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1
}
mode=report
apt_usable && mode=apt
if [ "${1-}" = --mode ]; then echo "$mode"; exit 0; fi
[ "${1:-}" = "--test" ] && shift && PACKAGES="$PACKAGES $TEST_PACKAGES"
[ $# -gt 0 ] && PACKAGES="$*"

# Not Debian, or no rights: nothing is installed; what is missing is named, with its cost.
if [ "$mode" = report ]; then
    [ $# -gt 0 ] && { echo "install-deps: cannot install $* here (no apt, or not root and no sudo): install them another way" >&2; exit 0; }
    status=0
    while IFS='|' read -r name test costs how; do
        name=$(echo "$name" | tr -d ' ')
        case "$name" in ''|'#'*) continue ;; esac
        case "$test" in
            *python-module*) py=$(scripts/find-python.sh) || py=false
                test="\"$py\" -c 'import importlib.util as u, sys; sys.exit(0 if all(map(u.find_spec, sys.argv[1:])) else 1)' ${test#*python-module}" ;;
        esac
        if ! sh -c "$test" >/dev/null 2>&1; then
            echo "install-deps: missing $name (costs $(echo "$costs" | sed 's/^ *//; s/ *$//')); get it: $(echo "$how" | sed 's/^ *//')" >&2
            case "$name" in make|python) status=2 ;; esac
        fi
    done < scripts/needs.txt
    if command -v make >/dev/null 2>&1; then
        sh scripts/probe-build.sh build/probe.mk
        sed -n 's/^left-out \([^:]*\): /install-deps: missing \1: /p' build/probe.txt >&2
        grep -q '^PROBED_COMPILERS := [^ ]' build/probe.mk || status=2
    fi
    [ "$status" -eq 0 ] || echo "install-deps: the study cannot run here without make, a Python for the harness and a C compiler with OpenMP (above)" >&2
    exit "$status"
fi

missing_packages() {
    missing=""
    for p in $PACKAGES; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing="$missing $p"
        fi
    done
}
missing_packages
[ -z "$missing" ] && exit 0
# Two callers at once (the test workers, each asking for what its tests need) would race for
# dpkg's lock and the loser would fail: callers of this script queue on a lock of their own and
# look again once they hold it; apt itself waits for any other holder of dpkg's lock (an
# unattended upgrade) instead of failing at once.
# (opened for reading: flock needs no more, and another user's lock file is still readable)
lock="${TMPDIR:-/tmp}/perfstudy-install-deps.lock"
[ -e "$lock" ] || : > "$lock"
exec 9< "$lock"
flock 9
missing_packages
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
WAIT="-o DPkg::Lock::Timeout=600"
# shellcheck disable=SC2086
$SUDO apt-get $WAIT update -q >&2
# shellcheck disable=SC2086
$SUDO apt-get $WAIT install -y -q --no-install-recommends $missing >&2
