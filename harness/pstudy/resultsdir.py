"""A results directory: its name, its journal, its per-run records and the tables built from them.

Layout of results/<date>-<commit>-<config>[-N]/:
    meta.json       the machine, code, build and config of the sweep (written at start, updated at end)
    config.toml     the config file's text as run
    journal.jsonl   one JSON line per event: begin, run (one per finished run), interrupted, end
    runs/ID.json    everything one run produced (point, status, error, info line, steps, stderr tail)
    steps.csv       one row per step of every successful run (warm-up steps flagged, see README)
    runs.csv        one row per run, failed ones included
    failures.csv    the failed runs with their errors
    summary.csv     one row per point: medians, CIs, speedups, efficiencies
Every file is written to a temporary name and renamed into place, so a crash never leaves a half
file under a real name. A run counts as done only when its runs/ID.json exists and the journal
says so; anything else is redone on resume.
"""

import datetime
import json
import os
import tempfile
from pathlib import Path

from pstudy.errors import StudyError

JOURNAL = "journal.jsonl"
META = "meta.json"
KEYS = ["variant", "compiler", "kernels", "threads", "batch_subsize", "k"]
STEP_COLUMNS = KEYS + ["repetition", "step", "warmup", "forward_s", "backward_s", "update_s", "step_s", "loss"]
RUN_COLUMNS = KEYS + ["repetition", "order", "status", "error", "exit_code", "wall_s", "omp_runtime",
                      "proc_bind", "places", "tasks_per_step", "num_parameters"]
FAILURE_COLUMNS = KEYS + ["repetition", "status", "exit_code", "error", "wall_s"]


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()  # what open() would give; mkstemp's files are private (0600)


def atomic_write(path, text):
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path, obj):
    atomic_write(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def write_csv(path, frame):
    atomic_write(path, frame.to_csv(index=False, na_rep="NA"))


def read_meta(directory):
    path = Path(directory) / META
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise StudyError(f"{directory}: not a results directory (no {META})") from None
    except (OSError, ValueError) as err:
        raise StudyError(f"{path}: unreadable: {err}") from None


def identity(study, git):
    """What must match for a directory to be resumed: the resolved config and the code."""
    return {"config_digest": study.digest(), "commit": git["commit_full"] or git["commit"],
            "dirty": git["dirty"], "changes_digest": git["changes_digest"]}


def new_directory(root, stem):
    """A new directory root/stem, or root/stem-2, -3, ... when taken: mkdir is atomic, so two
    processes never get the same one and an earlier one is never reused."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10000):
        path = root / (stem if n == 1 else f"{stem}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise StudyError(f"{root}: too many directories named {stem}-N")


def find_or_create(results_root, study, git, fresh=False):
    """The directory for this sweep: a matching earlier one (resume) or a new one (never reused).

    Returns (path, resumed)."""
    root = Path(results_root)
    root.mkdir(parents=True, exist_ok=True)
    want = identity(study, git)
    stem = f"{git['commit']}-{study.name}"
    if not fresh:
        candidates = sorted((d for d in root.iterdir() if d.is_dir() and f"-{stem}" in d.name),
                            key=lambda d: d.stat().st_mtime, reverse=True)
        for d in candidates:
            try:
                meta = read_meta(d)
            except StudyError:
                continue
            if meta.get("identity") == want:
                return d, True
    path = new_directory(root, f"{datetime.date.today().isoformat()}-{stem}")
    (path / "runs").mkdir()
    return path, False


class Journal:
    def __init__(self, directory):
        self.path = Path(directory) / JOURNAL

    def append(self, event, **fields):
        record = {"event": event, "time": datetime.datetime.now().isoformat(timespec="seconds"), **fields}
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def events(self):
        """The journal's records; a torn last line (the process died mid-write) is ignored."""
        out = []
        try:
            with open(self.path) as f:
                for line in f:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        continue
        except FileNotFoundError:
            pass
        return out


def completed_runs(directory, retry_failed=False):
    """run_id -> status for the runs that are done: journalled and with a readable record."""
    directory = Path(directory)
    for stale in (directory / "runs").glob(".*.tmp"):  # a run record that was being written
        stale.unlink()
    done = {}
    for event in Journal(directory).events():
        if event.get("event") != "run":
            continue
        run_id = event.get("run_id")
        record = load_run(directory, run_id)
        if record is None or record.get("status") != event.get("status"):
            continue
        if retry_failed and record["status"] != "ok":
            continue
        done[run_id] = record["status"]
    return done


def load_run(directory, run_id):
    try:
        with open(Path(directory) / "runs" / f"{run_id}.json") as f:
            return json.load(f)
    except (OSError, ValueError, TypeError):
        return None


def save_run(directory, run, order, outcome, command):
    p = run.point
    record = {"run_id": run.run_id(), "variant": p.variant, "compiler": p.compiler, "kernels": p.kernels,
              "threads": p.threads, "batch_subsize": p.batch_subsize, "k": p.k,
              "repetition": run.repetition, "order": order, "status": outcome.status,
              "error": outcome.error, "exit_code": outcome.exit_code, "wall_s": round(outcome.wall_s, 6),
              "command": command, "info": outcome.info, "steps": outcome.steps,
              "stderr_tail": outcome.stderr_tail}
    write_json(Path(directory) / "runs" / f"{run.run_id()}.json", record)


def records(directory):
    """All journalled run records (the latest per run_id)."""
    out = {}
    for event in Journal(directory).events():
        if event.get("event") == "run":
            record = load_run(directory, event.get("run_id"))
            if record is not None:
                out[record["run_id"]] = record
    return list(out.values())


def tables(directory):
    """steps, runs and failures DataFrames assembled from the run records."""
    import pandas as pd

    step_rows, run_rows = [], []
    for r in records(directory):
        info = r.get("info") or {}
        run_rows.append({**{c: r.get(c) for c in KEYS + ["repetition", "order", "status", "error",
                                                           "exit_code", "wall_s"]},
                         **{c: info.get(c) for c in ("omp_runtime", "proc_bind", "places",
                                                     "tasks_per_step", "num_parameters")}})
        if r["status"] == "ok":
            for s in r["steps"]:
                step_rows.append({**{c: r[c] for c in KEYS + ["repetition"]}, **s})
    steps = pd.DataFrame(step_rows, columns=STEP_COLUMNS)
    runs = pd.DataFrame(run_rows, columns=RUN_COLUMNS)
    for frame in (steps, runs):
        for col in ("batch_subsize", "k"):
            frame[col] = frame[col].astype("Int64")
    for col in ("exit_code", "tasks_per_step", "num_parameters"):
        runs[col] = pd.to_numeric(runs[col], errors="coerce").round().astype("Int64")
    steps = steps.sort_values(KEYS + ["repetition", "step"], na_position="first").reset_index(drop=True)
    runs = runs.sort_values(["order"]).reset_index(drop=True)
    failures = runs[runs["status"] != "ok"][FAILURE_COLUMNS].reset_index(drop=True)
    return steps, runs, failures


def read_csv(path, columns=(), what="", absent=None):
    """A CSV written by write_csv (NA for missing values), with the point's
    integer keys typed. Raises StudyError naming the file when it is absent
    (with `absent` as the message, if given), unreadable, or lacks one of
    `columns` (`what` says what kind of file it should have been)."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, na_values=["NA"], keep_default_na=False)
    except FileNotFoundError:
        raise StudyError(absent or f"{path}: no such file") from None
    except (OSError, ValueError) as err:
        raise StudyError(f"{path}: unreadable: {err}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise StudyError(f"{path}: {what + ': ' if what else ''}missing columns {', '.join(missing)}")
    for col in ("batch_subsize", "k"):
        if col in frame.columns:
            frame[col] = frame[col].astype("Int64")
    return frame


def read_steps(directory):
    """steps.csv of a results directory, with the key columns typed."""
    steps = read_csv(Path(directory) / "steps.csv", STEP_COLUMNS,
                     absent=f"{directory}: no steps.csv (the sweep wrote no results yet)")
    steps["warmup"] = steps["warmup"].astype(str).str.lower().isin(["true", "1"])
    return steps
