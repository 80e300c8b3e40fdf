"""Config checking: every problem names the file and the key and exits 2."""

import pytest

from pstudy.store import config, vocabulary
from pstudy.errors import StudyError

GOOD = {"model": {"config": "tiny", "B": 4, "T": 64}, "run": {"steps": 3},
        "sweep": {"threads": [1, 2]}}


def with_change(table, key, value):
    raw = {t: dict(v) for t, v in GOOD.items()}
    raw.setdefault(table, {})[key] = value
    return raw


def error_of(raw, cpu_count=2):
    with pytest.raises(StudyError) as err:
        config.from_dict(raw, "configs/x.toml", cpu_count=cpu_count)
    return str(err.value)


def test_good_config_gets_defaults():
    s = config.from_dict(GOOD, "configs/x.toml", cpu_count=2)
    assert s.name == "x"
    assert s.run["warmup"] == 1 and s.run["repetitions"] == 3
    assert s.sweep["variants"] == ["seq", "forkjoin", "tasks", "taskiter"]  # runtime variants: when named only
    assert s.sweep["token_chunk"] == [64]  # defaults to T
    assert s.counters["backend"] == "none"


def test_the_runtime_variants_are_the_ones_the_makefile_builds_on_a_runtime():
    import re
    from conftest import REPO
    listed = re.search(r"^RUNTIME_VARIANTS\s*:=(.*)$", (REPO / "Makefile").read_text(), re.M).group(1).split()
    assert sorted(vocabulary.RUNTIME_VARIANTS) == sorted(listed)
    assert set(vocabulary.STARPU_VARIANTS) <= set(listed)


@pytest.mark.parametrize("table,key", [("sweep", "thread"), ("model", "batch"), ("run", "step")])
def test_unknown_key_is_named(table, key):
    msg = error_of(with_change(table, key, 1))
    assert msg.startswith(f"configs/x.toml: {table}.{key}: unknown key")


def test_unknown_table_is_named():
    raw = dict(GOOD, plots={"dpi": 100})
    assert error_of(raw).startswith("configs/x.toml: plots: unknown table")


@pytest.mark.parametrize("table,key,value", [
    ("model", "B", 0), ("model", "B", "4"), ("model", "T", 2.5), ("run", "steps", True),
    ("run", "timeout_s", -1), ("run", "warmup", -1), ("sweep", "threads", "0..2"),
    ("sweep", "threads", "2..1"), ("sweep", "threads", "lots"), ("sweep", "threads", [1, 0]),
    ("sweep", "variants", ["seq", "openmp"]), ("sweep", "variants", []), ("sweep", "compilers", ["icc"]),
    ("sweep", "kernels", "fastest"), ("sweep", "batch_subsize", [0]), ("sweep", "batch_subsize", [8]),
    ("sweep", "token_chunk", [128]), ("sweep", "token_chunk", ["automatic"]), ("sweep", "tile_columns", [0]),
    ("sweep", "tile_columns", "wide"), ("sweep", "tile_in_channels", [-64]), ("sweep", "batch_subsize", []),
    ("sweep", "tile_sequences", [0]), ("sweep", "tile_sequences", "whole"), ("sweep", "tile_sequences", [2, 8]),
    ("placement", "proc_bind", "tight"), ("placement", "places", "cpus"),
    ("counters", "backend", "vtune"), ("run", "binary", "build/gpt2"), ("run", "name", "a b"),
])
def test_bad_value_is_named(table, key, value):
    msg = error_of(with_change(table, key, value))
    assert msg.startswith(f"configs/x.toml: {table}.{key}: "), msg


def test_auto_chunking_values():
    """"auto" (the binary's choice for its thread count) in any chunk list, after the numbers; it is
    not compared with B or T; the tile keys default to it."""
    s = config.from_dict(GOOD, "configs/x.toml", cpu_count=2)
    assert s.sweep["tile_columns"] == ["auto"] and s.sweep["tile_in_channels"] == ["auto"]
    assert s.sweep["tile_sequences"] == ["auto"]
    raw = with_change("sweep", "batch_subsize", ["auto", 4, 1, 4])
    raw["sweep"]["token_chunk"] = "auto"
    raw["sweep"]["tile_columns"] = [384, "auto"]
    raw["sweep"]["tile_sequences"] = ["auto", 2, 4, 2]
    s = config.from_dict(raw, "configs/x.toml", cpu_count=2)
    assert s.sweep["batch_subsize"] == [1, 4, "auto"] and s.sweep["token_chunk"] == ["auto"]
    assert s.sweep["tile_columns"] == [384, "auto"] and s.sweep["tile_sequences"] == [2, 4, "auto"]


def test_tile_sequences_larger_than_the_batch_is_named():
    """The binaries refuse more sequences per row chunk than the batch has: the config says so first."""
    assert error_of(with_change("sweep", "tile_sequences", [8])) == \
        "configs/x.toml: sweep.tile_sequences: 8 is larger than model.B = 4"


def test_missing_required_key():
    raw = {t: dict(v) for t, v in GOOD.items()}
    del raw["run"]["steps"]
    assert error_of(raw) == "configs/x.toml: run.steps: missing (required)"


def test_config_and_checkpoint_are_exclusive():
    assert "model.config" in error_of(with_change("model", "checkpoint", "gpt2_124M.bin"))
    raw = {t: dict(v) for t, v in GOOD.items()}
    del raw["model"]["config"]
    assert "model.config" in error_of(raw)


@pytest.mark.parametrize("value,cpus,expected", [
    ("1..max", 4, [1, 2, 3, 4]), ("max", 6, [6]), ([1, "2..3", 8], 2, [1, 2, 3, 8]), (2, 2, [2]),
    ("1..max", 1, [1]), (["max", 1], 2, [1, 2]),
])
def test_thread_ranges(value, cpus, expected):
    s = config.from_dict(with_change("sweep", "threads", value), "x.toml", cpu_count=cpus)
    assert s.sweep["threads"] == expected


def test_digest_changes_with_config():
    a = config.from_dict(GOOD, "x.toml", cpu_count=2)
    b = config.from_dict(with_change("run", "steps", 4), "x.toml", cpu_count=2)
    assert a.digest() != b.digest()
    assert a.digest() == config.from_dict(GOOD, "x.toml", cpu_count=2).digest()


def test_cli_unknown_key_exits_2_naming_file_and_key(study):
    path = study.config(text='[model]\nconfig = "tiny"\nB = 4\nT = 64\n[run]\nsteps = 2\n'
                             '[sweep]\nthread = [1]\n')
    done = study.perfstudy("run", path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "sweep.thread" in lines[0], done.stderr


def test_cli_bad_value_exits_2(study):
    path = study.config(text='[model]\nconfig = "tiny"\nB = -4\nT = 64\n[run]\nsteps = 2\n')
    done = study.perfstudy("run", path)
    assert done.returncode == 2
    assert str(path) in done.stderr and "model.B" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("sweep, problem", [
    ('variants = ["mpi"]\ncomm_threads = [1, 65]', "expected an integer from 1 to 64"),
    ('variants = ["forkjoin"]\ncomm_threads = 2', "applies to the distributed variants")])
def test_cli_bad_comm_threads_exits_2_in_one_line(study, sweep, problem):
    path = study.config(text=f'[model]\nconfig = "tiny"\nB = 4\nT = 64\n[run]\nsteps = 2\n[sweep]\n{sweep}\n')
    done = study.perfstudy("run", path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"perfstudy run: {path}: sweep.comm_threads: ") and problem in line, line
    assert study.result_dirs() == []


def test_cli_missing_file_exits_2(study):
    done = study.perfstudy("run", study.tmp / "nope.toml")
    assert done.returncode == 2
    assert f"{study.tmp / 'nope.toml'}: no such config file" in done.stderr


def test_cli_syntax_error_exits_2(study):
    path = study.config(text="[model\nB = 4\n")
    done = study.perfstudy("run", path)
    assert done.returncode == 2 and str(path) in done.stderr and "not valid TOML" in done.stderr


def test_cli_missing_binary_exits_2(study):
    path = study.config()
    (study.build / "gcc" / "fast" / "gpt2-taskiter").unlink()
    done = study.perfstudy("run", path)
    assert done.returncode == 2
    assert "run.binary" in done.stderr and "gpt2-taskiter" in done.stderr
    assert study.result_dirs() == []


def test_shipped_configs_are_valid():
    from conftest import REPO
    for name in ("default", "quick", "wiki-124m"):
        s = config.load(REPO / "configs" / f"{name}.toml", cpu_count=4)
        assert s.sweep["variants"] == ["seq", "forkjoin", "tasks", "taskiter"]  # runtime variants: when named only
    assert config.load(REPO / "configs" / "wiki-124m.toml", cpu_count=4).sweep["threads"] == [1, 2, 3, 4]
    # every shipped config loads; the 16-core study's thread counts are written out, whatever the machine
    for path in sorted((REPO / "configs").glob("*.toml")):
        config.load(path, cpu_count=4)
    node16 = config.load(REPO / "configs" / "wiki-124m-node16.toml", cpu_count=2)
    assert node16.sweep["threads"] == [1, 2, 4, 8, 16] and not node16.analysis["ceilings"]
    pairs = config.load(REPO / "configs" / "wiki-124m-pairs.toml", cpu_count=2)
    assert pairs.sweep["threads"] == [8, 16] and pairs.run["repetitions"] >= 6
    # a shared host places its vCPUs anew: each run measures where its threads landed
    assert node16.analysis["peak_beside"] and pairs.analysis["peak_beside"]
    assert config.load(REPO / "configs" / "default.toml", cpu_count=4).analysis["peak_beside"]
    assert not config.load(REPO / "configs" / "regression.toml", cpu_count=4).analysis["peak_beside"]
