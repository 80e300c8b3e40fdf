#!/bin/sh
# Installs the Debian packages the project needs that are missing, and nothing
# else. Safe to run repeatedly: it only calls apt-get when something is absent.
set -eu
PACKAGES="gcc clang libclang-rt-14-dev libomp-dev make python3 python3-numpy python3-pandas python3-matplotlib
python3-scipy python3-pytest python3-pytest-xdist python3-jinja2 chromium libopenblas-serial-dev gnuplot-nox likwid libpapi-dev
papi-tools valgrind
openmpi-bin libopenmpi-dev hwloc python3-simgrid"
[ $# -gt 0 ] && PACKAGES="$*"
missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing >&2
