"""The order of the batches of a token file (--data): in order without --shuffle, llm.c's shuffled
order with it (llmc/dataloader.h with should_shuffle=1, one file, one process).

llm.c's order is reimplemented here from its description, independently of core/data.c:
- MT19937 seeded with init_genrand (llm.c's manual_seed, as torch.manual_seed), seed 42;
  CPython's random module runs the same generator, but random.seed(42) seeds it differently
  (init_by_array), so the state is seeded here and handed over with setstate;
- each pass over the S = (tokens - 1) // (B*T) samples is random_permutation of the identity:
  for i = S-1 down to 1, j = (32-bit draw) % (i + 1), swap; no float conversion and no rejection
  sampling (random.randrange and random.shuffle would do both differently);
- the generator carries over from one pass to the next.
"""

import random
import struct

import pytest

from variant_helpers import binary, run, step_records

LLMC_SEED = 42
CONFIG = "tiny"  # V = 512, maxT = 64


class LlmcMt19937:
    """MT19937 as llm.c's manual_seed/randint32 use it."""

    def __init__(self, seed):
        state = [seed & 0xFFFFFFFF]
        for i in range(1, 624):
            state.append((1812433253 * (state[-1] ^ (state[-1] >> 30)) + i) & 0xFFFFFFFF)
        self.generator = random.Random()
        # index 624: the first draw regenerates the state, as llm.c's left_ = 1 does
        self.generator.setstate((3, tuple(state) + (624,), None))

    def randint32(self):
        return self.generator.getrandbits(32)


def random_permutation(n, rng):
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = rng.randint32() % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def llmc_offsets(tokens, B, T, steps, shuffle):
    """Where each step's batch starts in llm.c's DataLoader."""
    n = B * T
    samples = (tokens - 1) // n
    rng = LlmcMt19937(LLMC_SEED) if shuffle else None
    offsets = []
    while len(offsets) < steps:
        order = random_permutation(samples, rng) if shuffle else list(range(samples))
        offsets += [s * n for s in order]
    return offsets[:steps]


def write_tokens(path, tokens):
    header = struct.pack("<256i", 20240520, 1, len(tokens), *([0] * 253))
    path.write_bytes(header + struct.pack(f"<{len(tokens)}H", *tokens))
    return path


def data_order(path, B, T, steps, *extra, variant="seq"):
    r = run([binary(variant), "--config", CONFIG, "--data", path, "-B", B, "-T", T, "--steps", steps,
             "--data-order", *extra])
    assert r.returncode == 0, r.stderr
    return [int(line) for line in r.stdout.split()]


# --- the Python reimplementation itself ---------------------------------------------------------

def test_generator_matches_published_outputs():
    # llm.c's rand.h (and torch.manual_seed(137)): the first five randint32 draws
    rng = LlmcMt19937(137)
    assert [rng.randint32() for _ in range(5)] == [4053805790, 2173880614, 380293709, 1237255315, 2986595568]
    # the reference MT19937's first output for init_genrand(5489)
    assert LlmcMt19937(5489).randint32() == 3499211612


def test_python_seeding_differs_from_llmc():
    # why the state is seeded by hand: random.seed(42) is init_by_array, not init_genrand
    assert random.Random(LLMC_SEED).getrandbits(32) != LlmcMt19937(LLMC_SEED).randint32()


def test_permutation_is_a_permutation():
    order = random_permutation(1000, LlmcMt19937(LLMC_SEED))
    assert sorted(order) == list(range(1000)) and order != list(range(1000))


# --- the binaries ------------------------------------------------------------------------------

@pytest.mark.parametrize("B,T,samples", [(1, 4, 25), (2, 8, 7), (1, 4, 2000)])
def test_shuffled_order_is_llmcs(tmp_path, B, T, samples):
    # 2000 samples: 1999 draws a pass, several regenerations of the generator's state
    count = samples * B * T + 1 + (B * T - 1)  # the spare tokens short of one more sample are unused
    path = write_tokens(tmp_path / "t.bin", [i % 512 for i in range(count)])
    steps = 2 * samples + samples // 2 + 1  # into a third pass: reshuffled with the same generator
    got = data_order(path, B, T, steps, "--shuffle")
    assert got == llmc_offsets(count, B, T, steps, shuffle=True)
    assert got[:samples] != llmc_offsets(count, B, T, samples, shuffle=False)


@pytest.mark.parametrize("B,T,samples", [(1, 4, 25), (2, 8, 7)])
def test_order_without_shuffle_is_unchanged(tmp_path, B, T, samples):
    count = samples * B * T + 1
    path = write_tokens(tmp_path / "t.bin", [i % 512 for i in range(count)])
    steps = 2 * samples + 3
    got = data_order(path, B, T, steps)
    assert got == llmc_offsets(count, B, T, steps, shuffle=False)
    assert got == [(k % samples) * B * T for k in range(steps)]


@pytest.mark.parametrize("variant", ["seq", "taskiter"])
def test_training_uses_the_shuffled_order(tmp_path, variant):
    # Every sample starts with token 0, so the target of a batch's last position (the next
    # sample's first token) is 0 whatever follows it. Then training with --shuffle on the file
    # equals training in order on the samples laid out in llm.c's shuffled order.
    B, T, samples = 2, 8, 6
    n = B * T
    rand = random.Random(5)
    chunks = [[0] + [rand.randrange(1, 512) for _ in range(n - 1)] for _ in range(samples)]
    original = write_tokens(tmp_path / "original.bin", sum(chunks, []) + [0])
    order = [offset // n for offset in llmc_offsets(samples * n + 1, B, T, samples, shuffle=True)]
    reordered = write_tokens(tmp_path / "reordered.bin", sum((chunks[s] for s in order), []) + [0])

    def losses(path, *extra):
        r = run([binary(variant), "--config", CONFIG, "--data", path, "-B", B, "-T", T, "--steps", samples,
                 "--lr", "1e-3", "--json", *extra])
        assert r.returncode == 0, r.stderr
        return [s["loss"] for s in step_records(r.stdout)]

    shuffled = losses(original, "--shuffle")
    assert shuffled == losses(reordered)
    assert shuffled != losses(original)


@pytest.mark.parametrize("option", ["--shuffle", "--data-order"])
def test_needs_a_token_file(option):
    r = run([binary("seq"), "--config", CONFIG, option])
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "needs --data" in r.stderr
