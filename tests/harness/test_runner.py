"""Checking one run's --json output against the contract, without running anything."""

import json

import pytest

from pstudy.store import config
from pstudy.measure import runner
from pstudy.store.sweep import Point

STUDY = config.from_dict({"model": {"config": "tiny", "B": 4, "T": 64}, "run": {"steps": 2, "warmup": 1}},
                         "x.toml", cpu_count=2)
POINT = Point("tasks", "gcc", "fast", 2, 1, 64)
INFO = {"variant": "tasks", "compiler": "gcc", "kernels": "fast", "threads": 2, "batch_subsize": 1,
        "token_chunk": 64, "omp_runtime": "libgomp"}


def step(n, **change):
    record = {"step": n, "loss": 10.0, "forward_s": 0.1, "backward_s": 0.2, "update_s": 0.05, "step_s": 0.35}
    record.update(change)
    return json.dumps(record)


def output(*lines, info=INFO):
    return "\n".join([json.dumps({"info": info}), *lines]) + "\n"


def test_good_output():
    out = runner.parse(output(step(0), step(1), step(2)), STUDY, POINT)
    assert out.status == "ok" and out.info["omp_runtime"] == "libgomp"
    assert [s["warmup"] for s in out.steps] == [True, False, False]
    assert out.steps[2]["step_s"] == 0.35


@pytest.mark.parametrize("text,status,message", [
    ("", "garbage", "no output"),
    ("hello\n", "garbage", "line 1 is not JSON"),
    ("[1, 2]\n", "garbage", "not a JSON object"),
    (step(0) + "\n", "garbage", "first line must be"),
    (output(step(0), step(2), step(1)), "garbage", "step 2 out of order"),
    (output(step(0), step(1, step_s=float("nan")), step(2)), "garbage", "step_s is nan"),
    (output(step(0), step(1, forward_s=-1.0), step(2)), "garbage", "negative forward_s"),
    (output(step(0), step(1, loss="x"), step(2)), "garbage", "loss is 'x'"),
    (output(step(0), step(1)), "garbage", "2 step records, expected 3"),
    (output(step(0), json.dumps({"val_loss": 3}), step(1)), "garbage", "expected a step record"),
    (output(step(0), step(1), step(2), info=dict(INFO, threads=1)), "mismatch", "threads=1 but 2"),
    (output(step(0), step(1), step(2), info=dict(INFO, token_chunk=16)), "mismatch", "token_chunk=16"),
    (output(step(0), step(1), step(2), info={"threads": 2}), "mismatch", "no \"variant\""),
])
def test_bad_output(text, status, message):
    out = runner.parse(text, STUDY, POINT)
    assert out.status == status and message in out.error, out.error


def test_null_info_fields_are_not_checked():
    out = runner.parse(output(step(0), step(1), step(2), info=dict(INFO, batch_subsize=None)), STUDY, POINT)
    assert out.status == "ok"


def test_command_line_and_environment():
    cmd = runner.command(STUDY, POINT, "/b/gpt2-tasks", "/repo")
    assert cmd == ["/b/gpt2-tasks", "--json", "-B", "4", "-T", "64", "--steps", "3", "--config", "tiny",
                   "--threads", "2", "--batch-subsize", "1", "--token-chunk", "64"]
    seq = runner.command(STUDY, Point("seq", "gcc", "fast", 1, None, None), "/b/gpt2-seq", "/repo")
    assert "--threads" not in seq and "--batch-subsize" not in seq
    env = runner.environment(STUDY, POINT)
    assert env["OMP_NUM_THREADS"] == "2" and env["OMP_PROC_BIND"] == "close" and env["OMP_PLACES"] == "cores"


def test_tiles_and_auto_on_the_command_line_and_in_the_info_check():
    """A chunk key left to the binary ("auto") is not passed and not checked against the info line
    (which records what the binary chose); a tile width given is passed and checked."""
    auto = Point("taskiter", "gcc", "fast", 2, 0, 64, None, 256, 0)
    cmd = runner.command(STUDY, auto, "/b/gpt2-taskiter", "/repo")
    assert cmd[cmd.index("--threads"):] == ["--threads", "2", "--token-chunk", "64", "--tile-columns", "256"]
    info = dict(INFO, variant="taskiter", batch_subsize=4, token_chunk=64, tile_columns=256, tile_in_channels=128)
    assert runner.parse(output(step(0), step(1), step(2), info=info), STUDY, auto).status == "ok"
    wrong = runner.parse(output(step(0), step(1), step(2), info=dict(info, tile_columns=384)), STUDY, auto)
    assert wrong.status == "mismatch" and "tile_columns=384" in wrong.error


def test_tile_sequences_on_the_command_line_and_in_the_info_check():
    """--tile-sequences is passed and checked like the tile widths; left to the binary ("auto"), it is
    neither, and the binary's --check is asked without it (the config compares it with model.B)."""
    two = Point("taskiter", "gcc", "fast", 2, 1, 64, None, 0, 0, 2)
    cmd = runner.command(STUDY, two, "/b/gpt2-taskiter", "/repo")
    assert cmd[cmd.index("--threads"):] == ["--threads", "2", "--batch-subsize", "1", "--token-chunk", "64",
                                            "--tile-sequences", "2"]
    assert "--tile-sequences" not in runner.check_command(STUDY, two, "/b/gpt2-taskiter", "/repo")
    info = dict(INFO, variant="taskiter", tile_columns=384, tile_in_channels=768, tile_sequences=2,
                chunking_auto=["tile_columns", "tile_in_channels"])
    assert runner.parse(output(step(0), step(1), step(2), info=info), STUDY, two).status == "ok"
    wrong = runner.parse(output(step(0), step(1), step(2), info=dict(info, tile_sequences=4)), STUDY, two)
    assert wrong.status == "mismatch" and "tile_sequences=4 but 2 was asked for" in wrong.error
    auto = two._replace(tile_sequences=0)
    assert "--tile-sequences" not in runner.command(STUDY, auto, "/b/gpt2-taskiter", "/repo")
    chosen = dict(info, tile_sequences=4, chunking_auto=["tile_columns", "tile_in_channels", "tile_sequences"])
    assert runner.parse(output(step(0), step(1), step(2), info=chosen), STUDY, auto).status == "ok"


def test_binary_template(monkeypatch):
    monkeypatch.delenv("PERFSTUDY_BUILD_DIR", raising=False)
    assert runner.binary_path(STUDY, POINT, "/repo") == "/repo/build/gcc/fast/gpt2-tasks"
    monkeypatch.setenv("PERFSTUDY_BUILD_DIR", "/elsewhere")
    assert runner.binary_path(STUDY, POINT, "/repo") == "/elsewhere/gcc/fast/gpt2-tasks"
