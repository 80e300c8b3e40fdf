# gpt2-perfstudy. `make` builds every variant this machine can build, with every C compiler it has
# (gcc and clang by default; COMPILERS="gcc icx" names others), and ends with a summary of what it
# built and what it left out, and why. `make all-variants` fails if anything was left out. On Debian
# as root (or with sudo), `make test` and `make run` first install what is missing
# (scripts/install-deps.sh); elsewhere they install nothing and name what is missing.
#
#   build/<compiler>/<kernels>/gpt2-<variant>   compiler: those found; kernels: fast reference
#   build/gpt2-<variant>                        links to build/<first compiler>/<KERNELS>/gpt2-<variant>
#
# Every compiler x kernel-set tree is built; KERNELS (default fast) only picks
# what build/gpt2-<variant> links to.

KERNELS   ?= fast
# the target of the variants' and ceiling benchmarks' builds: this machine's CPU, unless a build is
# made for another (MARCH=-march=x86-64-v4: binaries for a machine of that class that has no compiler)
MARCH     ?= -march=native

# What this machine can build is probed, not assumed (scripts/probe-build.sh writes build/probe.mk:
# the compilers that compile and run an OpenMP program, the flags each accepts, mpicc, StarPU's
# headers, an installed or buildable nOS-V and ovni, smpicc). COMPILERS names the compilers to try;
# those that pass are the ones built.
COMPILERS_ASKED := $(or $(COMPILERS),gcc clang)
PROBE := build/probe.mk
ifeq ($(filter clean print-flags print-variants dist,$(MAKECMDGOALS)),)
$(shell COMPILERS='$(COMPILERS_ASKED)' MARCH='$(MARCH)' OVNI='$(OVNI)' sh scripts/probe-build.sh $(PROBE))
include $(PROBE)
endif
override COMPILERS := $(PROBED_COMPILERS)
BUILD_COMPILER := $(firstword $(COMPILERS))
# the goals that build need one compiler at least; the others (test and run, which install first on
# Debian, clean, deps) do not
ifeq ($(strip $(COMPILERS)),)
ifneq ($(if $(MAKECMDGOALS),$(filter all build all-variants test-build unit-tests avx2 asan smpi bench,$(MAKECMDGOALS)),all),)
$(error no C compiler here compiles and runs an OpenMP C11 program (tried: $(COMPILERS_ASKED); build/probe.txt says why): load one ('module load gcc'), or name it: make COMPILERS="icx")
endif
endif
# the probes' and benchmarks' compiler (probes/Makefile.probes, bench/Makefile.bench), unless CC is given
ifeq ($(origin CC),default)
CC := $(BUILD_COMPILER)
endif
# the variants and their kinds: one line each in variants/LIST (the harness reads it too);
# sequential ones are linked without OpenMP
VARIANTS            := $(shell sed -e 's/\#.*//' variants/LIST | awk 'NF {print $$1}')
SEQUENTIAL_VARIANTS := $(shell sed -e 's/\#.*//' variants/LIST | awk '$$2 == "sequential" {print $$1}')
# distributed ones (MPI processes) are built with mpicc and run, inside each process, any of the
# node-level executors (the threads and chunked variants, the runtime ones where the probe found
# their runtime), compiled again with their entry points prefixed by their name:
# forkjoin_executor_create, ...
DISTRIBUTED_VARIANTS := $(shell sed -e 's/\#.*//' variants/LIST | awk '$$2 == "distributed" {print $$1}')
# variants on a task runtime of their own ("Task runtimes", below)
RUNTIME_VARIANTS     := nosv starpu
OPENMP_NODE_VARIANTS := $(filter-out $(RUNTIME_VARIANTS),$(shell sed -e 's/\#.*//' variants/LIST | awk '$$2 == "threads" || $$2 == "chunked" {print $$1}'))
NODE_RUNTIMES        := $(if $(filter home vendored,$(NOSV_FROM)),nosv) $(if $(HAVE_STARPU),starpu)
NODE_VARIANTS        := $(OPENMP_NODE_VARIANTS) $(NODE_RUNTIMES)
node_rename = $(foreach f,executor_create executor_info executor_train executor_destroy executor_schedule EXECUTOR_NAME EXECUTOR_WHOLE_LOOP EXECUTOR_PACKS_WEIGHTS,-D$(f)=$(1)_$(f)) -DExecutor=NodeExecutor
# the distributed variant's modules besides variants/<name>.c: its process layer, collectives and overlap
# (compiled again when the list of node executors changes: variants/LIST, or a runtime the probe finds)
DIST_SRC             := variants/mpi_ranks.c variants/mpi_collectives.c variants/mpi_overlap.c
# Debian's Open MPI wrapper; OMPI_CC picks the compiler under it
MPICC     ?= mpicc
PYTHON     = $(shell scripts/find-python.sh 2>/dev/null || echo /usr/bin/python3)

# the flags of every build; -march, -fno-math-errno, -fno-trapping-math and -g only where the compiler
# accepts them (FLAGS_<compiler>, probed); -ffp-contract=off always (bit-identity needs it)
CFLAGS_BASE   := -std=c11 -O3 -ffp-contract=off -Wall -Wextra
CFLAGS_COMMON := $(CFLAGS_BASE) $(MARCH) -fno-math-errno -fno-trapping-math -g
cflags_for     = $(CFLAGS_BASE) $(FLAGS_$(1))
LDLIBS        := -lm -ldl

CORE_SRC := core/gemm_naive.c core/model.c core/kernels.c core/step.c core/fileio.c core/data.c core/trace.c core/disturbance.c core/taskgraph.c core/traffic.c core/counters.c core/schedule.c
# the kernel set: `fast` (gemm.c, kernels_fast.c) or `reference` (llm.c's loops)
KERNEL_SRC_fast      := core/gemm.c core/kernels_fast.c
KERNEL_SRC_reference := core/kernels_reference.c
GEMM_SRC := $(KERNEL_SRC_$(KERNELS))
# the command-line front besides variants/main.c (which is built with and without OpenMP); single.c's
# process layer of one process is weak, and gpt2-mpi's own replaces it
FRONT_SRC := variants/verify.c variants/options.c variants/single.c
HEADERS  := $(wildcard core/*.h variants/*.h)

.PHONY: all build deps deps-test test run reference clean print-flags print-variants avx2
# keep object files that pattern rules produce on the way (make would delete them)
.SECONDARY:

# the default goal, before any included rule: every variant, compiler and kernel set, the probes
# and the C benchmarks (`build`)
all: build
include probes/Makefile.probes bench/Makefile.bench
.DEFAULT_GOAL := all

# The compile and link rules of a build tree, written once for every tree: $(1) the tree
# (build/gcc/fast), $(2) its kernel set, $(3) the compiler and flags of the variants, the front and
# the node-level executors, $(4) those of the core, $(5) those of the MPI front and variants
# (mpicc), $(6) the node-level executors gpt2-mpi runs inside each rank. Objects go to $(1)/obj,
# binaries to $(1)/gpt2-<variant>.
define TREE_RULES
$(1)/obj/%.o: core/%.c $(HEADERS) | $(1)/obj
	$(4) -DKERNELS_NAME='"$(2)"' -c $$< -o $$@
$(1)/obj/main-omp.o: variants/main.c $(HEADERS) | $(1)/obj
	$(3) -fopenmp -DKERNELS_NAME='"$(2)"' -c $$< -o $$@
$(1)/obj/main-seq.o: variants/main.c $(HEADERS) | $(1)/obj
	$(3) -DKERNELS_NAME='"$(2)"' -c $$< -o $$@
$(1)/obj/exec-%.o: variants/%.c $(HEADERS) | $(1)/obj
	$(3) -fopenmp -DKERNELS_NAME='"$(2)"' $$(RUNTIME_CFLAGS_$$*) -c $$< -o $$@
$(1)/obj/front-%.o: variants/%.c $(HEADERS) | $(1)/obj
	$(3) -DKERNELS_NAME='"$(2)"' -c $$< -o $$@
$(1)/obj/main-mpi.o: variants/main.c $(HEADERS) | $(1)/obj
	$(5) -fopenmp -DKERNELS_NAME='"$(2)"' -c $$< -o $$@
$(1)/obj/node-%.o: variants/%.c $(HEADERS) | $(1)/obj
	$(3) -fopenmp -DKERNELS_NAME='"$(2)"' $$(RUNTIME_CFLAGS_$$*) $$(call node_rename,$$*) -c $$< -o $$@
$(1)/obj/dist-%.o: variants/%.c $(HEADERS) variants/LIST $(PROBE) | $(1)/obj
	$(5) -fopenmp -DKERNELS_NAME='"$(2)"' -DINNER_EXECUTORS='$(foreach v,$(6),INNER($(v)))' -c $$< -o $$@
$(1)/obj:
	mkdir -p $$@
$(patsubst %,$(1)/gpt2-%,$(DISTRIBUTED_VARIANTS)): $(1)/gpt2-%: $(1)/obj/main-mpi.o $(patsubst variants/%.c,$(1)/obj/front-%.o,$(FRONT_SRC)) $(1)/obj/dist-%.o $(patsubst variants/%.c,$(1)/obj/dist-%.o,$(DIST_SRC)) $(patsubst %,$(1)/obj/node-%.o,$(6)) $(patsubst core/%.c,$(1)/obj/%.o,$(CORE_SRC) $(KERNEL_SRC_$(2)))
	$(5) -fopenmp $$(filter %.o,$$^) -o $$@ $$(foreach v,$(6),$$(RUNTIME_LDLIBS_$$(v))) $(LDLIBS)
$(patsubst %,$(1)/gpt2-%,$(SEQUENTIAL_VARIANTS)): $(1)/gpt2-%: $(1)/obj/main-seq.o $(patsubst variants/%.c,$(1)/obj/front-%.o,$(FRONT_SRC)) $(1)/obj/exec-%.o $(patsubst core/%.c,$(1)/obj/%.o,$(CORE_SRC) $(KERNEL_SRC_$(2)))
	$(3) $$^ -o $$@ $(LDLIBS)
$(1)/gpt2-%: $(1)/obj/main-omp.o $(patsubst variants/%.c,$(1)/obj/front-%.o,$(FRONT_SRC)) $(1)/obj/exec-%.o $(patsubst core/%.c,$(1)/obj/%.o,$(CORE_SRC) $(KERNEL_SRC_$(2)))
	$(3) -fopenmp $$(filter %.o,$$^) -o $$@ $$(RUNTIME_LDLIBS_$$*) $(LDLIBS)
endef
# one tree per (compiler, kernels): $(1) compiler, $(2) kernel set, $(3) the tree's name under
# build/$(1)/, $(4) the flags
compiler_tree = $(call TREE_RULES,build/$(1)/$(3),$(2),$(1) $(4),$(1) $(4),OMPI_CC=$(1) $(MPICC) $(4),$(NODE_VARIANTS))
$(foreach c,$(COMPILERS),$(foreach k,fast reference,$(eval $(call compiler_tree,$(c),$(k),$(k),$(call cflags_for,$(c))))))
# A compiler's reference tree compiles only what the kernel set changes, main.c (KERNELS_NAME, in the
# info line) and its kernels; every other object is the same code as the fast tree's (the same source
# and flags), copied from there instead of compiled again (60 of the 213 compilations of make test).
SHARED_OBJECTS := $(patsubst core/%.c,%.o,$(CORE_SRC)) $(patsubst variants/%.c,front-%.o,$(FRONT_SRC)) \
                  $(patsubst %,exec-%.o,$(filter-out $(DISTRIBUTED_VARIANTS),$(VARIANTS))) $(patsubst %,node-%.o,$(NODE_VARIANTS)) \
                  $(patsubst %,dist-%.o,$(DISTRIBUTED_VARIANTS)) $(patsubst variants/%.c,dist-%.o,$(DIST_SRC))
define SHARED_OBJECT
build/$(1)/reference/obj/$(2): build/$(1)/fast/obj/$(2) | build/$(1)/reference/obj
	cp $$< $$@
endef
$(foreach c,$(COMPILERS),$(foreach o,$(SHARED_OBJECTS),$(eval $(call SHARED_OBJECT,$(c),$(o)))))

# Builds with hardware-counter regions around every kernel (core/counters.h):
#   make counters COUNTERS=likwid   ->  build/<compiler>/<kernels>-likwid/gpt2-<variant>  (-DUSE_LIKWID -llikwid)
#   make counters COUNTERS=papi     ->  build/<compiler>/<kernels>-papi/gpt2-<variant>    (-DUSE_PAPI -lpapi)
# The harness uses them for the counter runs when its [counters] backend is available.
COUNTERS ?= likwid
COUNTERS_PKG_likwid := likwid
COUNTERS_PKG_papi   := libpapi-dev papi-tools
# Not a TREE_RULES tree: each variant is compiled whole, its core with OpenMP where the variant
# has it, as core/counters.c counts per OpenMP thread, and without it for the sequential ones.
define COUNTERS_TREE
$(patsubst %,build/$(1)/$(2)-$(3)/gpt2-%,$(SEQUENTIAL_VARIANTS)): build/$(1)/$(2)-$(3)/gpt2-%: variants/main.c $(FRONT_SRC) variants/%.c $(CORE_SRC) $(KERNEL_SRC_$(2)) $(HEADERS)
	@mkdir -p $$(@D)
	$(1) $(call cflags_for,$(1)) -DUSE_$(shell echo $(3) | tr a-z A-Z) -DKERNELS_NAME='"$(2)"' variants/main.c $(FRONT_SRC) variants/$$*.c $(CORE_SRC) $(KERNEL_SRC_$(2)) -o $$@ $(LDLIBS) -l$(3)
build/$(1)/$(2)-$(3)/gpt2-%: variants/main.c $(FRONT_SRC) variants/%.c $(CORE_SRC) $(KERNEL_SRC_$(2)) $(HEADERS)
	@mkdir -p $$(@D)
	$(1) $(call cflags_for,$(1)) -fopenmp -DUSE_$(shell echo $(3) | tr a-z A-Z) -DKERNELS_NAME='"$(2)"' $$(RUNTIME_CFLAGS_$$*) variants/main.c $(FRONT_SRC) variants/$$*.c $(CORE_SRC) $(KERNEL_SRC_$(2)) -o $$@ $$(RUNTIME_LDLIBS_$$*) $(LDLIBS) -l$(3)
endef
$(foreach c,$(COMPILERS),$(foreach k,fast reference,$(foreach b,likwid papi,$(eval $(call COUNTERS_TREE,$(c),$(k),$(b))))))
.PHONY: counters
counters:
	@scripts/install-deps.sh $(COUNTERS_PKG_$(COUNTERS))
	@$(MAKE) --no-print-directory $(foreach c,$(COMPILERS),$(foreach k,$(KERNEL_SETS),$(foreach v,$(filter-out $(DISTRIBUTED_VARIANTS),$(VARIANTS)),build/$(c)/$(k)-$(COUNTERS)/gpt2-$(v))))

# Builds without AVX-512: the flags above with $(MARCH) replaced by -mavx2 -mfma, as
# pstudy.instructions does for its counts. For valgrind (Debian 12's valgrind 3.19 cannot decode
# AVX-512: pstudy.cachesim runs the sequential variant), and for the AVX2 kernels measured on a
# machine that has AVX-512 (`make avx2`; bench/kernels.py --isa avx2, or a sweep with
# run.binary = "{build_dir}/{compiler}/{kernels}-avx2/gpt2-{variant}").
#   build/<compiler>/<kernels>-avx2/gpt2-<variant>
cflags_avx2 = $(subst $(MARCH),-mavx2 -mfma,$(call cflags_for,$(1)))
$(foreach c,$(COMPILERS),$(foreach k,fast reference,$(eval $(call compiler_tree,$(c),$(k),$(k)-avx2,$(call cflags_avx2,$(c))))))

BUILT_VARIANTS := $(wildcard $(patsubst %,variants/%.c,$(VARIANTS)))
BUILT_NAMES    := $(patsubst variants/%.c,%,$(BUILT_VARIANTS))
KERNEL_SETS ?= fast reference
# the variants a compiler's trees get: each one whose runtime or MPI the probe found
NOSV_OK    := $(filter home vendored,$(NOSV_FROM))
LEFT_OUT    = $(if $(HAVE_STARPU),,starpu) $(if $(NOSV_OK),,nosv) $(if $(MPI_$(1)),,$(DISTRIBUTED_VARIANTS))
variants_for = $(filter-out $(call LEFT_OUT,$(1)),$(BUILT_NAMES))
BINARIES := $(foreach c,$(COMPILERS),$(foreach k,$(KERNEL_SETS),$(foreach v,$(call variants_for,$(c)),build/$(c)/$(k)/gpt2-$(v))))
# `make avx2`: the AVX2 trees of every variant but the distributed one, and the product benchmark
AVX2_BINARIES := $(foreach c,$(COMPILERS),$(foreach k,$(KERNEL_SETS),$(foreach v,$(filter-out $(DISTRIBUTED_VARIANTS),$(call variants_for,$(c))),build/$(c)/$(k)-avx2/gpt2-$(v))))
avx2: $(AVX2_BINARIES) build/bench/gemm_bench-avx2

# gpt2-mpi on a simulated cluster: built with SimGrid's smpicc (Debian's libsimgrid-dev) and run
# by smpirun, every rank a thread of one process (`perfstudy predict --distributed --engine smpi`,
# docs/prediction.md). -DGPT2_SMPI stands simulated delays in for each rank's node compute, so the
# collectives run as the binary sends them on a platform that has the cluster's links. The variants
# are compiled with smpicc (its header routes their clock, exit and stdio to the simulation); the
# core with gcc for a shared object, as smpicc links the program, since that header's names clash
# with the core's: under -DGPT2_SMPI the core reads the simulated clock and shares its large blocks
# among the ranks itself. Its node executors are the OpenMP ones alone: their compute is not run.
# Not part of `make`: only that engine needs it.
#   make smpi   ->  build/smpi/gpt2-mpi
SMPICC      ?= smpicc
SMPI_TREE   := build/smpi
SMPI_CFLAGS := $(CFLAGS_COMMON) -DGPT2_SMPI
.PHONY: smpi
smpi: $(SMPI_TREE)/gpt2-mpi
$(eval $(call TREE_RULES,$(SMPI_TREE),fast,$(SMPICC) $(SMPI_CFLAGS),gcc $(SMPI_CFLAGS) -fPIC,$(SMPICC) $(SMPI_CFLAGS),$(OPENMP_NODE_VARIANTS)))

# the harness's task-graph replay in C (harness/replay/replay.c; pstudy.analyse.replay loads it):
# no -march and no contraction, so that its arithmetic is the Python reference's, bit for bit
REPLAY_LIB := build/harness/libreplay.so
build: $(BINARIES) $(PROBE_BINS) $(BENCH_BINS) $(REPLAY_LIB)
	@for v in $(BUILT_NAMES); do rm -f build/gpt2-$$v; done
	@for v in $(call variants_for,$(BUILD_COMPILER)); do ln -sfn $(BUILD_COMPILER)/$(KERNELS)/gpt2-$$v build/gpt2-$$v; done
	@$(foreach c,$(COMPILERS),echo "built with $(c) ($(KERNEL_SETS)): $(call variants_for,$(c))";)
	@sed -n 's/^left-out \([^:]*\): /left out: \1: /p; s/^note /note: /p' build/probe.txt

# every variant, compiler and tool, or a failure naming what was left out (what CI builds)
.PHONY: all-variants
all-variants: build
	@if grep -q '^left-out' build/probe.txt; then \
	    echo "all-variants: $$(grep -c '^left-out' build/probe.txt) left out (above; build/probe.txt)" >&2; exit 1; fi

$(REPLAY_LIB): harness/replay/replay.c
	@mkdir -p $(@D)
	$(BUILD_COMPILER) -std=c11 -O2 -fPIC -shared -ffp-contract=off -Wall -Wextra -o $@ $<

deps:
	@scripts/install-deps.sh
# the tests' packages too (the PyTorch reference's generator): make test, not make run
deps-test:
	@scripts/install-deps.sh --test

# Task runtimes (RUNTIME_VARIANTS, above). A variant named after a runtime here runs its chunk tasks on that runtime: it is
# compiled with RUNTIME_CFLAGS_<name>, linked with RUNTIME_LDLIBS_<name> (and so is gpt2-mpi, which
# runs it inside each rank: NODE_RUNTIMES), and built after what RUNTIME_DEPS_<name> lists.
#   nosv    nOS-V: an installed one where the probe found it (NOSV_HOME, or pkg-config nos-v: a
#           site's module), else the copy vendored in third_party/nos-v (third_party/README.md),
#           built here, out of the source tree, into build/nosv/install (its default configuration
#           file beside it), and rebuilt only when a file of its sources changes. A shared library
#           found through the binary's run path, relative to the binary first: nOS-V interposes
#           pthread_create and the affinity calls, and refuses to start unless it comes before libc
#           in the program's library list, which a library linked into the executable itself does not.
#           Configured with ovni (below) when ovni is at hand, so that a run can record a trace of it
#   starpu  StarPU 1.3 (Debian's libstarpu-dev, or STARPU_HOME): its headers only; the variant opens
#           the library at run time, so that a machine without it gets a one-line error, not the loader's
NOSV_BUILD := build/nosv
NOSV_LIB   := $(NOSV_BUILD)/install/lib/libnosv.so
# ovni: the trace library nOS-V emits to and ovniemu, which turns a trace into Paraver's
# (docs/traces.md). An installed one (OVNI_HOME, pkg-config ovni), else the copy vendored in
# third_party/ovni, built with CMake into build/ovni/install: the library and ovniemu alone
# (ovnisync, the one tool that needs MPI, is left out). OVNI=no, or neither an installed ovni nor
# cmake, builds nOS-V without it; gpt2-nosv then refuses a runtime trace with one line.
OVNI_BUILD := build/ovni
OVNI_LIB   := $(OVNI_BUILD)/install/lib/libovni.so
OVNIEMU    := $(OVNI_BUILD)/install/bin/ovniemu
OVNI_COMMIT := cf025e242f45fc43f62165cbf07f6f2077d53747
OVNI_HOME_USED := $(if $(filter home,$(OVNI_FROM)),$(OVNI_PREFIX),$(if $(filter vendored,$(OVNI_FROM)),$(abspath $(OVNI_BUILD))/install))
# whether nOS-V was configured with ovni, kept in a file that changes only when the choice does (not
# with the tree's place, so that a copy of a built tree stays built), so that
# switching OVNI rebuilds nOS-V and the variant on it
NOSV_WITH  := $(if $(OVNI_HOME_USED),--with-ovni=$(OVNI_HOME_USED),--without-ovni)
NOSV_STAMP := build/nosv-configure.flags
NOSV_STAMP_TEXT := ovni=$(OVNI_FROM)$(if $(filter home,$(OVNI_FROM)), $(OVNI_PREFIX))
ifeq ($(filter clean print-% dist,$(MAKECMDGOALS)),)
$(shell mkdir -p build && { [ "$$(cat $(NOSV_STAMP) 2>/dev/null)" = "$(NOSV_STAMP_TEXT)" ] || echo "$(NOSV_STAMP_TEXT)" > $(NOSV_STAMP); })
endif
ifeq ($(NOSV_FROM),home)
RUNTIME_CFLAGS_nosv := -I$(NOSV_PREFIX)/include
RUNTIME_LDLIBS_nosv  = -L$(NOSV_PREFIX)/lib -lnosv -Wl,-rpath,$(NOSV_PREFIX)/lib
RUNTIME_DEPS_nosv   :=
else
RUNTIME_CFLAGS_nosv := -I$(NOSV_BUILD)/install/include
RUNTIME_LDLIBS_nosv  = -L$(NOSV_BUILD)/install/lib -lnosv -Wl,-rpath,'$$ORIGIN/../../nosv/install/lib' \
                       -Wl,-rpath,'$$ORIGIN/../nosv/install/lib' -Wl,-rpath,$(abspath $(NOSV_BUILD))/install/lib
RUNTIME_DEPS_nosv   := $(NOSV_LIB) $(NOSV_STAMP)
endif
# with ovni the variant names libovni itself, through run paths relative to it as nOS-V's, so
# that the library nOS-V needs is found in a tree that has moved, and calls it (variants/nosv.c)
ifeq ($(OVNI_FROM),vendored)
RUNTIME_CFLAGS_nosv += -DWITH_OVNI -I$(OVNI_BUILD)/install/include
RUNTIME_LDLIBS_nosv += -Wl,--push-state,--no-as-needed -L$(OVNI_BUILD)/install/lib -lovni -Wl,--pop-state \
                       -Wl,-rpath,'$$ORIGIN/../../ovni/install/lib' -Wl,-rpath,'$$ORIGIN/../ovni/install/lib' \
                       -Wl,-rpath,$(abspath $(OVNI_BUILD))/install/lib
RUNTIME_DEPS_nosv   += $(OVNI_LIB)
endif
ifeq ($(OVNI_FROM),home)
RUNTIME_CFLAGS_nosv += -DWITH_OVNI -I$(OVNI_PREFIX)/include
RUNTIME_LDLIBS_nosv += -Wl,--push-state,--no-as-needed -L$(OVNI_PREFIX)/lib -lovni -Wl,--pop-state -Wl,-rpath,$(OVNI_PREFIX)/lib
endif
RUNTIME_CFLAGS_starpu = $(STARPU_CFLAGS)
RUNTIME_LDLIBS_starpu :=
RUNTIME_DEPS_starpu   :=
# every build of such a variant: the compiled trees, the counters and sanitizer builds
RUNTIME_TREES := $(foreach c,$(COMPILERS),$(foreach k,fast reference,$(foreach t,$(k) $(k)-avx2 $(k)-likwid $(k)-papi,build/$(c)/$(t))))
$(foreach v,$(RUNTIME_VARIANTS),$(eval $(patsubst %,%/obj/exec-$(v).o,$(RUNTIME_TREES)) $(patsubst %,%/obj/node-$(v).o,$(RUNTIME_TREES)) $(patsubst %,%/gpt2-$(v),$(RUNTIME_TREES)) build/asan/obj/exec-$(v).o build/asan/gpt2-$(v): $(RUNTIME_DEPS_$(v))))
NOSV_SOURCES := $(shell find third_party/nos-v -type f 2>/dev/null)
# autoreconf writes into the tree it runs in: a copy of the sources, under build/. nOS-V's own
# make is not $(MAKE), which `make -n` would run, in a tree configure has not made
$(NOSV_LIB): $(NOSV_SOURCES) $(NOSV_STAMP) $(if $(filter vendored,$(OVNI_FROM)),$(OVNI_LIB))
	@rm -rf $(NOSV_BUILD) && mkdir -p $(NOSV_BUILD)/obj
	cp -a third_party/nos-v $(NOSV_BUILD)/src
	cd $(NOSV_BUILD)/src && autoreconf -fi > ../autoreconf.log 2>&1 || { tail -20 ../autoreconf.log >&2; exit 1; }
	cd $(NOSV_BUILD)/obj && ../src/configure --prefix=$(abspath $(NOSV_BUILD))/install --enable-shared --disable-static \
	    --without-papi $(NOSV_WITH) CC=$(BUILD_COMPILER) CFLAGS=-O2 > ../configure.log 2>&1 || { tail -20 ../configure.log >&2; exit 1; }
	env -u MAKEFLAGS -u MFLAGS make -C $(NOSV_BUILD)/obj -j$(BUILD_JOBS) install > $(NOSV_BUILD)/make.log 2>&1 || \
	    { tail -20 $(NOSV_BUILD)/make.log >&2; exit 1; }
	@touch $@

OVNI_SOURCES := $(shell find third_party/ovni -type f 2>/dev/null)
# out of the source tree; installed by hand, as only the library and ovniemu are built (CMake's
# install wants every tool). The library keeps upstream's link-time optimisation: its cost is on
# every event a traced run emits. ovniemu copies Paraver's views from share/ovni (the prefix's;
# OVNI_CONFIG_DIR in its environment, where the tree has moved)
$(OVNI_LIB): $(OVNI_SOURCES)
	@rm -rf $(OVNI_BUILD) && mkdir -p $(OVNI_BUILD)/install/lib $(OVNI_BUILD)/install/bin $(OVNI_BUILD)/install/include
	cmake -S third_party/ovni -B $(OVNI_BUILD)/obj -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=$(BUILD_COMPILER) -DUSE_MPI=OFF \
	    -DBUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX=$(abspath $(OVNI_BUILD))/install -DOVNI_GIT_COMMIT=$(OVNI_COMMIT) > $(OVNI_BUILD)/cmake.log 2>&1 || \
	    { tail -20 $(OVNI_BUILD)/cmake.log >&2; exit 1; }
	env -u MAKEFLAGS -u MFLAGS cmake --build $(OVNI_BUILD)/obj -j$(BUILD_JOBS) --target ovni ovniemu > $(OVNI_BUILD)/make.log 2>&1 || \
	    { tail -20 $(OVNI_BUILD)/make.log >&2; exit 1; }
	cp -a $(OVNI_BUILD)/obj/src/rt/libovni.so* $(OVNI_BUILD)/install/lib/
	cp $(OVNI_BUILD)/obj/include/ovni.h $(OVNI_BUILD)/install/include/
	cp $(OVNI_BUILD)/obj/src/emu/ovniemu $(OVNI_BUILD)/install/bin/
	mkdir -p $(OVNI_BUILD)/install/share && cp -r third_party/ovni/cfg $(OVNI_BUILD)/install/share/ovni
	@touch $@
$(OVNIEMU): $(OVNI_LIB)
.PHONY: ovni
ovni: $(OVNI_LIB) $(OVNIEMU)

# the per-task overhead of each runtime (bench/runtime_overhead.py drives it): one build per
# compiler, whose OpenMP runtime it measures beside the others
RUNTIME_OVERHEAD := $(patsubst %,build/bench/runtime_overhead-%,$(COMPILERS))
build/bench/runtime_overhead-%: bench/runtime_overhead.c probes/cli.h $(NOSV_LIB)
	@mkdir -p $(@D)
	$* -std=c11 -O2 -fopenmp -Wall -Wextra $(RUNTIME_CFLAGS_nosv) $(RUNTIME_CFLAGS_starpu) -o $@ $< \
	    $(RUNTIME_LDLIBS_nosv) -lstarpu-1.3 -lm
.PHONY: bench-runtimes
bench-runtimes: deps
	@$(MAKE) --no-print-directory $(RUNTIME_OVERHEAD)
	$(BENCH_PYTHON) bench.runtime_overhead

# the builds that test and run need, on every CPU. test also builds up front what its tests would
# build one after the other (they share a lock: two makes of one target would write the same files),
# one worker waiting on the other's make meanwhile: the unit tests, the sanitizer and fuzzing builds,
# the AVX2 builds the bit-identity and kernel benchmark tests compare, the SMPI build the two
# distributed engines are checked with
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
TEST_BUILDS := build unit-tests $(if $(HAVE_ASAN),asan) $(if $(HAVE_FUZZER),fuzz-build) $(if $(HAVE_SMPICC),smpi) \
               $(filter build/gcc/fast-avx2/%,$(AVX2_BINARIES))
.PHONY: test-build
test-build: $(TEST_BUILDS)

# Where scripts/install-deps.sh installs (Debian, as root or with sudo) nothing may be left out: the
# tests are built with all-variants and told (PERFSTUDY_REQUIRE_ALL) to fail where a component they
# need is missing. Elsewhere they skip it and say why.
REQUIRE_ALL = $$([ "$$(scripts/install-deps.sh --mode)" = apt ] && echo 1)
test: deps-test
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) test-build
	@if [ -n "$(REQUIRE_ALL)" ]; then $(MAKE) --no-print-directory all-variants > /dev/null; fi
	@PERFSTUDY_REQUIRE_ALL=$(REQUIRE_ALL) scripts/run-tests.sh

# the long tier (tests/conftest.py, LONG_TESTS) alone, and everything
.PHONY: test-long test-all
test-long: deps-test
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) test-build
	@PERFSTUDY_REQUIRE_ALL=$(REQUIRE_ALL) RUN_TESTS_TIER=long scripts/run-tests.sh
test-all: deps-test
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) test-build
	@PERFSTUDY_REQUIRE_ALL=$(REQUIRE_ALL) RUN_TESTS_TIER=all scripts/run-tests.sh

# the default study: sweep, then tables, figures and the roofline verdict
RUN_CONFIG ?= configs/default.toml
run: deps
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) build
	@dir=$$(harness/perfstudy run --no-summary $(RUN_CONFIG)) && harness/perfstudy report "$$dir"

reference: deps-test
	$(PYTHON) tests/reference/make_reference.py --all --out tests/fixtures

# C unit tests, run by tests/test_units.py: the fast products against the
# oracle for gcc and clang x (-march=native, -mavx2 -mfma, no -m flags, the
# AVX-512 branch emulated on AVX2, -march=native with small blocks), the
# traffic model against hand counts, and the model state's blocks (huge pages
# to their last byte).
GEMM_TEST_FLAGS_native    := -march=native
GEMM_TEST_FLAGS_avx2      := -mavx2 -mfma
GEMM_TEST_FLAGS_generic   :=
GEMM_TEST_FLAGS_avx512emu := -mavx2 -mfma -include tests/avx512_emu.h
# small blocks (K blocks of at most 40, 2048 floats of packed A, column blocks
# of 96): every blocking boundary of gemm.c on the test's small shapes
GEMM_TEST_FLAGS_smallblocks := -march=native -DGEMM_KC=40 -DGEMM_A_FLOATS=2048 -DGEMM_NC=96 -DGEMM_SHARED_B_FLOATS=4096
UNIT_CFLAGS := -std=c11 -O3 -ffp-contract=off -fno-math-errno -Wall -Wextra
UNIT_TESTS := $(foreach c,$(COMPILERS),$(foreach a,native avx2 generic avx512emu smallblocks,build/tests/test_gemm-$(c)-$(a)) build/tests/test_traffic-$(c) build/tests/test_taskgraph-$(c) build/tests/test_memory-$(c) $(if $(MPI_$(c)),build/tests/test_collectives-$(c)))
.PHONY: unit-tests
unit-tests: $(UNIT_TESTS)
build/tests/test_gemm-%: tests/test_gemm.c core/gemm.c core/gemm_naive.c core/gemm.h core/gemm_naive.h tests/avx512_emu.h
	@mkdir -p build/tests
	$(word 1,$(subst -, ,$*)) $(UNIT_CFLAGS) $(GEMM_TEST_FLAGS_$(word 2,$(subst -, ,$*))) -o $@ tests/test_gemm.c core/gemm.c core/gemm_naive.c -lm
# the traffic and graph tests link the fast tree's core objects, built once for the variants
TREE_CORE = $(patsubst core/%.c,build/$(1)/fast/obj/%.o,$(CORE_SRC) $(KERNEL_SRC_fast))
.SECONDEXPANSION:
build/tests/test_traffic-%: tests/test_traffic.c $$(call TREE_CORE,$$*) $(HEADERS)
	@mkdir -p build/tests
	$* $(UNIT_CFLAGS) -march=native -o $@ tests/test_traffic.c $(filter-out %/taskgraph.o %/schedule.o,$(call TREE_CORE,$*)) -lm
build/tests/test_memory-%: tests/test_memory.c core/model.c core/model.h core/checked.h
	@mkdir -p build/tests
	$* $(UNIT_CFLAGS) -o $@ tests/test_memory.c core/model.c -lm
# gpt2-mpi's collectives alone, run under mpirun by tests/test_collectives.py
build/tests/test_collectives-%: tests/test_collectives.c variants/mpi_collectives.c variants/mpi_collectives.h variants/simulation.h
	@mkdir -p build/tests
	OMPI_CC=$* $(MPICC) $(UNIT_CFLAGS) -fopenmp -o $@ tests/test_collectives.c variants/mpi_collectives.c -lm
build/tests/test_taskgraph-%: tests/test_taskgraph.c $$(call TREE_CORE,$$*) $(HEADERS)
	@mkdir -p build/tests
	$* $(UNIT_CFLAGS) -march=native -o $@ tests/test_taskgraph.c $(call TREE_CORE,$*) -lm

# benchmarks (not tests): figures printed, nothing asserted
# the Python benchmarks run as modules of bench/ with the harness's package importable
BENCH_PYTHON = PYTHONPATH=harness $(PYTHON) -m
OPENBLAS_DIR := /usr/lib/x86_64-linux-gnu/openblas-serial
OPENBLAS_INC := /usr/include/x86_64-linux-gnu/openblas-serial
build/bench/gemm_bench: bench/gemm_bench.c core/gemm.c core/gemm.h
	@mkdir -p build/bench
	gcc $(UNIT_CFLAGS) -march=native -I$(OPENBLAS_INC) -o $@ bench/gemm_bench.c core/gemm.c \
	    -L$(OPENBLAS_DIR) -Wl,-rpath,$(OPENBLAS_DIR) -lopenblas -lm
build/bench/gemm_bench-avx2: bench/gemm_bench.c core/gemm.c core/gemm.h
	@mkdir -p build/bench
	gcc $(UNIT_CFLAGS) -mavx2 -mfma -I$(OPENBLAS_INC) -o $@ bench/gemm_bench.c core/gemm.c \
	    -L$(OPENBLAS_DIR) -Wl,-rpath,$(OPENBLAS_DIR) -lopenblas -lm
.PHONY: bench bench-variants bench-harness bench-predict
bench: deps
	@$(MAKE) --no-print-directory build build/bench/gemm_bench
	$(BENCH_PYTHON) bench.kernels
bench-variants: deps
	@$(MAKE) --no-print-directory build build/bench/gemm_bench
	$(BENCH_PYTHON) bench.variants
bench-harness: deps
	@$(MAKE) --no-print-directory build
	$(BENCH_PYTHON) bench.harness_scaling
	$(BENCH_PYTHON) bench.replay
# records what predict is validated against (a quiet machine, the whole of it; tens of minutes)
PREDICT_RECORDING ?= docs/studies/$(shell date +%Y-%m-%d)-$(shell hostname -s)
bench-predict: deps
	@$(MAKE) --no-print-directory build
	harness/perfstudy validate record --out $(PREDICT_RECORDING)

print-flags:
	@echo "$(CFLAGS_COMMON)"

# the variant names of variants/LIST, one a line
print-variants:
	@printf '%s\n' $(VARIANTS)

clean:
	rm -rf build

# a source archive of the committed tree for a machine without git: git archive writes the commit
# into harness/pstudy/COMMIT (.gitattributes), which meta.json then names (git.source "export")
DIST ?= build/gpt2-perfstudy-$(shell git rev-parse --short HEAD 2>/dev/null || echo unknown).tar.gz
.PHONY: dist
dist:
	@mkdir -p $(dir $(DIST))
	git archive --format=tar.gz --prefix=gpt2-perfstudy/ -o $(DIST) HEAD
	@echo "$(DIST)"

# the study's answer from the committed studies: docs/answer.md (the table the README quotes) and
# docs/answer.png (the speedup figure)
ANSWER_STUDIES := docs/studies/2026-11-27-xeon-emr-vm16-c docs/studies/2026-11-27-xeon-emr-vm16-pairs16
.PHONY: answer
answer: deps
	harness/perfstudy answer $(ANSWER_STUDIES) --out docs

# AddressSanitizer + UndefinedBehaviorSanitizer builds of every variant but the
# distributed ones (gcc), used by the tests on tiny runs.
ASAN_FLAGS := -std=c11 -O1 -g -march=native -ffp-contract=off -fno-omit-frame-pointer -fsanitize=address,undefined -Wall -Wextra
.PHONY: asan
asan: $(patsubst %,build/asan/gpt2-%,$(filter-out $(DISTRIBUTED_VARIANTS),$(BUILT_NAMES)))
$(eval $(call TREE_RULES,build/asan,$(KERNELS),gcc $(ASAN_FLAGS),gcc $(ASAN_FLAGS),OMPI_CC=gcc $(MPICC) $(ASAN_FLAGS),$(NODE_VARIANTS)))

# libFuzzer targets for the readers and the command line (tests/fuzz/fuzz_*.c), clang with ASan and
# UBSan (any UB report aborts). `make fuzz FUZZ_SECONDS=N` runs each for N
# seconds from its seed corpus tests/fuzz/corpus/<target>/ (read only; new
# inputs go to build/fuzz/corpus/<target>/, crashes to build/fuzz/artifacts/<target>/).
# tests/test_fuzz.py runs each for a few seconds inside `make test`.
FUZZ_TARGETS := checkpoint tokens debug_state losses options
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS  := -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_SRC     := core/fileio.c core/model.c
.PHONY: fuzz fuzz-build
fuzz-build: $(patsubst %,build/fuzz/fuzz_%,$(FUZZ_TARGETS))
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_SRC) core/fileio.h core/model.h core/checked.h
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) $< $(FUZZ_SRC) -o $@ -lm
# the command line: the binaries' own option parsing (variants/options.c)
build/fuzz/fuzz_options: tests/fuzz/fuzz_options.c variants/options.c variants/options.h variants/executor.h $(FUZZ_SRC) core/fileio.h core/model.h core/checked.h
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) $< variants/options.c $(FUZZ_SRC) -o $@ -lm
fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	    mkdir -p build/fuzz/corpus/$$t build/fuzz/artifacts/$$t; \
	    echo "fuzz_$$t: $(FUZZ_SECONDS) s"; \
	    build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	        -artifact_prefix=build/fuzz/artifacts/$$t/ build/fuzz/corpus/$$t tests/fuzz/corpus/$$t || exit 1; \
	done
