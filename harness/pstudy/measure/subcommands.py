"""perfstudy's own subcommands run as children, for the studies made of several of them (the
validation recording, the noise study): each a process of its own, as a user would run it, so that
a sweep's lock, its interrupt handling and its results directory are the sweep's alone. A child is
stopped with its parent however that ends (pstudy.measure.children)."""

import subprocess
import sys

from pstudy.common import REPO_ROOT
from pstudy.errors import StudyError
from pstudy.measure import children

PERFSTUDY = REPO_ROOT / "harness" / "perfstudy"
STOP_GRACE_S = 30  # a sweep stopped early has this long to tabulate what it measured


def launch(args):
    """harness/perfstudy ARGS from the repository, its standard output captured (a CompletedProcess)."""
    with children.running([PERFSTUDY, *args], grace=STOP_GRACE_S, cwd=str(REPO_ROOT), stdout=subprocess.PIPE,
                          text=True) as proc:
        out, _ = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out)


def perfstudy(*args, quiet=False):
    """Runs a perfstudy subcommand, its output passed through unless `quiet`; its stdout's last line.
    StudyError where it fails."""
    proc = launch([str(a) for a in args])
    if not quiet:
        sys.stdout.write(proc.stdout)
        sys.stdout.flush()
    if proc.returncode != 0:
        raise StudyError(f"perfstudy {' '.join(map(str, args))}: exit status {proc.returncode}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else ""
