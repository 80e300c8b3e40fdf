"""`perfstudy doctor` (what this machine offers, what each missing piece costs; quick, exit 0, its
facts in every meta.json), and a study archive read as it is by `answer` and `report`: the same
answer as from the folder it unpacks to, a report of each sweep in it, and a damaged or foreign
archive refused in one line."""

import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import warm_perfstudy
from conftest import REPO


def archive_of(study_root, path):
    """A .tar.gz of the folder `study_root` under the name study/, as `perfstudy study` packs it."""
    with tarfile.open(path, "w:gz") as tar:
        tar.add(study_root, arcname="study")
    return path


def a_study(tmp_path, finished_sweeps):
    """An unpacked study: study/results/<one finished sweep>/ and a log, as an archive holds it."""
    root = tmp_path / "unpacked" / "study"
    shutil.copytree(finished_sweeps.get(), root / "results" / finished_sweeps.get().name)
    (root / "log.txt").write_text("== the log\n")
    return root


def test_doctor_exits_0_and_names_the_machine_and_what_is_missing():
    done = warm_perfstudy.perfstudy("doctor", timeout=60)
    assert done.returncode == 0, done.stderr
    headings = [line for line in done.stdout.splitlines() if not line.startswith(" ")]
    for section in ("machine", "build", "MPI and Slurm", "hardware counters", "python", "missing"):
        assert any(h.startswith(section) for h in headings), done.stdout
    assert "widest vector ISA" in done.stdout
    facts = json.loads(warm_perfstudy.perfstudy("doctor", "--json", timeout=60).stdout)
    assert facts["cpu"]["logical_cpus"] >= 1
    assert set(facts["tools"]) >= {"make", "python", "mpirun", "hwloc", "gnuplot"}
    assert facts["python"]["libraries"]["pandas"]


def test_a_sweeps_meta_json_holds_the_doctors_facts(finished_sweeps):
    meta = json.loads((finished_sweeps.get() / "meta.json").read_text())
    doctor = meta["doctor"]
    assert {"build", "mpi_tools", "slurm", "counters", "python", "tools"} <= set(doctor)
    assert "perf_event_paranoid" in doctor["counters"]


def test_answer_reads_an_archive_as_the_folder_it_unpacks_to(tmp_path, finished_sweeps):
    root = a_study(tmp_path, finished_sweeps)
    archive = archive_of(root, tmp_path / "node.tar.gz")
    from_folder = warm_perfstudy.perfstudy("answer", root)
    from_archive = warm_perfstudy.perfstudy("answer", archive)
    assert from_folder.returncode == 0, from_folder.stderr
    assert from_archive.returncode == 0, from_archive.stderr
    assert from_archive.stdout == from_folder.stdout
    assert not any(Path("/tmp").glob("perfstudy-archive-*/study/results/" + finished_sweeps.get().name))


def test_report_unpacks_an_archive_once_into_the_results_root(study, finished_sweeps, tmp_path):
    root = a_study(tmp_path, finished_sweeps)
    archive = archive_of(root, tmp_path / "node.tar.gz")
    first = study.perfstudy("report", archive, "--no-figures", "--no-chart")
    assert first.returncode == 0, first.stderr
    unpacked = study.results / "node" / "study" / "results" / finished_sweeps.get().name
    assert (unpacked / "steps.csv").is_file()
    again = study.perfstudy("report", archive, "--no-figures", "--no-chart")  # the same archive: reused
    assert again.returncode == 0, again.stderr
    # a folder of that name that is not this archive's unpacking is never written into
    other = archive_of(root, tmp_path / "other" / "node.tar.gz") if (tmp_path / "other").mkdir() is None else None
    with open(other, "ab") as f:
        f.write(b"\0" * 1024)  # another file (gzip ignores trailing zeros): another digest
    refused = study.perfstudy("report", other, "--no-figures", "--no-chart")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "not this archive's unpacking" in refused.stderr


def test_a_damaged_or_foreign_archive_is_one_line_and_exit_2(tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not an archive at all")
    escaping = tmp_path / "escaping.tar.gz"
    with tarfile.open(escaping, "w:gz") as tar:
        data = b"x"
        info = tarfile.TarInfo("study/../../outside.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    linked = tmp_path / "linked.tar.gz"
    with tarfile.open(linked, "w:gz") as tar:
        info = tarfile.TarInfo("study/results/x")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc"
        tar.addfile(info)
    for archive, words in ((junk, "not a readable .tar.gz"), (escaping, "outside study/"),
                           (linked, "a link or special file")):
        done = warm_perfstudy.perfstudy("answer", archive)
        assert done.returncode == 2, (archive, done.stdout, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, done.stderr
        assert str(archive) in done.stderr
    assert not (tmp_path.parent / "outside.txt").exists()


def test_install_deps_without_apt_names_what_is_missing_and_refuses_without_a_compiler(tmp_path):
    """Where apt cannot be used, nothing is installed: each missing piece is one line, with what it
    costs and how to get it; exit 0 while the study can run, 2 once the C compiler is gone too (a
    copy of scripts/, so that the repository's own build probe is left alone)."""
    (tmp_path / "scripts").mkdir()
    for name in ("install-deps.sh", "probe-build.sh", "needs.txt", "find-python.sh"):
        shutil.copy2(REPO / "scripts" / name, tmp_path / "scripts" / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("sh", "make", "gcc", "cat", "cksum", "cut", "sed", "grep", "mktemp", "rm", "mv", "mkdir",
                    "dirname", "head", "tr", "id", "ls", "printf", "ld", "as"):
        found = shutil.which(program)
        if found:
            (bin_dir / program).symlink_to(found)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    mode = subprocess.run(["sh", "scripts/install-deps.sh", "--mode"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert mode.stdout.strip() == "report"
    done = subprocess.run(["sh", "scripts/install-deps.sh"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 0, done.stderr
    assert all(line.startswith("install-deps: missing ") for line in lines), lines
    assert any(line.startswith("install-deps: missing clang: not on PATH") for line in lines), lines
    assert any(line.startswith("install-deps: missing mpirun (costs runs of gpt2-mpi") and "get it: " in line
               for line in lines), lines
    (bin_dir / "gcc").unlink()
    done = subprocess.run(["sh", "scripts/install-deps.sh"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert "install-deps: missing gcc: not on PATH" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("install-deps: the study cannot run here")


def test_a_sweep_of_a_binary_make_left_out_stops_first_with_makes_reason(study):
    """A config that asks for what the build left out ends before its first run, naming the binary
    and why make left it out (the build's probe), not only that it is missing."""
    shutil.rmtree(study.build / "clang")
    (study.build / "probe.txt").write_text("compiler gcc: gcc 12\nleft-out clang: not on PATH (a module)\n")
    text = study.config().read_text().replace("[sweep]", '[sweep]\ncompilers = ["gcc", "clang"]')
    done = study.perfstudy("run", study.config(name="both", text=text))
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "clang/fast/gpt2-" in line and "make left it out: clang: not on PATH (a module)" in line, line
    assert not study.result_dirs()
