"""The libFuzzer targets of the readers and the command line (tests/fuzz/, `make fuzz`): every committed
corpus file (seeds and regression-* inputs that once crashed) runs clean, and
a short bounded fuzzing run per target finds no crash, hang, leak or
sanitizer report."""
import os
import re
import subprocess

import pytest

from variant_helpers import ROOT, make

TARGETS = ["checkpoint", "tokens", "debug_state", "losses", "options"]
# seconds of fuzzing per target (libFuzzer runs tens of thousands of inputs a second on these readers; `make
# fuzz` fuzzes for longer); the committed corpus (seeds and every input that once crashed) replays in full above
SECONDS = int(os.environ.get("FUZZ_TEST_SECONDS", "5"))
BAD = re.compile(r"ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|runtime error:|"
                 r"SUMMARY: |deadly signal|Test unit written")


@pytest.fixture(scope="module")
def fuzz_build():
    r = make("fuzz-build")
    assert r.returncode == 0, r.stdout + r.stderr
    return ROOT / "build" / "fuzz"


def run_fuzzer(args, timeout):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and not BAD.search(out), out[-4000:]
    return out


pytestmark = pytest.mark.needs("fuzz")


@pytest.mark.parametrize("target", TARGETS)
def test_corpus_replays_clean(fuzz_build, target):
    files = sorted((ROOT / "tests" / "fuzz" / "corpus" / target).iterdir())
    assert files
    out = run_fuzzer([fuzz_build / f"fuzz_{target}", *files], timeout=120)
    assert out.count("Executed ") == len(files)


@pytest.mark.parametrize("target", TARGETS)
def test_bounded_fuzzing_finds_nothing(fuzz_build, target, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    out = run_fuzzer([fuzz_build / f"fuzz_{target}", f"-max_total_time={SECONDS}", "-timeout=10",
                      "-rss_limit_mb=2048", "-print_final_stats=1", f"-artifact_prefix={tmp_path}/",
                      corpus, ROOT / "tests" / "fuzz" / "corpus" / target], timeout=SECONDS + 120)
    assert "Done " in out, out[-2000:]
    assert not [p for p in tmp_path.iterdir() if p.name != "corpus"], "artifacts written"
