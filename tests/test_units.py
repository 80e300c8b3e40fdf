"""The C unit tests (built by `make unit-tests`): the fast matrix products
bit for bit against the oracle loops for each compiler and instruction set,
the traffic model against counts made by hand, the `tasks` executor's
depend lists against the whole task graph, and the model state's blocks
(zeroed, aligned, in huge pages to their last byte)."""
import re

import pytest

from variant_helpers import ROOT, make, run


@pytest.fixture(scope="module")
def unit_tests():
    r = make("unit-tests")
    assert r.returncode == 0, r.stdout + r.stderr
    return sorted((ROOT / "build" / "tests").iterdir())


def test_every_unit_test_was_built(unit_tests):
    names = {p.name for p in unit_tests}
    for compiler in ("gcc", "clang"):
        for arch in ("native", "avx2", "generic", "avx512emu", "smallblocks"):
            assert f"test_gemm-{compiler}-{arch}" in names
        assert f"test_traffic-{compiler}" in names
        assert f"test_taskgraph-{compiler}" in names
        assert f"test_memory-{compiler}" in names


@pytest.mark.parametrize("name", [f"test_gemm-{c}-{a}" for c in ("gcc", "clang")
                                  for a in ("native", "avx2", "generic", "avx512emu", "smallblocks")] +
                         ["test_traffic-gcc", "test_traffic-clang", "test_taskgraph-gcc", "test_taskgraph-clang",
                          "test_memory-gcc", "test_memory-clang"])
def test_unit(unit_tests, name):
    r = run([ROOT / "build" / "tests" / name], timeout=300)
    last = r.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"(\d+) passed, (\d+) failed", last)
    assert m, r.stdout[-2000:]
    assert int(m.group(1)) > 0 and int(m.group(2)) == 0, r.stdout[-2000:]
    assert r.returncode == 0
