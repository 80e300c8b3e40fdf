"""Bad input: one line on stderr naming the problem, exit status 2, nothing on
stdout, no crash."""
import shutil
import struct
import subprocess

import pytest

import components

from variant_helpers import FIXTURES, VARIANTS, binary, registry, run

# the chunked variants, those on a task runtime (nosv, starpu) among them: they share the chunk options
CHUNKED = [name for name, kind in registry() if kind == "chunked"]

MODEL = FIXTURES / "odd36" / "model.bin"
STATE = FIXTURES / "odd36" / "state.bin"
TOKENS = FIXTURES / "odd36" / "tokens.bin"


def header(magic, version, *values):
    ints = [magic, version, *values] + [0] * (256 - 2 - len(values))
    return struct.pack("<256i", *ints)


def check_error(result, *needles):
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Sanitizer" not in result.stderr and "core dumped" not in result.stderr


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_missing_model_file(tmp_path):
    check_error(run([binary("seq"), "--model", tmp_path / "nope.bin"]), "nope.bin", "No such file")


def test_model_is_a_directory(tmp_path):
    check_error(run([binary("seq"), "--model", tmp_path]), str(tmp_path), "directory")


def test_wrong_magic(tmp_path):
    bad = write(tmp_path, "m.bin", header(12345, 3) + MODEL.read_bytes()[1024:])
    check_error(run([binary("seq"), "--model", bad]), "m.bin", "magic")


def test_wrong_version(tmp_path):
    data = bytearray(MODEL.read_bytes())
    struct.pack_into("<i", data, 4, 1)
    check_error(run([binary("seq"), "--model", write(tmp_path, "m.bin", bytes(data))]), "m.bin", "version 1")


def test_truncated_header(tmp_path):
    check_error(run([binary("seq"), "--model", write(tmp_path, "m.bin", MODEL.read_bytes()[:100])]), "m.bin", "truncated")


def test_truncated_parameters(tmp_path):
    bad = write(tmp_path, "m.bin", MODEL.read_bytes()[:-8])
    check_error(run([binary("seq"), "--model", bad]), "m.bin", "inconsistent with file size")


def test_header_inconsistent_with_size(tmp_path):
    data = bytearray(MODEL.read_bytes())
    struct.pack_into("<i", data, 4 * 4, 7)  # num_layers 3 -> 7
    check_error(run([binary("seq"), "--model", write(tmp_path, "m.bin", bytes(data))]), "m.bin", "inconsistent")


def test_header_with_impossible_shape(tmp_path):
    data = bytearray(MODEL.read_bytes())
    struct.pack_into("<i", data, 5 * 4, 5)  # NH=5 does not divide C=36
    check_error(run([binary("seq"), "--model", write(tmp_path, "m.bin", bytes(data))]), "m.bin", "not divisible")


def test_token_outside_vocabulary(tmp_path):
    tokens = [1, 2, 3] * 50 + [250]  # V = 250
    bad = write(tmp_path, "t.bin", header(20240520, 1, len(tokens)) + struct.pack(f"<{len(tokens)}H", *tokens))
    check_error(run([binary("seq"), "--model", MODEL, "--data", bad, "-B", "2", "-T", "8"]), "t.bin", "outside the vocabulary")


def test_token_file_wrong_magic(tmp_path):
    bad = write(tmp_path, "t.bin", header(20240327, 1, 4) + b"\0" * 8)
    check_error(run([binary("seq"), "--model", MODEL, "--data", bad, "-T", "8"]), "t.bin", "magic")


def test_token_file_truncated(tmp_path):
    bad = write(tmp_path, "t.bin", TOKENS.read_bytes()[:-10])
    check_error(run([binary("seq"), "--model", MODEL, "--data", bad, "-T", "8"]), "t.bin", "inconsistent")


def test_token_file_too_short_for_a_batch():
    check_error(run([binary("seq"), "--model", MODEL, "--data", TOKENS, "-B", "16", "-T", "32"]), "tokens.bin", "fewer than")


def test_debug_state_truncated(tmp_path):
    bad = write(tmp_path, "s.bin", STATE.read_bytes()[:-4])
    check_error(run([binary("seq"), "--model", MODEL, "--verify", bad]), "s.bin", "inconsistent")


def test_debug_state_token_outside_vocabulary(tmp_path):
    data = bytearray(STATE.read_bytes())
    struct.pack_into("<i", data, 1024, 9999)
    check_error(run([binary("seq"), "--model", MODEL, "--verify", write(tmp_path, "s.bin", bytes(data))]), "s.bin",
                "outside the vocabulary")


def test_debug_state_wrong_magic(tmp_path):
    bad = write(tmp_path, "s.bin", MODEL.read_bytes())
    check_error(run([binary("seq"), "--model", MODEL, "--verify", bad]), "s.bin", "magic")


def test_T_larger_than_max_seq_len():
    check_error(run([binary("seq"), "--model", MODEL, "-T", "33"]), "-T", "max_seq_len 32")


@pytest.mark.parametrize("option,value", [("-B", "0"), ("-B", "-3"), ("-T", "0"), ("-T", "-1"), ("-T", "abc"),
                                          ("--steps", "-1"), ("--lr", "nan"), ("--threads", "0")])
def test_bad_numbers(option, value):
    check_error(run([binary("seq"), "--config", "tiny", option, value]), option)


@pytest.mark.parametrize("variant", CHUNKED)
@pytest.mark.parametrize("option,value", [("--batch-subsize", "0"), ("--batch-subsize", "-2"),
                                          ("--token-chunk", "0"), ("--token-chunk", "x"),
                                          ("--channel-chunk", "-1"), ("--tile-columns", "0"),
                                          ("--tile-columns", "-16"), ("--tile-columns", "2x"),
                                          ("--tile-in-channels", "0"), ("--tile-in-channels", "1.5"),
                                          ("--tile-columns", "257"), ("--tile-in-channels", "9999"),
                                          ("--tile-sequences", "0"), ("--tile-sequences", "-1"),
                                          ("--tile-sequences", "2.5"), ("--tiles-per-product", "0"),
                                          ("--tiles-per-product", "17"), ("--tiles-per-product", "-2")])
def test_bad_chunking(variant, option, value):
    # tiny: C = 64, so the widest product (fc forward, fcproj's input gradient and weight gradient) is 256 wide
    check_error(run([binary(variant), "--config", "tiny", option, value]), option)


@pytest.mark.parametrize("variant", CHUNKED)
@pytest.mark.parametrize("option,value,needle", [("--batch-subsize", "1048576", "larger than the batch of 2"),
                                                 ("--token-chunk", "64", "larger than the sequence length of 8"),
                                                 ("--tile-sequences", "3", "larger than the batch of 2"),
                                                 ("--tiles-per-product", "17", "more than the widest product")])
def test_chunks_larger_than_the_batch_are_refused(variant, option, value, needle):
    """the harness refused these while the binaries cut them down silently; both refuse
    them now, so that the chunk sizes a run reports are the ones it was given."""
    check_error(run([binary(variant), "--config", "tiny", "-B", "2", "-T", "8", "--steps", "1", option, value]),
                option, needle)


@pytest.mark.parametrize("variant", CHUNKED)
def test_tile_columns_and_tiles_per_product_together_are_refused(variant):
    """Both set the products' tile widths: one of them, not both."""
    check_error(run([binary(variant), "--config", "tiny", "--tile-columns", "32", "--tiles-per-product", "2"]),
                "--tiles-per-product", "not both")


@pytest.mark.parametrize("value", [" 3", "3 ", "\t3", "3\n", ""])
def test_white_space_around_a_number_is_refused_alike(value):
    """" 3" was accepted (strtoll skips leading blanks) while "3 " was not."""
    check_error(run([binary("forkjoin"), "--config", "tiny", "--threads", value]), "--threads", "not an integer")
    check_error(run([binary("seq"), "--config", "tiny", "--lr", value.replace("3", "0.1")]), "--lr")


@pytest.mark.parametrize("args", [["--steps", "1", "--steps", "2"], ["-B", "2", "-B2"], ["--json", "--json"],
                                  ["--threads=2", "--thr", "3"], ["--config", "d6"]])
def test_a_repeated_option_is_refused(args):
    """a repeated option silently kept its last value."""
    check_error(run([binary("seq"), "--config", "tiny", "-T", "8"] + args), "given more than once")


def test_a_value_is_one_line_in_the_message_whatever_it_holds():
    r = run([binary("seq"), "--config", "tiny", "--threads", "3\n4"])
    check_error(r, "--threads", "'3?4' is not an integer")


@pytest.mark.parametrize("variant", ["tasks", "taskiter"])
def test_tiles_as_wide_as_the_widest_product_are_whole_rows(variant):
    r = run([binary(variant), "--config", "tiny", "-B", "2", "-T", "8", "--steps", "1", "--batch-subsize", "2",
             "--token-chunk", "8", "--tile-columns", "256", "--tile-in-channels", "256", "--json"])
    assert r.returncode == 0, r.stderr
    info = __import__("json").loads(r.stdout.splitlines()[0])["info"]
    assert info["batch_subsize"] == 2 and info["token_chunk"] == 8
    # tiles as wide as the widest product: whole rows, one task per row chunk of each product
    assert info["tile_columns"] == 256 and info["tile_in_channels"] == 256


def test_unknown_config_name():
    check_error(run([binary("seq"), "--config", "gpt5"]), "unknown configuration 'gpt5'", "d12")


@pytest.mark.parametrize("variant", VARIANTS)
def test_unknown_option(variant):
    check_error(run([binary(variant), "--frobnicate", "3"]), "unknown option '--frobnicate'")


def test_missing_option_value():
    check_error(run([binary("seq"), "--config"]), "--config", "missing value")


def test_conflicting_options():
    check_error(run([binary("seq"), "--config", "tiny", "--model", MODEL]), "exclude")


def test_value_given_to_a_flag():
    check_error(run([binary("seq"), "--json=3"]), "--json", "takes no value")


def test_unexpected_argument():
    check_error(run([binary("seq"), "--config", "tiny", "extra"]), "unexpected argument 'extra'")


def test_missing_short_option_value():
    check_error(run([binary("seq"), "--config", "tiny", "-T"]), "-T", "missing value")


# the runtimes' own bad input: each refused before the runtime starts, one line and exit 2
TINY_RUN = ["--config", "tiny", "-B", "2", "-T", "8", "--steps", "1", "--threads", "2"]


@pytest.mark.parametrize("value", ["bogus", "DMDA", "", "dmda "])
def test_an_unknown_starpu_scheduler_is_refused(value):
    check_error(run([binary("starpu")] + TINY_RUN, env={"STARPU_SCHED": value}),
                f"STARPU_SCHED: unknown scheduler '{value}'", "eager", "dmda", "modular-*")


def test_a_starpu_scheduler_name_is_one_line_whatever_it_holds():
    check_error(run([binary("starpu")] + TINY_RUN, env={"STARPU_SCHED": "dm\nda"}), "'dm?da'")


def fake_starpu(tmp_path, kind):
    """A directory for LD_LIBRARY_PATH whose libstarpu-1.3 is no library (`empty`) or a library
    without StarPU's functions (`other`): what the loader finds first."""
    d = tmp_path / kind
    d.mkdir()
    if kind == "empty":
        for name in ("libstarpu-1.3.so.9", "libstarpu-1.3.so"):
            (d / name).write_bytes(b"")
    else:
        (tmp_path / "other.c").write_text("int not_starpu;\n")
        built = subprocess.run(["cc", "-shared", "-fPIC", tmp_path / "other.c", "-o", d / "libstarpu-1.3.so.9"],
                               capture_output=True, text=True)
        assert built.returncode == 0, built.stderr
    return d


@pytest.mark.parametrize("kind,needles", [("empty", ["starpu: cannot load libstarpu-1.3.so.9", "libstarpu-dev"]),
                                          ("other", ["has no starpu_conf_init", "StarPU 1.3 expected"])])
def test_a_missing_or_wrong_starpu_library_is_one_line(tmp_path, kind, needles):
    """gpt2-starpu opens StarPU at run time: without it, the loader's refusal would be its own
    message and exit 127."""
    check_error(run([binary("starpu")] + TINY_RUN, env={"LD_LIBRARY_PATH": fake_starpu(tmp_path, kind)}), *needles)


def test_an_unreadable_nosv_config_is_one_line(tmp_path):
    """nOS-V itself aborts with two lines and a core on a configuration file it cannot open."""
    check_error(run([binary("nosv")] + TINY_RUN, env={"NOSV_CONFIG": tmp_path / "nope.toml"}),
                "NOSV_CONFIG: cannot read", "nope.toml", "No such file")


def test_a_nosv_config_that_is_not_a_file_is_one_line(tmp_path):
    check_error(run([binary("nosv")] + TINY_RUN, env={"NOSV_CONFIG": tmp_path}), "NOSV_CONFIG", "not a regular file")


@pytest.mark.parametrize("name,value,needle", [("STARPU_NCPU", "-5", "no negative value"),
                                               ("STARPU_WATCHDOG_TIMEOUT", "-1", "no negative value"),
                                               ("STARPU_NCPU", "abc", "not a count"),
                                               ("STARPU_CALIBRATE", "1x", "not a count")])
def test_starpu_settings_it_would_abort_on_are_one_line(name, value, needle):
    """StarPU asserts (a core dump) on a negative or unreadable count in its environment."""
    check_error(run([binary("starpu")] + TINY_RUN, env={name: value}), f"{name}: ", value, needle)


def test_the_harness_knows_the_schedulers_starpu_has(tmp_path):
    """A config's starpu_sched is checked when it is loaded against the harness's list of StarPU's
    schedulers (vocabulary.STARPU_SCHEDULERS): the list must be the installed library's."""
    components.require("starpu")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "starpu-1.3"], capture_output=True, text=True) \
        if shutil.which("pkg-config") else None
    if flags is None or flags.returncode != 0:
        pytest.skip("StarPU found without pkg-config (STARPU_HOME): its library path is not known here")
    (tmp_path / "policies.c").write_text(
        "#include <starpu.h>\n#include <stdio.h>\n"
        "int main(void) {\n"
        "    struct starpu_sched_policy **p = starpu_sched_get_predefined_policies();\n"
        "    for (int i = 0; p[i]; i++) puts(p[i]->policy_name);\n"
        "    return 0;\n}\n")
    built = subprocess.run(["cc", tmp_path / "policies.c", "-o", tmp_path / "policies", *flags.stdout.split()],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    names = subprocess.run([tmp_path / "policies"], capture_output=True, text=True, check=True).stdout.split()
    from pstudy.store import vocabulary
    assert sorted(names) == sorted(vocabulary.STARPU_SCHEDULERS)
