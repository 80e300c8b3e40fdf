"""The layout of a noise study's directory (`perfstudy noise`): DIR/<config>/quiet-r<round>/ and
DIR/<config>/d<duty>-p<period>us-r<round>/, each holding one results directory, and beside a
disturbed sweep the co-runner's own record (disturb.json), written only once the whole sweep ran
beside it: a sweep without it was interrupted, not disturbed throughout, and is never taken for a
disturbed one."""

import json
import re
from pathlib import Path

from pstudy.errors import StudyError
from pstudy.store import comparable, exclusive

CORUNNER_RECORD = "disturb.json"
# a disturbed sweep's directory: d<duty>-p<period>us-r<round>; older ones lack the period
DISTURBED_NAME = re.compile(r"d(?P<duty>[0-9.]+)(?:-p(?P<period>[0-9.]+)us)?-r(?P<round>[0-9]+)")


def quiet_root(out, config_stem, rnd):
    return Path(out) / config_stem / f"quiet-r{rnd}"


def disturbed_root(out, config_stem, duty, period_us, rnd):
    return Path(out) / config_stem / f"d{duty:g}-p{period_us:g}us-r{rnd}"


def results_dir(root):
    """The one results directory under a sweep's root; StudyError where there is not exactly one."""
    found = [p for p in root.iterdir() if (p / "meta.json").is_file()] if root.is_dir() else []
    if len(found) != 1:
        raise StudyError(f"{root}: expected one results directory, found {len(found)}")
    return found[0]


def write_corunner_record(directory, text):
    exclusive.write(Path(directory) / CORUNNER_RECORD, text, "the co-runner's record")


def corunner_record(directory):
    """The co-runner's record beside a disturbed sweep; StudyError when there is none (the sweep was
    interrupted, and what ran of it may have run without the co-runner) or it is not one."""
    path = directory / CORUNNER_RECORD
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise StudyError(f"{directory}: no {CORUNNER_RECORD} (the co-runner's record): an interrupted sweep, not "
                         "disturbed throughout; remove it and run again") from None
    except (OSError, ValueError) as err:
        raise StudyError(f"{path}: not the co-runner's record ({err})") from None
    if not isinstance(record, dict):
        raise StudyError(f"{path}: not the co-runner's record (not a JSON object)")
    return record


def done_levels(out, config_stems, rounds, levels):
    """The disturbed sweeps' roots a run into `out` already has whole (their co-runner's record beside
    them), to be kept; StudyError for one that has results without the record (an interrupted one),
    before anything runs."""
    done = set()
    for stem in config_stems:
        for r in range(rounds):
            for duty, period in levels:
                root = disturbed_root(out, stem, duty, period, r)
                found = [p for p in root.iterdir() if (p / "meta.json").is_file()] if root.is_dir() else []
                if any(not (p / CORUNNER_RECORD).is_file() for p in found):
                    raise StudyError(f"{root}: a sweep without the co-runner's record ({CORUNNER_RECORD}): "
                                     "interrupted, not disturbed throughout; remove it to measure it again")
                if found:
                    done.add(root)
    return done


def sweeps(study):
    """A config's folder of a noise study: ({round: quiet results directory}, [(duty, round, disturbed
    results directory)]), every disturbed sweep checked to have its co-runner's record and a quiet one
    of the same round it is comparable with, before minutes of predictions."""
    quiet = {p.name.split("-r")[-1]: results_dir(p) for p in study.glob("quiet-r*")}
    disturbed = []
    if not quiet:
        return quiet, disturbed
    for root in sorted(study.glob("d*-r*")):
        name = DISTURBED_NAME.fullmatch(root.name)
        if not name:
            raise StudyError(f"{root}: not a disturbed sweep's name (d<duty>-p<period>us-r<round>)")
        if name["round"] not in quiet:
            raise StudyError(f"{root}: no quiet-r{name['round']} beside it")
        directory = results_dir(root)
        corunner_record(directory)
        comparable.check([quiet[name["round"]], directory])
        disturbed.append((float(name["duty"]), name["round"], directory))
    return quiet, disturbed
