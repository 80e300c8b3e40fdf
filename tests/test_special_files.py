"""paths that are not regular files are refused at once (no hang on
a FIFO), --save is checked before the first step, and a checkpoint is written
atomically (a killed save never leaves a partial file under the final name)."""
import os
import resource
import signal
import socket
import stat
import struct
import subprocess
import time

import pytest

from variant_helpers import FIXTURES, VARIANTS, binary, run

MODEL = FIXTURES / "odd36" / "model.bin"
STATE = FIXTURES / "odd36" / "state.bin"
LOSSES = FIXTURES / "odd36" / "losses.txt"


def check_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture(params=["fifo", "chardev", "socket"])
def special(request, tmp_path):
    if request.param == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
        yield path, "FIFO"
    elif request.param == "chardev":
        yield "/dev/zero", "character device"
    else:
        path = tmp_path / "s.sock"
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(path))
        s.listen(1)
        yield path, "socket"
        s.close()


def args_for(option, path):
    if option == "--model":
        return ["--model", path]
    if option == "--data":
        return ["--model", MODEL, "--data", path, "-B", "1", "-T", "4"]
    if option == "--verify":
        return ["--model", MODEL, "--verify", path]
    return ["--model", MODEL, "--verify", STATE, "--expect-losses", path]


@pytest.mark.parametrize("option", ["--model", "--data", "--verify", "--expect-losses"])
def test_special_file_is_refused_at_once(special, option):
    path, kind = special
    start = time.monotonic()
    r = run([binary("seq"), *args_for(option, path), "--steps", "1"], timeout=20)
    check_error(r, str(path), kind, "not a regular file")
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("variant", VARIANTS)
def test_fifo_model_every_variant(tmp_path, variant):
    os.mkfifo(tmp_path / "pipe")
    check_error(run([binary(variant), "--model", tmp_path / "pipe"], timeout=20), "FIFO")


def unwritable_destinations(tmp_path):
    yield tmp_path / "missing" / "m.bin", "No such file"
    yield tmp_path, "directory"  # the destination is a directory
    yield "/proc/gpt2-perfstudy-test.bin", str("/proc")
    if os.geteuid() != 0:  # root writes anywhere permissions say no
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
        yield ro / "m.bin", "Permission denied"


@pytest.mark.parametrize("variant", VARIANTS)
def test_save_destination_checked_before_the_first_step(tmp_path, variant):
    for dest, needle in unwritable_destinations(tmp_path):
        r = run([binary(variant), "--model", MODEL, "-B", "1", "-T", "4", "--steps", "2", "--save", dest], timeout=30)
        check_error(r, str(dest), needle)
        assert "step" not in r.stderr


@pytest.mark.parametrize("option, what", [("--trace", "trace"), ("--describe-graph", "task graph")])
def test_trace_and_graph_destinations_checked_before_the_first_step(tmp_path, option, what):
    os.mkfifo(tmp_path / "pipe")  # written after training, a FIFO would block the run at its end
    for dest, needle in [(tmp_path / "pipe", "FIFO"), *unwritable_destinations(tmp_path)]:
        start = time.monotonic()
        r = run([binary("forkjoin"), "--model", MODEL, "-B", "1", "-T", "4", "--steps", "2", option, dest],
                timeout=30)
        check_error(r, str(dest), f"cannot write {what}", needle)
        assert time.monotonic() - start < 10


def read_header(path):
    with open(path, "rb") as f:
        return struct.unpack("<8i", f.read(32))


def test_save_writes_a_complete_checkpoint_without_leftovers(tmp_path):
    dest = tmp_path / "out.bin"
    r = run([binary("seq"), "--model", MODEL, "-B", "1", "-T", "4", "--steps", "1", "--save", dest], timeout=60)
    assert r.returncode == 0, r.stderr
    assert dest.stat().st_size == MODEL.stat().st_size
    assert read_header(dest) == read_header(MODEL)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
    # the mode fopen would give (0666 less the umask), not mkstemp's 0600
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(dest.stat().st_mode) == 0o666 & ~mask


D6_BYTES = 1024 + 4 * 30357504  # d6: maxT 1024, Vp 50304, L 6, C 384


def killed_past(nbytes):
    """In the child before exec: a write past `nbytes` of any file ends it (SIGXFSZ), dumping no core."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def test_killed_save_never_leaves_a_partial_file(tmp_path):
    """d6 (30M parameters, 122 MB) with no steps: the run is mostly the save.
    Each attempt is killed in the middle of writing its temporary file, at a
    quarter, half and three quarters of it: the file size limit (RLIMIT_FSIZE)
    stops the write at that byte with SIGXFSZ, whose default action ends the
    process at once, as SIGKILL would (no handler, no clean-up). Afterwards the
    final name holds either nothing (no save finished yet) or a complete
    checkpoint, the one a finished run wrote before. (A kill sent on seeing the
    temporary file would race with the save: on a loaded machine the whole write
    can finish between two looks.)"""
    dest = tmp_path / "d6.bin"
    args = [str(a) for a in (binary("seq"), "--config", "d6", "-B", "1", "-T", "8", "--steps", "0", "--save", dest)]
    for fraction in (0.25, 0.5, None, 0.75):
        if fraction is None:  # a complete save, which the next kill must leave in place
            r = run(args, timeout=300)
            assert r.returncode == 0, r.stderr
            assert dest.stat().st_size == D6_BYTES
            continue
        limit = int(D6_BYTES * fraction)
        r = subprocess.run(args, capture_output=True, text=True, timeout=300, preexec_fn=lambda: killed_past(limit))
        assert r.returncode == -signal.SIGXFSZ, (r.returncode, r.stderr)
        [partial] = [n for n in tmp_path.iterdir() if n.name.startswith(".d6.bin.tmp-")]
        assert partial.stat().st_size == limit  # killed in the middle of the save
        partial.unlink()
        if dest.exists():
            assert dest.stat().st_size == D6_BYTES, "a partial file under the final name"
            assert read_header(dest)[:2] == (20240326, 3)
        else:
            assert fraction < 0.75, "the complete checkpoint disappeared"


@pytest.mark.parametrize("option", ["--save", "--trace", "--describe-graph"])
def test_one_rule_for_every_output(tmp_path, option):
    """--trace and --describe-graph took any character device while --save took none.
    Every output now takes a regular file, existing or new, or /dev/null (discarded), and refuses
    any other device before the run."""
    base = [binary("forkjoin"), "--model", MODEL, "-B", "1", "-T", "4", "--steps", "1"]
    for dest in ("/dev/null", tmp_path / "new.out"):
        r = run(base + [option, dest], timeout=60)
        assert r.returncode == 0, r.stderr
    assert os.path.exists("/dev/null") and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    for dest in ("/dev/zero", "/dev/full"):
        r = run(base + [option, dest], timeout=60)
        check_error(r, dest, "character device")
        assert "step" not in r.stderr
