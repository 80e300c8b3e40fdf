"""Each variant's sensitivity to noise made on purpose (`perfstudy noise`): its step beside
a CPU-bound co-runner over its quiet step, per point and duty cycle, from noise/noise_sensitivity.csv
in the quiet results directory. `report` shows it as a table and a figure where the file is there."""

from pathlib import Path

from pstudy.errors import StudyError
from pstudy.store import resultsdir, vocabulary

NOISE_DIR, NOISE_CSV = "noise", "noise_sensitivity.csv"
COLUMNS = [*vocabulary.POINT_KEYS, "duty", "cpus", "period_us", "quiet_step_s", "disturbed_step_s", "slowdown"]
# what later tables add (NA in older ones): the slowdown's 95% interval over the runs, the runs on
# each side, and why (the runs' POP factors, quiet and disturbed: parallel efficiency, and the idle
# shares of the threads' time waiting inside parallel operations and in the runtime)
WHY = ("parallel_efficiency", "idle_imbalance", "idle_scheduling")
OPTIONAL = ["slowdown_low", "slowdown_high", "quiet_runs", "disturbed_runs",
            *(f"{side}_{name}" for side in ("quiet", "disturbed") for name in WHY)]


def why_columns(quiet, disturbed):
    """The WHY columns of a row from two (parallel efficiency, idle imbalance, idle scheduling)
    tuples (None: not traced)."""
    return {f"{side}_{name}": (values[i] if values else None)
            for side, values in (("quiet", quiet), ("disturbed", disturbed)) for i, name in enumerate(WHY)}


def with_why(rows):
    """The rows of pstudy.analyse.noise's tables, their quiet_why and disturbed_why tuples spread into
    the WHY columns."""
    return [{**{k: v for k, v in r.items() if k not in ("quiet_why", "disturbed_why")},
             **why_columns(r["quiet_why"], r["disturbed_why"])} for r in rows]


def path_of(directory):
    return Path(directory) / NOISE_DIR / NOISE_CSV


def write(directory, rows):
    """Writes the rows (dicts with COLUMNS) into DIRECTORY/noise/noise_sensitivity.csv."""
    import pandas as pd

    path = path_of(directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    resultsdir.write_csv(path, pd.DataFrame(rows, columns=COLUMNS + OPTIONAL))
    return path


# a slowdown (and its interval) above this is no co-runner's effect but a damaged table: a run
# slowed that much would have met its timeout long before
MAX_SLOWDOWN = 1e4


def read(directory):
    """The noise sensitivity table of a results directory, or None where it has none; StudyError
    naming the file, the row and the column where a point key is not one (a known variant, a
    positive thread count), a duty not in (0, 1], a period not a positive number or NA, a step or
    slowdown not a positive number (the slowdown at most MAX_SLOWDOWN)."""
    import numpy as np
    import pandas as pd

    path = path_of(directory)
    if not path.is_file():
        return None
    frame = resultsdir.read_csv(path, COLUMNS, what="not a noise sensitivity table")
    resultsdir.check_point_keys(frame, path)
    unknown = ~frame["variant"].isin(vocabulary.VARIANTS).to_numpy()
    if unknown.any():
        i = int(unknown.nonzero()[0][0])
        raise StudyError(f"{path}: row {i + 2}, column variant: {frame['variant'].iloc[i]!r} is not a variant "
                         f"(known: {', '.join(vocabulary.VARIANTS)})")
    period = pd.to_numeric(frame["period_us"], errors="coerce")
    bad = (frame["period_us"].notna() & ~(np.isfinite(period) & (period > 0))).to_numpy()
    if bad.any():
        i = int(bad.nonzero()[0][0])
        raise StudyError(f"{path}: row {i + 2}, column period_us: {frame['period_us'].iloc[i]!r} is not a positive "
                         "number of microseconds or NA")
    frame["period_us"] = period.astype(float)
    for col in OPTIONAL:
        if col not in frame.columns:
            frame[col] = None
        numbers = pd.to_numeric(frame[col], errors="coerce")
        bad = ((numbers.isna() & frame[col].notna()) | (numbers < 0)).to_numpy()
        if bad.any():
            i = int(bad.nonzero()[0][0])
            raise StudyError(f"{path}: row {i + 2}, column {col}: {frame[col].iloc[i]!r} is not a non-negative number")
        frame[col] = numbers.astype(float)
    highest = {"duty": 1.0, "slowdown": MAX_SLOWDOWN, "slowdown_low": MAX_SLOWDOWN, "slowdown_high": MAX_SLOWDOWN}
    for col in ("duty", "quiet_step_s", "disturbed_step_s", "slowdown", "slowdown_low", "slowdown_high"):
        numbers = pd.to_numeric(frame[col], errors="coerce").astype(float)
        given = numbers.notna() if col in OPTIONAL else pd.Series(True, index=frame.index)
        bad = (given & (numbers.isna() | ~np.isfinite(numbers) | (numbers <= 0) |
                        (numbers > highest.get(col, np.inf)))).to_numpy()
        if bad.any():
            i = int(bad.nonzero()[0][0])
            within = f" of at most {highest[col]:g}" if col in highest else ""
            raise StudyError(f"{path}: row {i + 2}, column {col}: {frame[col].iloc[i]!r} is not a positive number"
                             + within)
        frame[col] = numbers
    return frame


def _period(value):
    return "period ?" if value != value or value is None else f"period {float(value) / 1000:g} ms"


def _factor(row, side):
    pe = row.get(f"{side}_parallel_efficiency")
    if pe is None or pe != pe:
        return None
    return (f"{pe:.2f} (waiting in parallel operations {100 * row[f'{side}_idle_imbalance']:.0f}%, "
            f"in the runtime {100 * row[f'{side}_idle_scheduling']:.0f}%)")


def table_lines(frame):
    """Per period and duty, each point's slowdown with its interval (at each variant's widest
    team, the table the answer quotes), then why: parallel efficiency quiet and disturbed, and
    which idle time grew; then per variant the median over all its points."""
    out = ["noise sensitivity (step beside a CPU co-runner over the quiet step, 95% interval over the runs; "
           "perfstudy noise):"]
    widest = frame.groupby("variant")["threads"].transform("max")
    for (period, duty), g in frame[frame["threads"] == widest].groupby(["period_us", "duty"], dropna=False,
                                                                       sort=True):
        out.append(f"  {_period(period)}, duty {duty:g}:")
        for _, row in g.iterrows():
            point = vocabulary.point_key(row)
            interval = "" if row["slowdown_low"] != row["slowdown_low"] else \
                f" [{row['slowdown_low']:.2f}, {row['slowdown_high']:.2f}]"
            line = f"    {vocabulary.point_label(point):<34} {row['slowdown']:.2f}x{interval:<14}"
            quiet, disturbed = _factor(row, "quiet"), _factor(row, "disturbed")
            if quiet and disturbed and point.threads > 1:
                line += f" parallel efficiency {quiet} -> {disturbed}"
            out.append(line.rstrip())
    out.append("  per variant, every point (median, range):")
    for (variant, period, duty), g in frame.groupby(["variant", "period_us", "duty"], dropna=False, sort=False):
        out.append(f"    {variant:<10} {_period(period)}, duty {duty:g}: {g['slowdown'].median():.2f}x "
                   f"({g['slowdown'].min():.2f}-{g['slowdown'].max():.2f}x over {len(g)} points)")
    return out


def figure(frame, out_dir):
    """noise_sensitivity.png: each point's slowdown against the co-runner's duty cycle, with its
    interval where the table has one; one panel per period."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    periods = sorted(frame["period_us"].dropna().unique().tolist()) or [None]
    fig, axes = plt.subplots(1, len(periods), figsize=(7 * len(periods), 4.5), sharey=True, squeeze=False)
    for ax, period in zip(axes[0], periods):
        part = frame if period is None else frame[frame["period_us"] == period]
        for key, g in part.groupby([*vocabulary.POINT_KEYS], dropna=False, sort=False):
            g = g.groupby("duty")[["slowdown", "slowdown_low", "slowdown_high"]].median()
            point = vocabulary.point_key(dict(zip(vocabulary.POINT_KEYS, key)))
            colour, marker = vocabulary.variant_style(point.variant)
            ax.plot([0.0, *g.index], [1.0, *g["slowdown"]], "--" if point.threads == 1 else "-", marker=marker,
                    color=colour, label=vocabulary.point_label(point))
            known = g["slowdown_low"].notna()
            if known.any():
                ax.errorbar(g.index[known], g["slowdown"][known],
                            yerr=[g["slowdown"][known] - g["slowdown_low"][known],
                                  g["slowdown_high"][known] - g["slowdown"][known]],
                            fmt="none", ecolor=colour, alpha=0.5, capsize=2)
        ax.set_xlabel("co-runner duty cycle")
        ax.set_title("Sensitivity to noise" + ("" if period is None else f", {_period(period)}"))
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("step beside it / quiet step")
    axes[0][-1].legend(fontsize=7)
    path = Path(out_dir) / "noise_sensitivity.png"
    resultsdir.atomic_savefig(fig, path, dpi=110)
    plt.close(fig)
    return path
