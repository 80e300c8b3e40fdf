"""Every variant under AddressSanitizer and UndefinedBehaviorSanitizer on a
tiny run, the parallel ones with several threads and chunkings."""

import pytest

from variant_helpers import FIXTURES, ROOT, RUNTIME, VARIANTS, make, run


@pytest.fixture(scope="module")
def asan_build():
    r = make("asan")
    assert r.returncode == 0, r.stdout + r.stderr
    return ROOT / "build" / "asan"


pytestmark = pytest.mark.needs("asan")


@pytest.mark.parametrize("variant", VARIANTS)
def test_tiny_run_is_sanitizer_clean(asan_build, variant):
    d = FIXTURES / "odd36"
    args = [asan_build / f"gpt2-{variant}", "--model", d / "model.bin", "--verify", d / "state.bin",
            "--steps", "3", "--lr", "1e-3", "--json", "--trace", "/dev/null"]
    if variant != "seq":
        # a runtime's workers wait actively: 2 threads, one a core, not 3 on 2 cores where they take
        # turns (the 3-thread chunk schedule of the same graph is taskiter's and tasks' here)
        threads = "2" if variant in RUNTIME else "3"
        args += ["--threads", threads, "--batch-subsize", "2", "--token-chunk", "5"]
    r = run(args, timeout=300, env={"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
                                    "LSAN_OPTIONS": f"suppressions={ROOT / 'tests' / 'lsan.supp'}",
                                    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "runtime error" not in r.stderr and "Sanitizer" not in r.stderr, r.stderr[-3000:]


def test_bad_input_is_sanitizer_clean(asan_build, tmp_path):
    bad = tmp_path / "m.bin"
    bad.write_bytes((FIXTURES / "odd36" / "model.bin").read_bytes()[:5000])
    r = run([asan_build / "gpt2-taskiter", "--model", bad], env={"ASAN_OPTIONS": "detect_leaks=1"})
    assert r.returncode == 2
    assert "Sanitizer" not in r.stderr
