"""Points and their order."""

from collections import Counter

from pstudy.store import config, sweep

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
