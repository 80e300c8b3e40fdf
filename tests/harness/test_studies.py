"""The committed studies (docs/studies/) and the commands that make and read them: `perfstudy
study` (a study within a time budget, one archive), `perfstudy answer` (the README's answer, drawn
from the committed data), `perfstudy pairs` (paired intervals), and the commit a tree exported without
.git still names. Nothing here judges a timing."""

import json
import shutil
import signal
import subprocess
import tarfile
import time
from pathlib import Path

import pandas as pd
import pytest
import warm_perfstudy

from pstudy.analyse import answer
from pstudy.measure import provenance
from pstudy.store import resultsdir

REPO = Path(__file__).resolve().parents[2]
STUDIES = REPO / "docs" / "studies"
PERFSTUDY = REPO / "harness" / "perfstudy"
PAIRED = sorted(p.parent for p in STUDIES.glob("*/results/*/steps.csv")
                if pd.read_csv(p)["repetition"].nunique() >= 6)
PAIRS16 = next(p for p in PAIRED if p.name.endswith("pairs16"))
BUILD = REPO / "build" / "gcc" / "fast"


def pairs(directory, *args):
    return subprocess.run([PERFSTUDY, "pairs", directory, *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_every_committed_study_says_where_when_and_how_it_was_made():
    folders = sorted(p for p in STUDIES.iterdir() if p.is_dir())
    assert folders
    for folder in folders:
        readme = folder / "README.md"
        assert readme.is_file(), f"{folder.name}: no README.md"
        text = readme.read_text()
        for field in ("Machine", "Date", "Commit", "Command"):
            assert f"**{field}" in text, f"{folder.name}/README.md: no {field}"


def test_the_tracked_tree_outside_third_party_is_small():
    files = subprocess.run(["git", "ls-files", "-z", ":!third_party"], cwd=REPO, capture_output=True).stdout
    if not files:
        pytest.skip("not a git checkout")
    total = sum((REPO / n).stat().st_size for n in files.decode().split("\0") if n and (REPO / n).is_file())
    assert total <= 12.4e6, f"{total / 1e6:.1f} MB tracked outside third_party/"


@pytest.mark.parametrize("directory", PAIRED, ids=[p.name for p in PAIRED])
def test_pairs_and_answer_give_the_same_paired_ratios(directory):
    # two readers of one sweep: perfstudy pairs' line and analyse/answer.py's row, the same figures
    proc = pairs(directory)
    assert proc.returncode == 0, proc.stderr
    steps = resultsdir.read_steps(directory)
    rows = answer.paired_ratios(steps[~steps["warmup"]])
    lines = proc.stdout.splitlines()
    assert len(lines) == len(rows) >= 1
    for row in rows:
        expected = (f"at {row['threads']} threads against forkjoin: speedup {row['estimate']:.3f} "
                    f"[{row['low']:.3f}, {row['high']:.3f}]")
        assert sum(expected in line for line in lines) == 1, (expected, lines)


def test_the_verdict_follows_the_interval(tmp_path):
    # the committed 16-thread pairs, and the same with taskiter's steps made 1.25x slower
    line, = pairs(PAIRS16).stdout.splitlines()
    low = float(line.split("[")[1].split(",")[0])
    assert line.endswith("met" if low >= 1.10 else ("missed" if float(line.split(", ")[1].split("]")[0]) < 1.1
                                                   else "undecided"))
    copy = tmp_path / "pairs"
    shutil.copytree(PAIRS16, copy)
    steps = pd.read_csv(copy / "steps.csv", keep_default_na=False, na_values=["NA"])
    steps.loc[steps["variant"] == "taskiter", "step_s"] *= 1.25
    steps.to_csv(copy / "steps.csv", index=False, na_rep="NA")
    out = pairs(copy).stdout
    assert "target >= 1.10: missed" in out, out
    assert "target >= 0.80: met" in pairs(copy, "--target", "0.80").stdout


@pytest.mark.parametrize("args, message", [
    (("{tmp}",), "not a results directory (no steps.csv)"),
    (("{pairs}", "--target", "0"), "--target 0: not a positive ratio"),
    (("{pairs}", "--base", "seq"), "no seq runs to pair with"),
])
def test_pairs_bad_input_is_one_line(tmp_path, args, message):
    proc = pairs(*[a.format(tmp=tmp_path, pairs=PAIRS16) for a in args])
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("perfstudy pairs: ") and message in proc.stderr


def test_the_committed_answer_is_what_the_committed_data_gives(tmp_path):
    # docs/answer.md, which the README quotes, is made by `make answer` and nothing else
    makefile = (REPO / "Makefile").read_text()
    studies = makefile.split("ANSWER_STUDIES :=", 1)[1].split("\n", 1)[0].split()
    (tmp_path / "docs").mkdir()
    for s in studies:
        (tmp_path / s).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / s).symlink_to(REPO / s)
    proc = warm_perfstudy.perfstudy("answer", *studies, "--out", "docs", cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "docs" / "answer.md").read_text() == (REPO / "docs" / "answer.md").read_text(), \
        "docs/answer.md is stale: run make answer"
    assert (tmp_path / "docs" / "answer.png").stat().st_size > 10_000


def test_answer_refuses_what_holds_no_answer(tmp_path):
    for args, message in (([tmp_path], "neither a results directory"), ([tmp_path / "none"], "not a directory"),
                          ([PAIRS16, PAIRS16], "given twice")):
        proc = warm_perfstudy.perfstudy("answer", *args, timeout=60)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr


def test_an_exported_tree_names_its_commit(tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    archive = tmp_path / "dist.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", archive, "HEAD", "harness/pstudy/COMMIT"], cwd=REPO,
                   check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "tree")
    state = provenance.git_state(str(tmp_path / "tree"))
    assert state["source"] == "export" and state["commit_full"] == head.stdout.strip() and state["dirty"] is None
    assert provenance.git_state(str(REPO))["source"] == "git"
    # a copy with the placeholder (not exported): unknown, never a made-up commit
    (tmp_path / "copy" / "harness" / "pstudy").mkdir(parents=True)
    (tmp_path / "copy" / "harness" / "pstudy" / "COMMIT").write_text("$Format:%H$\n")
    state = provenance.git_state(str(tmp_path / "copy"))
    assert state["source"] == "unknown" and state["commit"] == "nogit"


STUDY_CONFIG = """
[model]
config = "tiny"
B = 2
T = 32

[run]
steps = 2
warmup = 1
repetitions = {reps}
timeout_s = 60

[sweep]
variants = ["seq", "forkjoin"]
threads = [1]

[analysis]
ceilings = false
roofline = false
"""


def _members(archive):
    with tarfile.open(archive) as tar:
        return tar.getnames()


@pytest.mark.skipif(not (BUILD / "gpt2-forkjoin").exists(), reason="build/gcc/fast not built (make)")
def test_a_study_within_its_budget_leaves_one_archive(tmp_path):
    config = tmp_path / "tiny-study.toml"
    config.write_text(STUDY_CONFIG.format(reps=1))
    archive = tmp_path / "out.tar.gz"
    proc = warm_perfstudy.perfstudy("study", config, "--budget", "150", "--archive", archive, "--no-build",
                                    timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(archive)
    names = _members(archive)
    for name in ("study/machine.txt", "study/counters.txt", "study/log.txt", "study/ceilings/ceilings.json"):
        assert name in names, names
    results = [n for n in names if n.endswith("/steps.csv")]
    assert len(results) == 1
    directory = results[0].rsplit("/", 1)[0]
    assert f"{directory}/ceilings.json" in names  # measured once, copied into the results
    with tarfile.open(archive) as tar:
        meta = json.load(tar.extractfile(f"{directory}/meta.json"))
    assert meta["status"] == "complete"
    assert not list(tmp_path.glob(".study-*")) and not list(tmp_path.glob("*.partial"))
    # an archive is never replaced
    again = warm_perfstudy.perfstudy("study", config, "--budget", "150", "--archive", archive, "--no-build",
                                     timeout=60)
    assert again.returncode == 2 and "exists" in again.stderr and again.stderr.count("\n") == 1


@pytest.mark.skipif(not (BUILD / "gpt2-forkjoin").exists(), reason="build/gcc/fast not built (make)")
def test_a_study_stopped_midway_still_leaves_its_archive(tmp_path):
    config = tmp_path / "tiny-long.toml"
    config.write_text(STUDY_CONFIG.format(reps=200))
    archive = tmp_path / "out.tar.gz"
    proc = subprocess.Popen([PERFSTUDY, "study", config, "--budget", "600", "--archive", archive, "--no-build"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 200
    seen = ""
    while time.monotonic() < deadline and "4. sweep" not in seen:
        seen += proc.stderr.readline()
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, seen + err
    names = _members(archive)
    steps = [n for n in names if n.endswith("/meta.json") and "/results/" in n]
    with tarfile.open(archive) as tar:
        meta = json.load(tar.extractfile(steps[0]))
    assert meta["status"] == "interrupted"


def test_bad_study_input_is_one_line(tmp_path):
    for args, message in ((["quick", "--budget", "10", "--archive", tmp_path / "a.tar.gz"], "from 60"),
                          (["quick", "--budget", "200", "--archive", tmp_path / "a.zip"], "must end in .tar.gz"),
                          (["nosuch", "--budget", "200", "--archive", tmp_path / "a.tar.gz"], "nosuch"),
                          (["quick", "--budget", "200", "--archive", tmp_path / "no" / "a.tar.gz"], "not a directory")):
        proc = warm_perfstudy.perfstudy("study", *map(str, args), timeout=60)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
        assert not list(tmp_path.glob("*.tar.gz"))
