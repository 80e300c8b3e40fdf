"""Results are set against each other only when comparable (store/comparable.py: the model, B, T and
the placement), a prediction is never written over another's, and predict's distributed layouts
are refused where they cannot be predicted."""

import json
import shutil
from pathlib import Path

import pytest

import conftest

REPO = Path(__file__).resolve().parents[2]
CEILINGS = REPO / "docs" / "studies" / "2026-11-27-xeon-emr-vm16" / "ceilings.json"


def one_line(proc, *needles):
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (proc.returncode, proc.stderr)
    for needle in needles:
        assert str(needle) in proc.stderr, (needle, proc.stderr)


def with_ceilings(directory):
    if CEILINGS.exists():
        shutil.copy(CEILINGS, directory / "ceilings.json")
    return directory


@pytest.fixture
def tiny(study, finished_sweeps):
    return with_ceilings(study.copy_of(finished_sweeps.get()))


@pytest.fixture
def longer(study, tiny):
    """A copy of the tiny sweep recorded as one of B=8: another problem (only meta.json says so)."""
    copy = study.copy_of(tiny, name="b8")
    meta = json.loads((copy / "meta.json").read_text())
    meta["config"]["model"]["B"] = 8
    (copy / "meta.json").write_text(json.dumps(meta))
    return copy


def test_predict_against_another_problem_is_refused_unless_mixed(study, tiny, longer, tmp_path):
    one_line(study.perfstudy("predict", tiny, "--dedicated", "--against", longer, "--out", tmp_path / "p"),
             tiny, longer, "B=4", "B=8", "--mixed")
    assert not (tmp_path / "p").exists()
    mixed = study.perfstudy("predict", tiny, "--against", longer, "--out", tmp_path / "p", "--mixed",
                            "--replicates", "0")
    assert "not comparable" not in mixed.stderr


def test_compare_and_answer_refuse_another_problem(study, tiny, longer):
    one_line(study.perfstudy("compare", tiny, longer, "--unit", "step"), "B=4", "B=8", "not comparable")
    one_line(study.perfstudy("answer", tiny, longer), "B=4", "B=8", "not comparable")


def test_answer_without_forkjoin_and_into_a_measurement_folder_is_refused(study, finished_sweeps, tiny):
    text = conftest.SMALL_CONFIG.format(steps=4, repetitions=1, timeout_s=20, variants='["seq", "taskiter"]')
    alone = study.copy_of(finished_sweeps.get(tag="nofj", text=text), name="nofj")
    one_line(study.perfstudy("answer", alone), "forkjoin")
    one_line(study.perfstudy("answer", tiny, "--out", tiny / "traces"), "--out", "traces/")
    assert not (tiny / "traces" / "answer.md").exists()


def test_a_prediction_against_another_directory_of_the_same_name_is_not_written_over(study, tiny, tmp_path):
    first, second = (Path(shutil.copytree(tiny, tmp_path / f"r{i}" / "X")) for i in (0, 1))
    out = tmp_path / "p"
    out.mkdir()
    # what `predict TINY --against r0/X --out p` left there (its prediction needs real binaries)
    (out / "inputs.json").write_text(json.dumps({"results": str(tiny.resolve()), "against": str(first.resolve()),
                                                 "machine": "m", "dedicated": False}))
    (out / "validation.csv").write_text("the first prediction\n")
    one_line(study.perfstudy("predict", tiny, "--against", second, "--out", out, "--replicates", "0"),
             out, first.resolve(), "--out")
    assert (out / "validation.csv").read_text() == "the first prediction\n"


@pytest.mark.parametrize("options, needles", [(["--nodes", "2", "--ranks", "1"], ["--nodes and --ranks"]),
                                              (["--nodes", "2,64"], ["--nodes 2,64", "no [network]"])])
def test_distributed_layouts_that_cannot_be_predicted_are_refused(study, tiny, options, needles):
    one_line(study.perfstudy("predict", tiny, "--distributed", *options), *needles)
