"""harness/perfstudy finds a Python with pandas/matplotlib/scipy whatever python3 comes first on PATH."""

import json
import os
import shutil
import subprocess

from conftest import PERFSTUDY
import warm_perfstudy


def test_launcher_skips_a_python3_without_pandas(study, tmp_path):
    # a python3 first on PATH that cannot import pandas: the pyenv one when present, else a stand-in
    shims = tmp_path / "shims"
    shims.mkdir()
    pyenv = os.path.expanduser("~/.pyenv/shims/python3")
    if os.path.exists(pyenv):
        os.symlink(pyenv, shims / "python3")
    else:
        (shims / "python3").write_text("#!/bin/sh\nexit 1\n")
        (shims / "python3").chmod(0o755)
    path = f"{shims}:{os.environ['PATH']}"
    first = shutil.which("python3", path=path)
    assert first == str(shims / "python3")
    assert subprocess.run([first, "-c", "import pandas"], capture_output=True,
                          env=dict(os.environ, PATH=path)).returncode != 0

    done = study.perfstudy("run", study.config(repetitions=1, variants='["seq"]'), PATH=path)
    assert done.returncode == 0, done.stderr
    [d] = study.result_dirs()
    software = json.loads((d / "meta.json").read_text())["software"]
    assert software["pandas"] and software["scipy"] and software["matplotlib"]
    assert software["python_executable"] != first


def test_launcher_help_and_unknown_subcommand():
    done = subprocess.run([str(PERFSTUDY), "--help"], capture_output=True, text=True)
    assert done.returncode == 0
    for name in ("run", "report", "list"):
        assert f"  {name} " in done.stdout
    done = subprocess.run([str(PERFSTUDY), "frobnicate"], capture_output=True, text=True)
    assert done.returncode == 2 and "unknown subcommand 'frobnicate'" in done.stderr


def test_launcher_without_any_usable_python_says_so(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("dirname",):
        os.symlink(shutil.which(tool), bare / tool)
    done = subprocess.run(["/bin/sh", str(PERFSTUDY), "list"], capture_output=True, text=True,
                          env={"PATH": str(bare), "PERFSTUDY_PYTHON": str(tmp_path / "nothing")})
    # /usr/bin/python3 is tried by absolute path, so on a machine that has it the command still works
    if os.path.exists("/usr/bin/python3"):
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode == 2 and "no Python found" in done.stderr


def test_every_subcommand_has_help():
    from pstudy import cli
    for name in cli.SUBCOMMANDS:
        done = warm_perfstudy.perfstudy(name, "--help", timeout=60)
        assert done.returncode == 0 and done.stdout.startswith(f"usage: perfstudy {name}"), (name, done.stderr)
        assert not done.stderr, (name, done.stderr)


def test_a_warm_command_is_what_the_launcher_runs(tmp_path):
    # the tests' forked perfstudy against the real launcher: the same status, output and error
    for args in (["frobnicate"], ["list", "--help"], ["report", tmp_path / "missing"], ["predict", "--replicates"]):
        warm = warm_perfstudy.perfstudy(*args, timeout=60, cwd=tmp_path)
        cold = subprocess.run([str(PERFSTUDY), *map(str, args)], capture_output=True, text=True, timeout=60,
                              cwd=tmp_path, stdin=subprocess.DEVNULL)
        assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr), args
