#!/bin/sh
# What this machine can build, found by trying, not by package names: writes the make fragment
# $1 (build/probe.mk), which the Makefile includes, and the same facts one a line in $1's
# directory as probe.txt (`perfstudy doctor` and the tests read it).
#
#   probe.mk:   PROBED_COMPILERS := gcc clang            compile and run an OpenMP C11 program
#               FLAGS_gcc := -march=native ...             the optional flags the compiler accepts
#               MPI_gcc := yes                             mpicc, with that compiler under it, links MPI + OpenMP
#               HAVE_STARPU / STARPU_CFLAGS                StarPU 1.3's headers (pkg-config starpu-1.3, or STARPU_HOME)
#               NOSV_FROM := home | vendored | none        an installed nOS-V (NOSV_HOME, pkg-config nos-v), or the
#                                                          vendored sources (autotools and libnuma needed), or none
#               OVNI_FROM := home | vendored | none        likewise for ovni (OVNI_HOME, pkg-config ovni; cmake)
#               HAVE_SMPICC, HAVE_ASAN, HAVE_FUZZER
#   probe.txt:  "left-out NAME: REASON" for each thing not buildable, "compiler NAME: VERSION" for each
#               compiler that passed, "found NAME: DETAIL" for the rest that is there, and
#               "note NAME: ..." for a flag a compiler rejects (it is built without it)
#
# Probing takes a second or two: it is redone only when what it depends on changes (the environment
# below, which tools are on PATH, this script), so that every make, and every test's make, does not
# pay it, and a module loaded or a package installed since is seen (on Debian, dpkg's status file
# changes with every install: a library that puts nothing on PATH, such as libclang-rt, counts too).
set -u
out=$1
dir=$(dirname "$out")
mkdir -p "$dir"
candidates=${COMPILERS:-gcc clang}
key=$(printf '%s\n' "$candidates" "${PATH-}" "${CPATH-}" "${LIBRARY_PATH-}" "${PKG_CONFIG_PATH-}" \
      "${PKG_CONFIG_LIBDIR-}" "${NOSV_HOME-}" "${OVNI_HOME-}" "${STARPU_HOME-}" "${MPICC-}" "${SMPICC-}" \
      "${OVNI-}" "${MARCH:--march=native}" "$(cksum < "$0")" \
      "$(for t in $candidates mpicc smpicc cmake autoreconf automake libtoolize pkg-config; do command -v "$t"; done)" \
      "$(pkg-config --modversion starpu-1.3 nos-v ovni 2>/dev/null)" "$(ls /usr/include/numa.h 2>/dev/null)" \
      "$(ls -l --time-style=+%s /var/lib/dpkg/status 2>/dev/null)" \
      | cksum | cut -d' ' -f1)
if [ -f "$out" ] && [ "$(sed -n 's/^PROBE_KEY := //p' "$out")" = "$key" ]; then
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/perfstudy-probe.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mk=$tmp/probe.mk
txt=$tmp/probe.txt
: > "$mk"; : > "$txt"
echo "PROBE_KEY := $key" >> "$mk"
found()    { echo "found $1: $2" >> "$txt"; }
left_out() { echo "left-out $1: $2" >> "$txt"; }
have()     { command -v "$1" >/dev/null 2>&1; }

cat > "$tmp/omp.c" <<'EOF'
#include <omp.h>
#include <stdio.h>
int main(void) { int n = 0;
#pragma omp parallel reduction(+:n)
    n += 1;
    printf("%d\n", n); return n > 0 ? 0 : 1; }
EOF
cat > "$tmp/mpi.c" <<'EOF'
#include <mpi.h>
#include <omp.h>
int main(int argc, char **argv) { int p; MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &p);
    MPI_Finalize(); return omp_get_max_threads() > 0 ? 0 : 1; }
EOF
printf 'int main(void) { return 0; }\n' > "$tmp/empty.c"

# a flag is accepted when the compiler builds with it and says nothing about it
accepts() { # compiler flag...
    c=$1; shift
    "$c" -std=c11 "$@" -c "$tmp/empty.c" -o "$tmp/empty.o" > "$tmp/said" 2>&1 && [ ! -s "$tmp/said" ]
}

compilers=""
for c in $candidates; do
    if ! have "$c"; then
        left_out "$c" "not on PATH (a module, e.g. 'module load $c', or COMPILERS=\"...\" to name the compilers there are)"
        continue
    fi
    if ! "$c" -std=c11 -fopenmp "$tmp/omp.c" -o "$tmp/omp-$c" > "$tmp/said" 2>&1 || ! "$tmp/omp-$c" > /dev/null 2>&1; then
        left_out "$c" "cannot compile and run an OpenMP C11 program: $(head -1 "$tmp/said")"
        continue
    fi
    # without it products may be contracted into FMAs, and the variants stop being bit-identical
    if ! accepts "$c" -ffp-contract=off; then
        left_out "$c" "rejects -ffp-contract=off, which bit-identity needs"
        continue
    fi
    flags=""
    for f in "${MARCH:--march=native}" -fno-math-errno -fno-trapping-math -g; do
        if accepts "$c" "$f"; then flags="$flags $f"; else echo "note $c: rejects $f; built without it" >> "$txt"; fi
    done
    compilers="$compilers $c"
    echo "FLAGS_$c :=$flags" >> "$mk"
    echo "compiler $c: $("$c" --version 2>/dev/null | head -1), OpenMP ok" >> "$txt"
    mpicc=${MPICC:-mpicc}
    if have "$mpicc" && OMPI_CC=$c MPICH_CC=$c I_MPI_CC=$c "$mpicc" -fopenmp "$tmp/mpi.c" -o "$tmp/mpi-$c" > "$tmp/said" 2>&1; then
        echo "MPI_$c := yes" >> "$mk"
        found "mpi:$c" "$mpicc with $c"
    elif have "$mpicc"; then
        left_out "mpi:$c" "$mpicc with $c under it cannot build an MPI + OpenMP program: $(head -1 "$tmp/said")"
    else
        left_out "mpi:$c" "no $mpicc on PATH: gpt2-mpi and the distributed studies (a module: 'module load openmpi')"
    fi
done
echo "PROBED_COMPILERS :=$compilers" >> "$mk"
first=$(echo $compilers | cut -d' ' -f1)

# StarPU: headers only (the variant opens the library at run time)
starpu_cflags=""
if [ -n "${STARPU_HOME-}" ]; then
    starpu_cflags="-I$STARPU_HOME/include/starpu/1.3"
elif have pkg-config && pkg-config --exists starpu-1.3 2>/dev/null; then
    starpu_cflags=$(pkg-config --cflags starpu-1.3)
fi
printf '#define _GNU_SOURCE\n#include <starpu.h>\nint main(void) { return STARPU_MAJOR_VERSION > 0 ? 0 : 1; }\n' > "$tmp/starpu.c"
if [ -n "$first" ] && [ -n "$starpu_cflags" ] && "$first" -std=c11 $starpu_cflags -c "$tmp/starpu.c" -o "$tmp/starpu.o" > /dev/null 2>&1; then
    echo "HAVE_STARPU := yes" >> "$mk"
    echo "STARPU_CFLAGS := $starpu_cflags" >> "$mk"
    found starpu "headers: $starpu_cflags"
else
    left_out starpu "StarPU 1.3's headers not found (pkg-config starpu-1.3, or STARPU_HOME): the starpu variant (a module, or 'spack install starpu@1.3')"
fi

# ovni, then nOS-V (configured against it)
ovni_home=${OVNI_HOME-}
[ -z "$ovni_home" ] && have pkg-config && pkg-config --exists ovni 2>/dev/null && ovni_home=$(pkg-config --variable=prefix ovni)
if [ "${OVNI-}" = no ]; then
    echo "OVNI_FROM := none" >> "$mk"
    left_out ovni "OVNI=no: gpt2-nosv records no runtime trace"
elif [ -n "$ovni_home" ] && [ -f "$ovni_home/include/ovni.h" ]; then
    echo "OVNI_FROM := home" >> "$mk"; echo "OVNI_PREFIX := $ovni_home" >> "$mk"
    found ovni "installed at $ovni_home"
elif have cmake; then
    echo "OVNI_FROM := vendored" >> "$mk"
    found ovni "the vendored sources, built with $(cmake --version | head -1)"
else
    echo "OVNI_FROM := none" >> "$mk"
    left_out ovni "no cmake to build the vendored sources, and no installed ovni (OVNI_HOME): gpt2-nosv records no runtime trace ('module load cmake', or OVNI_HOME=...)"
fi
nosv_home=${NOSV_HOME-}
[ -z "$nosv_home" ] && have pkg-config && pkg-config --exists nos-v 2>/dev/null && nosv_home=$(pkg-config --variable=prefix nos-v)
printf '#include <numa.h>\nint main(void) { return numa_available(); }\n' > "$tmp/numa.c"
if [ -n "$nosv_home" ] && [ -f "$nosv_home/include/nosv.h" ]; then
    echo "NOSV_FROM := home" >> "$mk"; echo "NOSV_PREFIX := $nosv_home" >> "$mk"
    found nosv "installed at $nosv_home"
elif ! have autoreconf || ! have automake || ! have libtoolize; then
    echo "NOSV_FROM := none" >> "$mk"
    left_out nosv "no autotools (autoreconf, automake, libtool) to build the vendored nOS-V, and no installed one (NOSV_HOME): the nosv variant ('module load nos-v' and NOSV_HOME, or 'module load autotools')"
elif [ -z "$first" ] || ! "$first" "$tmp/numa.c" -o "$tmp/numa" -lnuma > /dev/null 2>&1; then
    echo "NOSV_FROM := none" >> "$mk"
    left_out nosv "no libnuma (numa.h, -lnuma) to build the vendored nOS-V, and no installed one (NOSV_HOME): the nosv variant"
else
    echo "NOSV_FROM := vendored" >> "$mk"
    found nosv "the vendored sources, built with autotools"
fi

# the simulated cluster's build (make smpi), and the test builds: sanitizers and libFuzzer
if have "${SMPICC:-smpicc}"; then
    echo "HAVE_SMPICC := yes" >> "$mk"; found smpicc "$(command -v "${SMPICC:-smpicc}")"
else
    left_out smpi "no smpicc (SimGrid): predict --distributed --engine smpi (the replay engine still works; 'spack install simgrid')"
fi
printf 'int main(void) { return 0; }\n' > "$tmp/asan.c"
if have gcc && gcc -fsanitize=address,undefined "$tmp/asan.c" -o "$tmp/asan" > /dev/null 2>&1 && "$tmp/asan" > /dev/null 2>&1; then
    echo "HAVE_ASAN := yes" >> "$mk"
else
    left_out asan "gcc cannot build and run with -fsanitize=address,undefined: the sanitizer tests"
fi
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$tmp/fuzz.c"
if have clang && clang -fsanitize=fuzzer,address "$tmp/fuzz.c" -o "$tmp/fuzz" > /dev/null 2>&1; then
    echo "HAVE_FUZZER := yes" >> "$mk"
else
    left_out fuzz "no clang with libFuzzer (-fsanitize=fuzzer): the fuzzing targets"
fi

mv "$txt" "$dir/probe.txt"
mv "$mk" "$out"
