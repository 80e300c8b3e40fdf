"""Each variant's sensitivity to noise made on purpose (bench/disturb_validation.py): its step beside
a CPU-bound co-runner over its quiet step, per point and duty cycle, from noise/noise_sensitivity.csv
in the quiet results directory. `report` shows it as a table and a figure where the file is there."""

from pathlib import Path

from pstudy.errors import StudyError
from pstudy.store import resultsdir, vocabulary

NOISE_DIR, NOISE_CSV = "noise", "noise_sensitivity.csv"
COLUMNS = [*vocabulary.POINT_KEYS, "duty", "cpus", "period_us", "quiet_step_s", "disturbed_step_s", "slowdown"]


def path_of(directory):
    return Path(directory) / NOISE_DIR / NOISE_CSV


def write(directory, rows):
    """Writes the rows (dicts with COLUMNS) into DIRECTORY/noise/noise_sensitivity.csv."""
    import pandas as pd

    path = path_of(directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    resultsdir.write_csv(path, pd.DataFrame(rows, columns=COLUMNS))
    return path


def read(directory):
    """The noise sensitivity table of a results directory, or None where it has none; StudyError
    naming the file and the row where a step or duty is not a positive number."""
    import numpy as np
    import pandas as pd

    path = path_of(directory)
    if not path.is_file():
        return None
    frame = resultsdir.read_csv(path, COLUMNS, what="not a noise sensitivity table")
    for col in ("duty", "quiet_step_s", "disturbed_step_s", "slowdown"):
        numbers = pd.to_numeric(frame[col], errors="coerce")
        bad = (numbers.isna() | ~np.isfinite(numbers.astype(float)) | (numbers <= 0)).to_numpy()
        if bad.any():
            i = int(bad.nonzero()[0][0])
            raise StudyError(f"{path}: row {i + 2}, column {col}: {frame[col].iloc[i]!r} is not a positive number")
        frame[col] = numbers.astype(float)
    return frame


def table_lines(frame):
    """Per variant and duty, the median slowdown over its points and the range."""
    out = ["noise sensitivity (step beside a CPU co-runner over the quiet step; bench/disturb_validation.py):"]
    for (variant, duty), g in frame.groupby(["variant", "duty"], sort=False):
        out.append(f"  {variant:<10} duty {duty:g}: {g['slowdown'].median():.2f}x "
                   f"({g['slowdown'].min():.2f}-{g['slowdown'].max():.2f}x over {len(g)} points)")
    return out


def figure(frame, out_dir):
    """noise_sensitivity.png: each point's slowdown against the co-runner's duty cycle."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, g in frame.groupby([*vocabulary.POINT_KEYS], dropna=False, sort=False):
        g = g.groupby("duty")["slowdown"].median()
        point = vocabulary.point_key(dict(zip(vocabulary.POINT_KEYS, key)))
        colour, marker = vocabulary.variant_style(point[0])
        ax.plot([0.0, *g.index], [1.0, *g.values], "--" if point[3] == 1 else "-", marker=marker, color=colour,
                label=vocabulary.point_label(point))
    ax.set_xlabel("co-runner duty cycle")
    ax.set_ylabel("step beside it / quiet step")
    ax.set_title("Sensitivity to noise (a CPU co-runner on some of the step's cores)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    path = Path(out_dir) / "noise_sensitivity.png"
    resultsdir.atomic_savefig(fig, path, dpi=110)
    plt.close(fig)
    return path
