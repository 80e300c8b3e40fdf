"""gpt2-mpi's collectives (variants/mpi_collectives.c) without a model: tests/test_collectives.c under a
real `mpirun` at 1 to 5 ranks, every reduce-scatter, all-gather and loss reduction against the sum
in the order the module documents, bit for bit, on buffers of zero elements, fewer than the ranks,
not divisible by them, and larger than the threshold of the parallel adds."""
import re

import pytest

from test_mpi import mpirun
from variant_helpers import ROOT, make

pytestmark = pytest.mark.needs("mpi")


@pytest.fixture(scope="module")
def program():
    path = ROOT / "build" / "tests" / "test_collectives-gcc"
    r = make(str(path.relative_to(ROOT)))
    assert r.returncode == 0, r.stdout + r.stderr
    return path


@pytest.mark.serial
@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5])
def test_collectives_are_the_documented_sums(program, ranks):
    r = mpirun(ranks, [program], timeout=300)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    m = re.fullmatch(r"collectives: (\d+) ranks, (\d+) checks, (\d+) failed", last)
    assert m, r.stdout[-3000:] + r.stderr[-2000:]
    assert int(m.group(1)) == ranks and int(m.group(2)) > 0 and int(m.group(3)) == 0, r.stdout[-3000:]
    assert r.returncode == 0
