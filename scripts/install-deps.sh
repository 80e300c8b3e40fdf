#!/bin/sh
# Installs the Debian packages the project needs that are missing, and nothing
# else. Safe to run repeatedly: it only calls apt-get when something is absent.
set -eu
PACKAGES="gcc clang libclang-rt-14-dev libomp-dev make python3 python3-numpy python3-pandas python3-matplotlib
python3-scipy python3-pytest python3-pytest-xdist python3-jinja2 chromium libopenblas-serial-dev gnuplot-nox likwid libpapi-dev
papi-tools valgrind
openmpi-bin libopenmpi-dev hwloc python3-simgrid libsimgrid-dev
autoconf automake libtool pkg-config libnuma-dev libstarpu-dev cmake"
# What only the tests need (make test, test-long, test-all: `install-deps.sh --test`): PyTorch, the
# generator of the reference fixtures, whose self-checks tests/reference/ runs
TEST_PACKAGES="python3-torch"
[ "${1:-}" = "--test" ] && shift && PACKAGES="$PACKAGES $TEST_PACKAGES"
[ $# -gt 0 ] && PACKAGES="$*"
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
