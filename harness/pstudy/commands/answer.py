"""answer the study's question from results: do tasks and taskiter beat fork-join, from how many threads.

    perfstudy answer DIR [DIR ...] [--out DIR]

Each DIR is a results directory (its measured steps), a validation recording (its points.csv:
one median a point), a folder of either under results/ (a committed study in docs/studies/), or a
study archive (perfstudy study --archive FILE.tar.gz), read as the folder it unpacks to.
Sweep points give each variant's speedup over seq and its ratio to fork-join at each thread count;
a sweep with repetitions gives the paired ratio with its 95% interval (analyse/answer.py says
how). With --out, answer.md (the tables, each with its source) and answer.png (the figure) are
written there.
"""

import contextlib
import math
from pathlib import Path

from pstudy.analyse import answer
from pstudy.errors import StudyError
from pstudy.show import answerfigure
from pstudy.store import comparable, resultsdir, studyarchive, validationdata, vocabulary


def add_arguments(parser):
    parser.add_argument("dirs", nargs="+", help="results directories, validation recordings, folders of them, "
                                                "or study archives (perfstudy study --archive FILE.tar.gz)")
    parser.add_argument("--out", help="a directory to write answer.md and answer.png into")
    parser.add_argument(comparable.OPTION, action="store_true", help=comparable.HELP)


def sources(path):
    """[(kind, directory)] under `path`: "recording" or "results"."""
    path = Path(path)
    if not path.is_dir():
        raise StudyError(f"{path}: not a directory")
    if (path / validationdata.META).is_file():
        return [("recording", path)]
    if (path / "steps.csv").is_file():
        return [("results", path)]
    found = sorted(p for p in (path / "results").glob("*") if (p / "steps.csv").is_file()) \
        if (path / "results").is_dir() else []
    if not found:
        raise StudyError(f"{path}: neither a results directory (steps.csv), a validation recording "
                         f"({validationdata.META}) nor a folder of results directories (results/*/steps.csv)")
    return [("results", p) for p in found]


def points_of(kind, directory):
    """(a frame of the point keys and step_s, the measured steps or None, where it was measured)."""
    import pandas as pd

    if kind == "recording":
        recording = validationdata.Recording(directory)
        frame = recording.points.rename(columns={"measured_step_s": "step_s"})
        cpu = ", ".join(sorted({str(s.get("cpu")) for s in recording.meta.get("studies", []) if s.get("cpu")}))
        return frame, None, cpu
    steps = resultsdir.read_steps(directory)
    steps = steps[~steps["warmup"]]
    keys = list(vocabulary.POINT_KEYS)
    frame = steps.groupby(keys, dropna=False)["step_s"].median().reset_index()
    meta = resultsdir.read_meta(directory)
    return frame, steps, str(meta.get("cpu", {}).get("model") or "")


def _ratio(value):
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}x"


def sweep_table(rows):
    threads = sorted({r["threads"] for r in rows})
    columns = [(r["variant"], r["chunking"]) for r in rows if r["variant"] != vocabulary.FORKJOIN
               and not vocabulary.is_sequential(r["variant"])]
    columns = list(dict.fromkeys(columns))
    head = "| threads | forkjoin step | " + " | ".join(
        f"{v}{' ' + c if c else ''} / forkjoin" for v, c in columns) + " |"
    lines = [head, "|" + " --- |" * (2 + len(columns))]
    for t in threads:
        fj = [r for r in rows if r["variant"] == vocabulary.FORKJOIN and r["threads"] == t]
        cells = [f"{fj[0]['step_s']:.3f} s" if fj else "—"]
        for v, c in columns:
            mine = [r for r in rows if r["variant"] == v and r["chunking"] == c and r["threads"] == t]
            cells.append(_ratio(mine[0]["over_forkjoin"]) if mine else "—")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return lines


def paired_table(rows):
    lines = ["| variant | threads | pairs | forkjoin / variant [95% interval] |", "| --- | --- | --- | --- |"]
    for r in rows:
        interval = "(fewer than 6 pairs: no interval)" if math.isnan(r["low"]) else f"[{r['low']:.3f}, {r['high']:.3f}]"
        lines.append(f"| {r['variant']}{' ' + r['chunking'] if r['chunking'] else ''} | {r['threads']} | {r['pairs']} | "
                     f"{r['estimate']:.3f} {interval} |")
    return lines


def main(args):
    with contextlib.ExitStack() as unpacked:
        found = []
        for d in args.dirs:  # an archive is read where it is unpacked, for as long as this runs
            found += sources(unpacked.enter_context(studyarchive.unpacked(d)) if studyarchive.is_archive(d) else d)
        return answer_of(args, found)


def answer_of(args, found):
    import pandas as pd

    if len({p.resolve() for _, p in found}) != len(found):
        raise StudyError("a directory given twice: each is counted once")
    if args.out:  # before the work, never into a results directory's measurements
        resultsdir.output_dir(args.out, "--out")
    measured = [p for kind, p in found if kind == "results"]
    comparable.check(measured, args.mixed)
    out_lines, sweep_rows, paired_rows = [], [], []
    for kind, directory in found:
        frame, steps, cpu = points_of(kind, directory)
        # by name, not path: the same from an archive as from the folder it unpacks to
        where = directory.name + (f" ({cpu})" if cpu else "")
        reps = steps["repetition"].nunique() if steps is not None else 1
        if steps is not None and reps >= 2:
            rows = answer.paired_ratios(steps)
            if rows:
                out_lines += [f"Paired runs, {reps} repetitions: {where}", "", *paired_table(rows), ""]
                paired_rows += rows
            continue
        study_col = frame["study"] if "study" in frame.columns else pd.Series([""] * len(frame))
        for study in sorted(set(study_col)):
            rows = answer.sweep_ratios(frame[study_col == study])
            if not any(r["over_forkjoin"] == r["over_forkjoin"] for r in rows):  # no fork-join to be faster than
                continue
            sweep_rows += rows
            out_lines += [f"Sweep points, one median a point{' (' + study + ')' if study else ''}: {where}", "",
                          *sweep_table(rows), ""]
            for v, c in dict.fromkeys((r["variant"], r["chunking"]) for r in rows):
                if v == vocabulary.FORKJOIN or vocabulary.is_sequential(v):
                    continue
                start = answer.first_win(rows, v, c)
                out_lines.append(f"- {v}{' ' + c if c else ''}: "
                                 + (f"faster than forkjoin from {start} threads on" if start
                                    else "not faster than forkjoin at every count from some thread count on"))
            out_lines.append("")
    if not out_lines:
        raise StudyError("no sweep points or paired runs of forkjoin and a task variant in " + ", ".join(args.dirs))
    text = "\n".join(out_lines)
    print(text)
    if args.out:
        out = Path(args.out)
        if not out.is_dir():
            raise StudyError(f"--out {out}: not a directory")
        header = ["# The answer, from committed data", "",
                  "Made by `perfstudy answer " + " ".join(args.dirs) + " --out " + args.out + "`; do not edit.",
                  "A ratio above 1 means faster than fork-join.", ""]
        resultsdir.atomic_write(out / "answer.md", "\n".join(header) + "\n" + text + "\n")
        models = sorted({str(comparable.identity(resultsdir.read_meta(p))[0]) for p in measured})
        answerfigure.draw(sweep_rows, paired_rows, f"{', '.join(models) or 'the'} step against threads: " + ", ".join(
            Path(d).name for d in args.dirs), out / "answer.png")
        print(f"wrote {out / 'answer.md'} and {out / 'answer.png'}")
    return 0
