"""The front's options beyond training: --list-configs (the harness validates configs with it),
--list-knobs (the harness sweeps what it lists), --help, and getopt_long's spellings of the options."""

import json
import sys

import pytest

from variant_helpers import ROOT, VARIANTS, binary, run

sys.path.insert(0, str(ROOT / "harness"))
from pstudy.store import vocabulary  # noqa: E402


@pytest.mark.parametrize("variant", VARIANTS)
def test_list_configs_one_name_per_line(variant):
    r = run([binary(variant), "--list-configs"])
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.splitlines() == ["d12", "d6", "small", "tiny"]
    assert r.stdout.endswith("\n")


def test_list_configs_is_the_list_config_checks_against():
    names = run([binary("seq"), "--list-configs"]).stdout.split()
    unknown = run([binary("seq"), "--config", "nope"])
    assert unknown.returncode == 2
    assert unknown.stderr.strip().endswith("(known: " + ", ".join(names) + ")")
    for name in names:  # each one is accepted (shapes only, nothing trained)
        r = run([binary("seq"), "--config", name, "-T", "8", "--describe"])
        assert r.returncode == 0, r.stderr


def knob_disagreements(binary_knobs, chunk_options, unswept, program):
    """Each chunking knob only one side knows, or knows by another option, as one line naming the knob
    and the side: the binary's `--list-knobs` (binary_knobs, names) against the harness's vocabulary
    (chunk_options: {sweep key: (option, info-line key)}, and the knobs no sweep sets)."""
    vocabulary_file = "harness/pstudy/store/vocabulary.py"
    harness = {info_key: option for option, info_key in chunk_options.values()}
    harness.update({name: "--" + name.replace("_", "-") for name in unswept})
    problems = [f"{name}: a knob of {program} --list-knobs that {vocabulary_file} lacks (CHUNK_OPTIONS or "
                f"UNSWEPT_KNOBS)" for name in binary_knobs if name not in harness]
    problems += [f"{name}: in {vocabulary_file} but not a knob of {program} --list-knobs"
                 for name in harness if name not in binary_knobs]
    problems += [f"{name}: {vocabulary_file} gives it as {option}, {program} as --{name.replace('_', '-')}"
                 for name, option in harness.items()
                 if name in binary_knobs and option != "--" + name.replace("_", "-")]
    return problems


def list_knobs(variant):
    """{name: (least, largest)} of a binary's --list-knobs."""
    r = run([binary(variant), "--list-knobs"])
    assert r.returncode == 0 and r.stderr == "", r.stderr
    knobs = {}
    for line in r.stdout.splitlines():
        name, least, largest = line.split()
        knobs[name] = (int(least), int(largest))
    return knobs


@pytest.mark.parametrize("variant", VARIANTS)
def test_list_knobs_are_the_harness_vocabulary(variant):
    knobs = list_knobs(variant)
    assert knobs and all(least == 1 and largest >= 1 << 20 for least, largest in knobs.values()), knobs
    problems = knob_disagreements(list(knobs), vocabulary.CHUNK_OPTIONS, vocabulary.UNSWEPT_KNOBS,
                                  f"gpt2-{variant}")
    assert not problems, "\n".join(problems)


def test_knob_disagreements_name_the_knob_and_the_side():
    options = dict(vocabulary.CHUNK_OPTIONS)
    knobs = [info_key for _, info_key in options.values()] + list(vocabulary.UNSWEPT_KNOBS)
    assert knob_disagreements(knobs, options, vocabulary.UNSWEPT_KNOBS, "gpt2-seq") == []
    assert knob_disagreements(knobs + ["tile_depth"], options, vocabulary.UNSWEPT_KNOBS, "gpt2-seq") == [
        "tile_depth: a knob of gpt2-seq --list-knobs that harness/pstudy/store/vocabulary.py lacks "
        "(CHUNK_OPTIONS or UNSWEPT_KNOBS)"]
    options["tile_depth"] = ("--tile-depth", "tile_depth")
    assert knob_disagreements(knobs, options, vocabulary.UNSWEPT_KNOBS, "gpt2-seq") == [
        "tile_depth: in harness/pstudy/store/vocabulary.py but not a knob of gpt2-seq --list-knobs"]
    options["tile_depth"] = ("--depth", "tile_depth")
    assert knob_disagreements(knobs + ["tile_depth"], options, vocabulary.UNSWEPT_KNOBS, "gpt2-seq") == [
        "tile_depth: harness/pstudy/store/vocabulary.py gives it as --depth, gpt2-seq as --tile-depth"]


def test_every_listed_knob_is_an_option_of_that_range():
    for name, (least, largest) in list_knobs("tasks").items():
        option = "--" + name.replace("_", "-")
        for value in (least - 1, largest + 1):
            r = run([binary("tasks"), option, str(value), "--check"])
            assert r.returncode == 2
            assert f"{option}: {value} is out of range [{least}, {largest}]" in r.stderr


def test_help():
    r = run([binary("seq"), "--help"])
    assert r.returncode == 0 and r.stdout.startswith("usage: gpt2-seq")
    for option in ("--list-configs", "--shuffle", "--data-order", "--verify", "--expect-losses"):
        assert option in r.stdout


def test_option_spellings():
    # --name=value and -Bvalue as getopt_long reads them; the info line reports what was read
    r = run([binary("seq"), "--config=tiny", "-B2", "-T", "8", "--steps=1", "--json"])
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.splitlines()[0])["info"]
    assert (info["config"], info["B"], info["T"]) == ("tiny", 2, 8)
    assert info["chunked"] is False


def test_chunked_in_info():
    r = run([binary("tasks"), "--config", "tiny", "-B", "2", "-T", "8", "--steps", "1", "--json"])
    assert json.loads(r.stdout.splitlines()[0])["info"]["chunked"] is True


def test_diverged_training_writes_valid_json():
    """--json wrote `"loss": -nan` (invalid JSON) when training diverged; a loss that is
    not a finite number is null."""
    r = run([binary("seq"), "--config", "tiny", "-T", "16", "--steps", "4", "--lr", "1e30", "--json"])
    assert r.returncode == 0, r.stderr

    def refuse(constant):
        raise ValueError(constant)
    records = [json.loads(line, parse_constant=refuse) for line in r.stdout.splitlines()]
    losses = [rec["loss"] for rec in records if "step" in rec]
    assert len(losses) == 4 and losses[-1] is None


@pytest.mark.parametrize("variant", ["seq", "tasks"])
def test_check_stops_where_the_run_would_start(variant, tmp_path):
    """--check: every check of a run (options, model, data, outputs, memory), nothing run or written."""
    ok = run([binary(variant), "--config", "tiny", "-B", "2", "-T", "8", "--check", "--json",
              "--save", tmp_path / "m.bin"])
    assert ok.returncode == 0 and ok.stdout == "" and ok.stderr == "", ok.stderr
    assert list(tmp_path.iterdir()) == []
    for args, needle in [(["--config", "tiny", "-T", "99999"], "max_seq_len"),
                         (["--config", "d12", "-B", "100000", "-T", "1024"], "exceeds the limit"),
                         (["--config", "d12", "-B", "300000", "-T", "32"], "more than the limit"),
                         (["--config", "tiny", "--trace", tmp_path], "cannot write trace")]:
        r = run([binary(variant)] + args + ["--check"])
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr, r.stderr


@pytest.mark.parametrize("variant", ["tasks", "taskiter"])
def test_automatic_chunking_in_info(variant):
    """What the executor chose for its thread count is in the info line, and a knob given is kept
    and not listed as chosen; 1 thread: one chunk, products whole (tiny: C = 64, widest 256)."""
    def info(*args):
        r = run([binary(variant), "--config", "tiny", "-B", "4", "-T", "32", "--steps", "1", "--json", *args])
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.splitlines()[0])["info"]
    one = info("--threads", "1")
    assert one["chunking_auto"] == ["batch_subsize", "token_chunk", "tile_columns", "tile_in_channels", "tile_sequences"]
    assert (one["batch_subsize"], one["token_chunk"], one["tile_columns"], one["tile_in_channels"],
            one["tile_sequences"]) == (4, 32, 256, 256, 0)
    four = info("--threads", "4", "--token-chunk", "8", "--tile-columns", "32")
    assert four["chunking_auto"] == ["batch_subsize", "tile_in_channels", "tile_sequences"]
    assert four["token_chunk"] == 8 and four["tile_columns"] == 32 and four["batch_subsize"] < 4
    # a separate pass packs the weights only where several row chunks share the packing: not with
    # every row in one chunk, chosen or given, whatever the column tiles
    whole_rows = info("--threads", "2", "--batch-subsize", "4", "--token-chunk", "32", "--tile-columns", "32")
    assert not one["weights_packed_per_step"] and not whole_rows["weights_packed_per_step"]
    assert four["weights_packed_per_step"]
    assert whole_rows["ops_per_step"] < four["ops_per_step"]
    # d12 at 2 threads: the products keep their rows whole (no pack pass), one tile per thread of the
    # narrowest (C = 768), and the other row operations are cut by sequence
    d12 = json.loads(run([binary(variant), "--config", "d12", "--threads", "2", "--json",
                          "--describe"]).stdout.splitlines()[0])["info"]
    assert (d12["batch_subsize"], d12["token_chunk"], d12["tile_columns"], d12["tile_in_channels"],
            d12["tile_sequences"]) == (1, 64, 384, 768, 4)
    assert not d12["weights_packed_per_step"]
    # tile_sequences given: the products' row chunks are those sequences, the row chunks chosen apart
    given = info("--threads", "2", "--tile-sequences", "2")
    assert given["tile_sequences"] == 2 and "tile_sequences" not in given["chunking_auto"]
    assert given["weights_packed_per_step"]
    unchunked = json.loads(run([binary("forkjoin"), "--config", "tiny", "-T", "8", "--steps", "1",
                                "--json"]).stdout.splitlines()[0])["info"]
    assert unchunked["chunking_auto"] == [] and unchunked["tile_columns"] == 0
    assert not unchunked["weights_packed_per_step"]
