"""The tables of a results directory (steps.csv, runs.csv, failures.csv, summary.csv), made from
its run records (pstudy.store.resultsdir reads and writes them) with the statistics of
pstudy.analyse.stats."""

from pstudy.store import resultsdir
from pstudy.analyse import stats


def tabulate(directory, meta, status, finished):
    """Writes the tables of a directory (steps, runs, failures, summary) from its run records and the
    final meta.json with `status`; returns the number of failed runs."""
    directory = resultsdir.ResultsDir(directory)
    steps, runs, failures = resultsdir.tables(directory)
    resultsdir.write_csv(directory.steps_csv, steps)
    resultsdir.write_csv(directory.runs_csv, runs)
    resultsdir.write_csv(directory.failures_csv, failures)
    resultsdir.write_csv(directory.summary_csv, stats.point_summary(steps, runs))
    peaks = resultsdir.thread_peaks(directory)
    if len(peaks):
        resultsdir.write_csv(directory.thread_peaks_csv, peaks)
    runtimes = {}
    for _, r in runs.dropna(subset=["omp_runtime"]).iterrows():
        runtimes.setdefault(f"{r['compiler']}/{r['kernels']}", set()).add(str(r["omp_runtime"]))
    meta["omp_runtime"] = {k: sorted(v) for k, v in runtimes.items()}
    # where the ranks of each distributed run ran (its binary's info line): host, sequences, CPUs
    placement = {r["run_id"]: r["info"]["rank_placement"] for r in resultsdir.records(directory)
                 if isinstance(r.get("info"), dict) and "rank_placement" in r["info"]}
    if placement:
        meta["rank_placement"] = dict(sorted(placement.items()))
    meta["status"] = status
    meta["finished"] = finished
    meta["runs_done"] = int(len(runs))
    meta["runs_ok"] = int((runs["status"] == "ok").sum())
    meta["runs_failed"] = int((runs["status"] != "ok").sum())
    resultsdir.write_meta(directory, meta)
    return meta["runs_failed"]


def read_summary(directory):
    """The per-point summary, recomputed from steps.csv (and runs.csv, for the run counts): the
    tidy data is the source of truth, and a summary.csv cached by an older harness is never shown."""
    directory = resultsdir.ResultsDir(directory)
    if not directory.steps_csv.exists():
        resultsdir.read_steps(directory)  # the error that says no results were written yet
    runs = resultsdir.read_runs(directory)
    return stats.point_summary(resultsdir.read_steps(directory, runs), runs)
