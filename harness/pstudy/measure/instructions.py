"""Instruction counts per kernel: the build they are taken from, valgrind's command, the parsing of
its output, the attribution to the step's kernels, the comparison of two builds, and the files
they leave in a regress session (the one owner of those files).

Why: on a shared machine the wall-clock detector sees only slowdowns of tens of percent. The
number of instructions a deterministic program executes is the same for the same binary and
input whatever else the machine does, so a 1% change of one kernel is visible at once. It does
not see what costs time without costing instructions: cache misses, memory bandwidth, stalls,
frequency, contention between threads.

How:
- **Build.** valgrind 3.19 (Debian 12) stops at AVX-512 instructions, so the commit's own compile
  flags (`make print-flags`) are used with -march=native replaced by -mavx2 -mfma, passed to its
  Makefile as CFLAGS_COMMON and as FLAGS_<compiler> (the flags its probed trees build with), and
  only the binaries the config runs are built. The counted code is therefore the AVX2+FMA
  micro-kernels, not the AVX-512 ones a native build runs.
- **Run.** Each run is `valgrind --tool=callgrind --cache-sim=no` around the binary's usual
  command (pstudy.runner checks its output as in a sweep). callgrind's output file
  (callgrind/<side>/<run stem>.out in the session) records, per function, the instructions it
  executed and the inclusive cost of every call it made.
- **Attribution.** A kernel's count is the inclusive count of its entry functions (KERNEL_FUNCTIONS:
  the functions op_run calls for that operation kind, whatever they call in turn: gemm, its
  micro-kernels and packing for the products). `other` is the rest of the process: start-up,
  model initialisation, the executor (OpenMP or task scheduling, barriers), printing; `total`
  is everything.
- **Determinism.** Kernel counts are the same run after run, at any thread count: a chunk is the
  same computation whichever thread runs it. `total` and `other` are not quite: at one thread
  they differ by a few dozen instructions, as the binary prints its measured times and formatting
  a number costs a number of instructions that depends on its digits; at two or more threads by
  several percent, as waiting threads spin (libgomp's barriers, the task variants' schedulers)
  for as long as valgrind, which runs one thread at a time, leaves them. So `other` and `total`
  of points with 2+ threads are reported but never gated. Each point runs run.repetitions times
  per side; a change must exceed the threshold beyond the spread between them.
"""

import concurrent.futures
import csv
import math
import shlex
import statistics
import subprocess
from pathlib import Path

from pstudy.store import callgrind, resultsdir, vocabulary
from pstudy.measure import runner
from pstudy.errors import StudyError

ARCH_NATIVE = "-march=native"
ARCH_COUNTS = ("-mavx2", "-mfma")
BUILD_NOTE = ("instruction-count build: the commit's flags with -march=native replaced by -mavx2 -mfma "
              "(Debian 12's valgrind 3.19 stops at AVX-512 instructions), so the AVX2+FMA code paths are "
              "counted, not the AVX-512 ones of a native build")
VALGRIND = ("valgrind", "--tool=callgrind", "--cache-sim=no", "-q")
THRESHOLD = 0.01         # default: a kernel or total more than 1% above its base regresses
MIN_INSTRUCTIONS = 100   # default: a difference of fewer instructions is reported, never flagged

KERNEL_FUNCTIONS = callgrind.KERNEL_FUNCTIONS
OTHER, TOTAL = "other", "total"
KERNELS = tuple(KERNEL_FUNCTIONS) + (OTHER, TOTAL)

COUNTS_FILE = "instructions.csv"
COUNT_COLUMNS = ["side"] + resultsdir.KEYS + ["repetition", "kernel", "instructions"]
TABLE_COLUMNS = resultsdir.KEYS + ["kernel", "base_instructions", "candidate_instructions", "ratio",
                                   "base_spread", "candidate_spread", "status"]
DETERMINISM = ("kernel counts are identical run after run at any thread count; total and other vary by a few "
               "dozen instructions at 1 thread (the binary prints its measured times) and by several percent "
               "at 2+ threads (waiting threads spin as long as valgrind's scheduling leaves them), so other "
               "and total of 2+ thread points are not gated")
NOT_GATED = "not gated (2+ threads)"
SAME, WITHIN_SPREAD = "same", "same within run-to-run spread"


class CannotCount(Exception):
    """A build or a valgrind run failed: nothing can be said about the commit (exit 125)."""


# ---------------------------------------------------------------------------------------------
# the build

def build_flags(commit_flags):
    """The commit's CFLAGS_COMMON with -march=native replaced by -mavx2 -mfma; CannotCount when the
    flags have no -march=native to replace (the commit's Makefile is not the one this knows)."""
    words = shlex.split(commit_flags)
    if ARCH_NATIVE not in words:
        raise CannotCount(f"the commit's compile flags ({commit_flags.strip()}) have no {ARCH_NATIVE} to replace "
                          "with -mavx2 -mfma")
    out = []
    for w in words:
        out.extend(ARCH_COUNTS if w == ARCH_NATIVE else (w,))
    return " ".join(out)


def make_arguments(worktree, targets, extra_flags=()):
    """make's arguments that build `targets` (paths relative to the worktree) without AVX-512:
    ['CFLAGS_COMMON=...', target, ...]. `extra_flags` go after the commit's flags (the tests add
    -DPERFSTUDY_EXTRA_WORK_*)."""
    done = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(worktree), "print-flags"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        raise CannotCount(f"make print-flags failed in {worktree}: {last}")
    flags = build_flags(done.stdout)
    if extra_flags:
        flags += " " + " ".join(extra_flags)
    # a Makefile that probes its compilers builds build/<compiler>/... with FLAGS_<compiler> (the
    # probed -march and options) after its base flags, not with CFLAGS_COMMON: both are given, so
    # that the counts build without AVX-512 under either (the base flags given twice change nothing)
    compilers = sorted({Path(t).parts[1] for t in targets if len(Path(t).parts) > 2 and Path(t).parts[0] == "build"})
    return [f"CFLAGS_COMMON={flags}", *(f"FLAGS_{c}={flags}" for c in compilers), *targets]


def build_targets(study, build_dir, worktree):
    """The binaries a study runs, relative to the worktree (make targets)."""
    out = []
    for key in sorted({(p.compiler, p.kernels, p.variant) for p in _points(study)}):
        path = Path(study.run["binary"].format(build_dir=str(build_dir), compiler=key[0], kernels=key[1],
                                               variant=key[2]))
        try:
            out.append(str(path.relative_to(worktree)))
        except ValueError:
            raise CannotCount(f"run.binary: {path} is not inside the worktree {worktree}") from None
    return out


def _points(study):
    from pstudy.store import sweep
    return sweep.points(study)


# ---------------------------------------------------------------------------------------------
# callgrind's output

def parse(path):
    """{function name: inclusive instructions} and the total of a callgrind output file (read by
    pstudy.callgrind); StudyError naming the file when it is not such a file."""
    functions, totals, events = callgrind.read(path)
    if not events or events[0] != "Ir":
        raise StudyError(f"{path}: not a callgrind output file with instruction counts (no 'events: Ir' line)")
    if totals is None:
        raise callgrind.without_totals(path)
    return {fn: counts["Ir"] for fn, counts in functions.items()}, totals["Ir"]


def attribute(inclusive, total):
    """{kernel: instructions} for every name of KERNELS from a parsed callgrind file."""
    out = {kind: sum(inclusive.get(fn, 0) for fn in fns) for kind, fns in KERNEL_FUNCTIONS.items()}
    out[OTHER] = total - sum(out.values())
    out[TOTAL] = total
    return out


# ---------------------------------------------------------------------------------------------
# running

def output_path(session, role, run):
    return Path(session) / "callgrind" / role / f"{resultsdir.run_stem(run.point, run.repetition)}.out"


def count_run(study, point, binary, root, out_file):
    """Run one point under callgrind; (runner.Outcome, {kernel: instructions} or None)."""
    out_file.parent.mkdir(parents=True, exist_ok=True)
    prefix = [*VALGRIND, f"--callgrind-out-file={out_file}"]
    outcome = runner.execute(study, point, binary, str(root), prefix=prefix)
    if outcome.status != runner.OK:
        tail = " ".join(outcome.stderr_tail)
        if "unhandled instruction" in tail or "unrecognised instruction" in tail:
            outcome.error += (" (valgrind met an instruction it does not know: was the build made with "
                              "AVX-512? see BUILD_NOTE)")
        return outcome, None
    return outcome, attribute(*parse(out_file))


def count_all(study, jobs_list, root, workers):
    """Run [(role, Run, binary, out_file)] under callgrind, `workers` at a time (the counts do not
    depend on the load). Returns [(role, Run, counts)]; CannotCount naming the first failure."""
    results, failed = [], []

    def one(job):
        role, run, binary, out_file = job
        return job, count_run(study, run.point, binary, root, out_file)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for (role, run, _, out_file), (outcome, counts) in pool.map(one, jobs_list):
            if counts is None:
                failed.append(f"{role} {run.point.label()} rep {run.repetition}: {outcome.status}: {outcome.error}")
            else:
                results.append((role, run, counts))
    if failed:
        raise CannotCount(f"{len(failed)} run(s) under valgrind failed, first: {failed[0]}")
    return results


def write_counts(session, results):
    """instructions.csv: one row per side, point, repetition and kernel."""
    rows = []
    for role, run, counts in results:
        p = run.point
        for kernel in KERNELS:
            rows.append([role, *("" if v is None else v for v in tuple(p)), run.repetition, kernel,
                         counts[kernel]])  # the point's columns (resultsdir.KEYS), NA empty
    path = Path(session) / COUNTS_FILE

    def write(tmp):
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(COUNT_COLUMNS)
            w.writerows(rows)
    resultsdir.atomic_output(path, write)
    return path


# ---------------------------------------------------------------------------------------------
# comparison

def compare(results, threshold=THRESHOLD, min_instructions=MIN_INSTRUCTIONS):
    """The comparison table (pandas), one row per point and kernel (and other, total):
    base and candidate counts (median over repetitions), ratio candidate / base, each side's spread
    over its repetitions (max / min - 1), and the status:
      REGRESSED         the candidate's smallest count exceeds the base's largest by more than the
                        threshold, and by at least min_instructions
      slower, below threshold / slower, difference too small to gate
      faster (beyond the threshold and the floor) / faster, below threshold
      same              identical medians
      same within run-to-run spread  the two sides' ranges over their repetitions overlap
      not gated (2+ threads)  other and total of points with more than one thread
    """
    import pandas as pd

    by = {}
    for role, run, counts in results:
        key = vocabulary.as_point(run.point)
        for kernel in KERNELS:
            by.setdefault((key, kernel), {"base": [], "candidate": []})[role].append(counts[kernel])
    rows = []
    for (key, kernel), sides in sorted(by.items(), key=lambda kv: (vocabulary.point_sort_key(kv[0][0]),
                                                                     KERNELS.index(kv[0][1]))):
        b, c = sides["base"], sides["candidate"]
        if not b or not c:
            continue
        mb, mc = statistics.median(b), statistics.median(c)
        ratio = mc / mb if mb > 0 else (1.0 if mc == 0 else math.inf)
        rows.append({**key._asdict(), "kernel": kernel, "base_instructions": mb,
                     "candidate_instructions": mc, "ratio": ratio, "base_spread": _spread(b),
                     "candidate_spread": _spread(c),
                     "status": (status(b, c, threshold, min_instructions)
                                if key.threads == 1 or kernel not in (OTHER, TOTAL) else NOT_GATED)})
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    for col in vocabulary.OPTIONAL_KEYS:
        table[col] = table[col].astype(vocabulary.key_dtype(col))
    return table


def _spread(values):
    lo, hi = min(values), max(values)
    return hi / lo - 1 if lo > 0 else (0.0 if hi == 0 else math.inf)


def status(base, candidate, threshold, min_instructions):
    mb, mc = statistics.median(base), statistics.median(candidate)
    if mc == mb:
        return SAME
    if min(candidate) <= max(base) and min(base) <= max(candidate):
        return WITHIN_SPREAD
    if mc < mb:  # as a slowdown is judged: beyond the threshold and the floor, or below them
        highest, lowest = min(base), max(candidate)
        if lowest > 0 and highest / lowest - 1 > threshold and highest - lowest >= min_instructions:
            return "faster"
        return "faster, below threshold"
    lowest, highest = min(candidate), max(base)
    if highest > 0 and lowest / highest - 1 > threshold:
        if lowest - highest < min_instructions:
            return "slower, difference too small to gate"
        return "REGRESSED"
    return "slower, below threshold"


def regressed(table):
    """[(point key, kernel)] of the REGRESSED rows."""
    return [(vocabulary.point_key(r), r["kernel"]) for _, r in table.iterrows() if r["status"] == "REGRESSED"]


def format_table(table, all_rows=False):
    """The table for the terminal: per point, every kernel whose count changed, and total (every
    kernel with all_rows)."""
    lines = [f"{'point':<34} {'kernel':<22} {'base':>14} {'candidate':>14} {'ratio':>9} {'spread':>8}  status"]
    for _, r in table.iterrows():
        if not all_rows and r["status"] in (SAME, WITHIN_SPREAD) and r["kernel"] != TOTAL:
            continue
        spread = max(r["base_spread"], r["candidate_spread"])
        lines.append(f"{vocabulary.point_label(vocabulary.point_key(r)):<34} {r['kernel']:<22} "
                     f"{r['base_instructions']:>14,.0f} {r['candidate_instructions']:>14,.0f} "
                     f"{r['ratio']:>9.5f} {spread:>8.1e}  {r['status']}")
    return "\n".join(lines)


def method_lines(threshold, min_instructions, repetitions):
    return [f"metric: instructions per kernel under valgrind (callgrind), {repetitions} run(s) per point and side; "
            f"a kernel regresses when the candidate's smallest count exceeds the base's largest by more than "
            f"{threshold:.2%} and by at least {min_instructions} instructions",
            BUILD_NOTE,
            f"determinism: {DETERMINISM}"]


def check_points(study, say):
    """A note on the points whose total is not deterministic (more than one thread)."""
    multi = sorted({p.label() for p in _points(study) if p.threads > 1})
    if multi:
        say(f"note: {len(multi)} point(s) with 2+ threads ({', '.join(multi)}): their kernels are gated, their "
            "'other' and 'total' are not (waiting threads spin for as long as valgrind's scheduling leaves them)")
