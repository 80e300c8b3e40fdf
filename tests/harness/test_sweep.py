"""Points and their order."""

from collections import Counter

import pytest

from pstudy.errors import StudyError

from pstudy.measure import runner
from pstudy.store import config, resultsdir, sweep, vocabulary

RAW = {"model": {"config": "tiny", "B": 4, "T": 64}, "run": {"steps": 3, "repetitions": 3},
       "sweep": {"threads": [1, 2, 4], "batch_subsize": [1, 2, 4], "token_chunk": [16, 64]}}


def test_points_chunk_only_task_variants_and_seq_only_at_one_thread():
    study = config.from_dict(RAW, "x.toml", cpu_count=4)
    pts = sweep.points(study)
    by_variant = Counter(p.variant for p in pts)
    assert by_variant == {"seq": 1, "forkjoin": 3, "tasks": 3 * 3 * 2, "taskiter": 3 * 3 * 2}
    for p in pts:
        if p.variant in ("seq", "forkjoin"):
            assert p.batch_subsize is None and p.k is None
        else:
            assert p.batch_subsize in (1, 2, 4) and p.k in (16, 64)
    assert [p.threads for p in pts if p.variant == "seq"] == [1]
    assert len(set(pts)) == len(pts)


def test_tile_widths_and_auto_are_point_keys():
    raw = {"model": {"config": "tiny", "B": 4, "T": 64}, "run": {"steps": 3, "repetitions": 1},
           "sweep": {"variants": ["forkjoin", "taskiter"], "threads": [2], "batch_subsize": [1, "auto"],
                     "token_chunk": [64, "auto"], "tile_columns": [128, "auto"], "tile_in_channels": [64]}}
    pts = sweep.points(config.from_dict(raw, "x.toml", cpu_count=2))
    chunked = [p for p in pts if p.variant == "taskiter"]
    # batch_subsize "auto" is the automatic chunking: one point, every chunk key AUTO
    assert len(chunked) == 1 * 2 * 2 * 1 + 1 and len(set(chunked)) == len(chunked)
    auto = vocabulary.AUTO
    assert sweep.Point("taskiter", "gcc", "fast", 2, auto, auto, None, auto, auto, auto, auto) in chunked
    assert {p.tile_columns for p in chunked} == {128, auto} and {p.tile_in_channels for p in chunked} == {64, auto}
    assert {p.k for p in chunked if p.batch_subsize == 1} == {64, auto}
    forkjoin = [p for p in pts if p.variant == "forkjoin"]
    assert [(p.batch_subsize, p.tile_columns) for p in forkjoin] == [(None, None)]
    # names: "auto" in stems and labels, and a stem reads back as its point
    auto = sweep.Point("taskiter", "gcc", "fast", 2, vocabulary.AUTO, 64, None, vocabulary.AUTO, 64, vocabulary.AUTO,
                       vocabulary.AUTO)
    assert resultsdir.run_stem(auto, 0) == "taskiter_gcc_fast_t2_bsauto_k64_tcauto_ti64_tsauto_tpauto_r0"
    assert vocabulary.point_label(auto) == "taskiter gcc/fast t=2 bs=auto k=64 ti=64"
    for p in pts:
        assert resultsdir.parse_run_stem(resultsdir.run_stem(p, 3)) == (tuple(p), 3)
    # a stem from before the tile keys still reads
    assert resultsdir.parse_run_stem("tasks_gcc_fast_t2_bs1_k64_r0") == \
        (sweep.Point("tasks", "gcc", "fast", 2, 1, 64, None, None, None, None, None, None), 0)


def test_tile_sequences_is_a_point_key_after_the_others():
    raw = {"model": {"config": "tiny", "B": 4, "T": 64}, "run": {"steps": 3, "repetitions": 1},
           "sweep": {"variants": ["seq", "taskiter"], "threads": [2], "batch_subsize": [1, "auto"],
                     "token_chunk": [64], "tile_sequences": [2, "auto"]}}
    pts = sweep.points(config.from_dict(raw, "x.toml", cpu_count=2))
    auto = vocabulary.AUTO
    assert [tuple(p) for p in pts if p.variant == "taskiter"] == [
        sweep.Point("taskiter", "gcc", "fast", 2, 1, 64, None, auto, auto, 2, auto, None),
        sweep.Point("taskiter", "gcc", "fast", 2, 1, 64, None, auto, auto, auto, auto, None),
        sweep.Point("taskiter", "gcc", "fast", 2, auto, auto, None, auto, auto, auto, auto, None)]  # the automatic chunking
    assert [p.tile_sequences for p in pts if p.variant == "seq"] == [None]
    # the positions of the keys before it keep their meaning
    assert vocabulary.POINT_KEYS[7:10] == ["tile_columns", "tile_in_channels", "tile_sequences"]
    two = pts[1]
    assert resultsdir.run_stem(two, 0) == "taskiter_gcc_fast_t2_bs1_k64_tcauto_tiauto_ts2_tpauto_r0"
    assert two.label() == "taskiter gcc/fast t=2 bs=1 k=64 ts=2"
    assert resultsdir.run_stem(pts[0], 0) == "seq_gcc_fast_t1_bsNA_kNA_r0"
    # a stem from before the key (the tile widths, no _ts) reads with it None, and names the same file
    old = resultsdir.parse_run_stem("taskiter_gcc_fast_t2_bs1_k64_tcauto_tiauto_r1")
    assert old == (sweep.Point("taskiter", "gcc", "fast", 2, 1, 64, None, auto, auto, None, None, None), 1)
    assert resultsdir.run_stem(old[0], 1) == "taskiter_gcc_fast_t2_bs1_k64_tcauto_tiauto_r1"
    assert vocabulary.point_label(old[0]) == "taskiter gcc/fast t=2 bs=1 k=64"
    assert resultsdir.parse_run_stem("taskiter_gcc_fast_t2_bs1_k64_tcauto_tiauto_tsNA_r0")[0][9] is None


def test_tiles_per_product_is_a_point_key_after_the_others():
    raw = {"model": {"config": "tiny", "B": 4, "T": 64}, "run": {"steps": 3, "repetitions": 1},
           "sweep": {"variants": ["forkjoin", "taskiter"], "threads": [2], "batch_subsize": [1, "auto"],
                     "token_chunk": [64], "tile_sequences": [4], "tiles_per_product": [2, 4, "auto"]}}
    pts = sweep.points(config.from_dict(raw, "x.toml", cpu_count=2))
    auto = vocabulary.AUTO
    assert [tuple(p) for p in pts if p.variant == "taskiter"] == [
        sweep.Point("taskiter", "gcc", "fast", 2, 1, 64, None, auto, auto, 4, 2, None),
        sweep.Point("taskiter", "gcc", "fast", 2, 1, 64, None, auto, auto, 4, 4, None),
        sweep.Point("taskiter", "gcc", "fast", 2, 1, 64, None, auto, auto, 4, auto, None),
        sweep.Point("taskiter", "gcc", "fast", 2, auto, auto, None, auto, auto, auto, auto, None)]
    assert [p.tiles_per_product for p in pts if p.variant == "forkjoin"] == [None]
    assert vocabulary.POINT_KEYS[7:11] == ["tile_columns", "tile_in_channels", "tile_sequences", "tiles_per_product"]
    four = pts[2]
    assert resultsdir.run_stem(four, 0) == "taskiter_gcc_fast_t2_bs1_k64_tcauto_tiauto_ts4_tp4_r0"
    assert four.label() == "taskiter gcc/fast t=2 bs=1 k=64 ts=4 tp=4"
    assert resultsdir.parse_run_stem(resultsdir.run_stem(four, 1)) == (tuple(four), 1)
    # a stem from before the key (no _tp) reads with it None and names the same file
    old = resultsdir.parse_run_stem("taskiter_gcc_fast_t2_bs1_k64_tcauto_tiauto_tsauto_r0")
    assert old == (sweep.Point("taskiter", "gcc", "fast", 2, 1, 64, None, auto, auto, auto, None, None), 0)
    assert resultsdir.run_stem(old[0], 0) == "taskiter_gcc_fast_t2_bs1_k64_tcauto_tiauto_tsauto_r0"


def test_tiles_per_product_and_tile_columns_both_given_are_refused():
    raw = {"model": {"config": "tiny", "B": 4, "T": 64}, "run": {"steps": 3, "repetitions": 1},
           "sweep": {"variants": ["taskiter"], "threads": [2], "tile_columns": [128, "auto"],
                     "tiles_per_product": [2]}}
    with pytest.raises(StudyError, match=r"^x.toml: sweep.tiles_per_product: numbers here cannot be swept with "
                                         r"numbers in sweep.tile_columns"):
        config.from_dict(raw, "x.toml", cpu_count=2)
    # with either one "auto" alone, both go
    raw["sweep"]["tile_columns"] = ["auto"]
    assert len(sweep.points(config.from_dict(raw, "x.toml", cpu_count=2))) == 1
    raw["sweep"]["tiles_per_product"] = [0]
    with pytest.raises(StudyError, match="sweep.tiles_per_product"):
        config.from_dict(raw, "x.toml", cpu_count=2)


def test_starpu_sched_is_a_point_key_of_the_starpu_variant_only(monkeypatch):
    raw = {"model": {"config": "tiny", "B": 4, "T": 64}, "run": {"steps": 3, "repetitions": 1},
           "sweep": {"variants": ["forkjoin", "taskiter", "starpu"], "threads": [2], "batch_subsize": [1, "auto"],
                     "token_chunk": [64], "starpu_sched": ["lws", "dmda"]}}
    study = config.from_dict(raw, "x.toml", cpu_count=2)
    pts = sweep.points(study)
    auto = vocabulary.AUTO
    # every chunking of starpu at each scheduler, in the config's order; the others NA
    assert [tuple(p) for p in pts if p.variant == "starpu"] == [
        sweep.Point("starpu", "gcc", "fast", 2, 1, 64, None, auto, auto, auto, auto, "lws"),
        sweep.Point("starpu", "gcc", "fast", 2, 1, 64, None, auto, auto, auto, auto, "dmda"),
        sweep.Point("starpu", "gcc", "fast", 2, auto, auto, None, auto, auto, auto, auto, "lws"),
        sweep.Point("starpu", "gcc", "fast", 2, auto, auto, None, auto, auto, auto, auto, "dmda")]
    assert {p.starpu_sched for p in pts if p.variant != "starpu"} == {None}
    # after the others: the keys recorded before it keep their meaning
    assert vocabulary.POINT_KEYS.index("starpu_sched") > vocabulary.POINT_KEYS.index("tiles_per_product")
    dmda = pts[[p.starpu_sched for p in pts].index("dmda")]
    assert resultsdir.run_stem(dmda, 0) == "starpu_gcc_fast_t2_bs1_k64_tcauto_tiauto_tsauto_tpauto_sdmda_r0"
    assert dmda.label() == "starpu gcc/fast t=2 bs=1 k=64 sched=dmda"
    for p in pts:
        assert resultsdir.parse_run_stem(resultsdir.run_stem(p, 2)) == (tuple(p), 2)
    # names with '-' and '_' read back whole
    for name in ("modular-heft-prio", "graph_test"):
        p = dmda._replace(starpu_sched=name)
        assert resultsdir.parse_run_stem(resultsdir.run_stem(p, 0)) == (tuple(p), 0)
    # each point runs with its scheduler, and with none inherited where it has none
    monkeypatch.setenv("STARPU_SCHED", "eager")
    assert runner.environment(study, dmda)["STARPU_SCHED"] == "dmda"
    assert "STARPU_SCHED" not in runner.environment(study, dmda._replace(starpu_sched=None))
    # the info line must name the scheduler asked for
    assert runner.check_info({"variant": "starpu", "runtime": {"scheduler": "dmda"}}, dmda) == ""
    assert "runtime.scheduler='lws'" in runner.check_info({"variant": "starpu", "runtime": {"scheduler": "lws"}}, dmda)
    assert config.from_dict(raw, "x.toml", cpu_count=2).as_dict()["sweep"]["starpu_sched"] == ["lws", "dmda"]
    # unset: starpu at StarPU's default (NA), and the digest of the config as before the key
    del raw["sweep"]["starpu_sched"]
    plain = config.from_dict(raw, "x.toml", cpu_count=2)
    assert {p.starpu_sched for p in sweep.points(plain)} == {None}
    assert "starpu_sched" not in plain.as_dict()["sweep"]
    assert plain.digest() != study.digest()


@pytest.mark.parametrize("value,message", [
    ("bogus", 'unknown StarPU scheduler "bogus" (known: eager, prio,'),
    (["lws", "lws"], "a value is repeated"),
    ([], "a StarPU scheduler name"),
    ([3], "a StarPU scheduler name")])
def test_starpu_sched_values_are_checked(value, message):
    raw = {"model": {"config": "tiny", "B": 4, "T": 64}, "run": {"steps": 3},
           "sweep": {"variants": ["starpu"], "starpu_sched": value}}
    with pytest.raises(StudyError) as err:
        config.from_dict(raw, "x.toml", cpu_count=2)
    assert str(err.value).startswith("x.toml: sweep.starpu_sched: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_schedule_is_repetition_major_shuffled_and_seeded():
    study = config.from_dict(RAW, "x.toml", cpu_count=4)
    pts = sweep.points(study)
    order = sweep.schedule(study, seed=3)
    assert len(order) == 3 * len(pts)
    for rep in range(3):
        block = order[rep * len(pts):(rep + 1) * len(pts)]
        assert {r.repetition for r in block} == {rep}
        assert sorted(map(repr, (r.point for r in block))) == sorted(map(repr, pts))
    first = [r.point for r in order[:len(pts)]]
    second = [r.point for r in order[len(pts):2 * len(pts)]]
    assert first != pts and first != second  # shuffled, and differently per repetition
    assert order == sweep.schedule(study, seed=3)
    assert order != sweep.schedule(study, seed=4)
    assert len({r.run_id() for r in order}) == len(order)


def test_one_thread_points_may_run_more_often_and_the_rest_keep_their_order():
    # [run] one_thread_repetitions: the 1-thread runs, whose chunk times predict replays, repeated
    # more than the others; the repetitions past the others' count run the 1-thread points alone
    raw = {t: dict(v) for t, v in RAW.items()}
    raw["run"]["one_thread_repetitions"] = 5
    study = config.from_dict(raw, "x.toml", cpu_count=4)
    pts = sweep.points(study)
    one = [p for p in pts if p.threads == 1]
    order = sweep.schedule(study, seed=3)
    assert len(order) == 3 * len(pts) + 2 * len(one)
    runs = Counter(r.point for r in order)
    assert all(runs[p] == (5 if p.threads == 1 else 3) for p in pts)
    # repetition-major still: every point once before any twice, the late repetitions 1-thread only
    reps = [r.repetition for r in order]
    assert reps == sorted(reps) and {r.point.threads for r in order if r.repetition >= 3} == {1}
    assert len({r.run_id() for r in order}) == len(order)
    # unset, the digest of a config is what it was before the key existed (its directories resume)
    assert config.from_dict(RAW, "x.toml", cpu_count=4).run["one_thread_repetitions"] is None
    plain = config.from_dict(RAW, "x.toml", cpu_count=4).digest()
    assert plain == "05cb1a85753cc6c1"  # as computed at 3b39024, before the key
    assert study.digest() != plain
    raw["run"]["one_thread_repetitions"] = 3  # as many as the others: the same runs, another config text
    assert len(sweep.schedule(config.from_dict(raw, "x.toml", cpu_count=4), 3)) == 3 * len(pts)
    raw["run"]["one_thread_repetitions"] = 0
    with pytest.raises(StudyError, match="run.one_thread_repetitions"):
        config.from_dict(raw, "x.toml", cpu_count=4)



def test_distributed_knobs_are_point_keys_of_the_distributed_variants_only():
    raw = {"model": {"config": "tiny", "B": 4, "T": 64}, "run": {"steps": 3, "repetitions": 1},
           "sweep": {"variants": ["forkjoin", "mpi"], "threads": [1], "ranks": [2],
                     "overlap": ["off", "on"], "collective": "direct"}}
    pts = sweep.points(config.from_dict(raw, "x.toml", cpu_count=2))
    assert [(p.update, p.collective, p.overlap) for p in pts if p.variant == "mpi"] == \
        [(None, "direct", "off"), (None, "direct", "on")]
    assert {(p.update, p.collective, p.overlap) for p in pts if p.variant == "forkjoin"} == {(None, None, None)}
    on = next(p for p in pts if p.overlap == "on")
    assert resultsdir.run_stem(on, 0) == "mpi_gcc_fast_t1_bsNA_kNA_R2_Cdirect_Oon_r0"
    assert resultsdir.parse_run_stem("mpi_gcc_fast_t1_bsNA_kNA_R2_Cdirect_Oon_r0") == (on, 0)
    assert on.label() == "mpi gcc/fast r=2 t=1 collective=direct overlap=on"
    assert runner.schedule_args(on) == ["--threads", "1", "--collective", "direct", "--overlap", "on"]
    raw["sweep"]["overlap"] = ["off", "sideways"]
    with pytest.raises(StudyError, match=r'^x.toml: sweep.overlap: expected "off" or "on" or a non-empty list'):
        config.from_dict(raw, "x.toml", cpu_count=2)
    raw["sweep"].pop("collective")
    raw["sweep"].update(overlap="on", variants=["forkjoin"])
    with pytest.raises(StudyError, match=r"^x.toml: sweep.overlap: applies to the distributed variants"):
        config.from_dict(raw, "x.toml", cpu_count=2)
    # a config that names no knob keeps its digest: the knobs are left out of the config as run
    raw["sweep"].pop("overlap"), raw["sweep"].update(variants=["forkjoin", "mpi"])
    assert not set(vocabulary.DISTRIBUTED_KEYS) & set(config.from_dict(raw, "x.toml", cpu_count=2).as_dict()["sweep"])


MPI_RAW = {"model": {"config": "tiny", "B": 4, "T": 64}, "run": {"steps": 3, "repetitions": 1},
           "sweep": {"variants": ["forkjoin", "mpi"], "threads": [1], "ranks": [2], "overlap": "on",
                     "comm_threads": [2, 1]}}


def test_comm_threads_is_a_count_swept_as_the_other_knobs():
    study = config.from_dict(MPI_RAW, "x.toml", cpu_count=2)
    pts = sweep.points(study)
    assert [(p.overlap, p.comm_threads) for p in pts if p.variant == "mpi"] == [("on", 2), ("on", 1)]
    assert {p.comm_threads for p in pts if p.variant == "forkjoin"} == {None}  # NA: it cannot apply there
    two = next(p for p in pts if p.comm_threads == 2)
    # a count, after the names in the stem (_K: --comm-threads K), read back as the number
    assert resultsdir.run_stem(two, 3) == "mpi_gcc_fast_t1_bsNA_kNA_R2_Oon_K2_r3"
    assert resultsdir.parse_run_stem("mpi_gcc_fast_t1_bsNA_kNA_R2_Oon_K2_r3") == (two, 3)
    assert resultsdir.parse_run_stem("mpi_gcc_fast_t1_bsNA_kNA_R2_Cring_K12_r0")[0].comm_threads == 12
    assert resultsdir.parse_run_stem("mpi_gcc_fast_t1_bsNA_kNA_R2_Kx_r0") is None
    # a point recorded before the key: the same stem and label as then
    old = two._replace(comm_threads=None)
    assert resultsdir.run_stem(old, 0) == "mpi_gcc_fast_t1_bsNA_kNA_R2_Oon_r0"
    assert resultsdir.parse_run_stem("mpi_gcc_fast_t1_bsNA_kNA_R2_Oon_r0") == (old, 0)
    assert two.label() == "mpi gcc/fast r=2 t=1 overlap=on comm_threads=2"
    assert vocabulary.distributed_settings(two) == {"overlap": "on", "comm_threads": 2}
    assert vocabulary.series_name({"variant": "mpi", "ranks": 2, "comm_threads": 2.0}) == "mpi ranks=2 comm_threads=2"
    assert vocabulary.key_dtype("comm_threads") == "Int64" and "comm_threads" not in vocabulary.TEXT_KEYS
    # the binary runs it, --check and the info line included
    assert runner.schedule_args(two) == ["--threads", "1", "--overlap", "on", "--comm-threads", "2"]
    assert runner.check_command(study, two, "gpt2-mpi", ".")[-3:] == ["--comm-threads", "2", "--check"]
    assert runner.CHECKED_OPTION_KEYS["--comm-threads"] == "sweep.comm_threads"
    info = {"variant": "mpi", "ranks": 2, "overlap": "on", "comm_threads": 2}
    assert runner.check_info(info, two) == ""
    assert runner.check_info(dict(info, comm_threads=1), two) == \
        "info line says comm_threads=1 but 2 was asked for"
    assert runner.launcher_meta(study)["comm_threads"] == [2, 1]
    # a config naming it keeps it as written; one naming none, its digest from before the key
    assert study.as_dict()["sweep"]["comm_threads"] == [2, 1]
    raw = {**MPI_RAW, "sweep": {k: v for k, v in MPI_RAW["sweep"].items() if k != "comm_threads"}}
    assert "comm_threads" not in config.from_dict(raw, "x.toml", cpu_count=2).as_dict()["sweep"]


@pytest.mark.parametrize("value,message", [
    (0, "expected an integer from 1 to 64 or a non-empty list of them, got 0"),
    (65, "expected an integer from 1 to 64 or a non-empty list of them, got 65"),
    ("x", "expected an integer from 1 to 64 or a non-empty list of them, got 'x'"),
    ([1, "2"], "expected an integer from 1 to 64"),
    (True, "expected an integer from 1 to 64"),
    (2.0, "expected an integer from 1 to 64"),
    ([], "expected an integer from 1 to 64"),
    ([2, 2], "a value is repeated in [2, 2]")])
def test_comm_threads_values_are_checked(value, message):
    raw = {**MPI_RAW, "sweep": dict(MPI_RAW["sweep"], comm_threads=value)}
    with pytest.raises(StudyError) as err:
        config.from_dict(raw, "x.toml", cpu_count=2)
    assert str(err.value).startswith("x.toml: sweep.comm_threads: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_comm_threads_needs_a_distributed_variant():
    raw = {**MPI_RAW, "sweep": dict(MPI_RAW["sweep"], variants=["forkjoin"])}
    raw["sweep"].pop("overlap")
    with pytest.raises(StudyError, match=r"^x.toml: sweep.comm_threads: applies to the distributed variants \(mpi\)"):
        config.from_dict(raw, "x.toml", cpu_count=2)
