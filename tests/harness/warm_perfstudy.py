"""perfstudy started from an interpreter that has already imported its libraries.

A harness test starts perfstudy a few hundred times over, and each start used to import pandas,
scipy, matplotlib and jinja2 again: one to three seconds of a 2-core machine's time every time, most
of the harness tests' time. Here one server process per test process imports them once; each
command is then a fork of it that runs exactly what `harness/perfstudy` runs (pstudy/__main__.py:
the interrupt handling, cli.main, sys.exit with its status), in its own process, with the test's
arguments, environment and working directory, standard input from /dev/null, and standard output
and error captured. What the test sees is what subprocess.run gives: a CompletedProcess, or
TimeoutExpired after the process is killed.

The launcher script itself (which Python it picks, SIGINT ignored while the interpreter starts)
is not run here, so a command whose environment changes what the launcher would do (PATH,
PERFSTUDY_PYTHON, PYTHON*) runs through it for real, as does every command when
PERFSTUDY_TESTS_COLD=1. tests/harness/test_launcher.py tests the launcher.

Run as a script, this file is the server: requests are JSON lines on its standard input
({"args", "env", "cwd", "stdout", "stderr"}); for each it answers {"pid": ...} once the command's
process exists and {"returncode": ...} (negative: the signal that ended it) once it has ended.
"""

import atexit
import json
import locale
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness"
PERFSTUDY = HARNESS / "perfstudy"
# what the launcher decides from the environment: a command that sets these runs through it
LAUNCHER_ENV = ("PATH", "PERFSTUDY_PYTHON")


def serve():
    """Imports what perfstudy's subcommands import, then forks one process per request. Returns
    the request in the forked process (which then runs it), never in the server."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as the launcher starts the interpreter
    import importlib
    import pkgutil

    import pstudy
    for module in pkgutil.walk_packages(pstudy.__path__, "pstudy."):
        if not module.name.endswith("__main__"):
            try:
                importlib.import_module(module.name)
            except Exception:  # noqa: BLE001  (the command that needs it imports it again, and says why)
                pass
    requests = os.fdopen(os.dup(0), "r")
    answers = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            requests.close()
            answers.close()
            return request
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        answers.flush()
    sys.exit(0)


def run(request):
    """In the forked process: what `harness/perfstudy ARGS` runs, in the request's surroundings."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(out, fd)
        os.close(out)
    sys.argv = [str(HARNESS / "pstudy" / "__main__.py"), *request["args"]]
    from pstudy import common
    from pstudy.cli import main
    signal.signal(signal.SIGINT, common.hold_interrupt)
    try:
        code = main(request["args"])
    except SystemExit as end:
        code = end.code
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:  # noqa: BLE001  (what the interpreter does with it: a traceback and status 1)
        traceback.print_exc()
        code = 1
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    # the interpreter's own ending (its threads joined, atexit, the streams flushed), without
    # tearing every imported module down one by one, which takes longer than the command
    threading._shutdown()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    if code is not None and code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code or 0)


def launcher_python():
    """The Python harness/perfstudy would run: the first of its candidates with the libraries."""
    check = ("import importlib.util as u, sys; sys.exit(0 if all(u.find_spec(m) for m in "
             "('pandas', 'matplotlib', 'scipy', 'tomllib')) else 1)")
    for python in (os.environ.get("PERFSTUDY_PYTHON"), "/usr/bin/python3", "/usr/local/bin/python3", "python3",
                   "python"):
        path = python and shutil.which(python)
        if path and subprocess.run([path, "-c", check], capture_output=True).returncode == 0:
            return path
    return sys.executable


class Server:
    """One warm server for this test process, started on first use and again if it ends."""

    def __init__(self):
        self.proc = None

    def start(self):
        env = dict(os.environ, PYTHONPATH=str(HARNESS))
        self.proc = subprocess.Popen([launcher_python(), __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env, cwd=HARNESS)

    def run(self, args, env, cwd, timeout):
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        command = [str(PERFSTUDY), *args]
        with tempfile.TemporaryDirectory(prefix="perfstudy-") as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            out.touch()
            err.touch()
            self.proc.stdin.write(json.dumps({"args": args, "env": env, "cwd": str(cwd), "stdout": str(out),
                                              "stderr": str(err)}) + "\n")
            self.proc.stdin.flush()
            pid = json.loads(self.proc.stdout.readline())["pid"]
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            if not ready:
                os.kill(pid, signal.SIGKILL)
            returncode = json.loads(self.proc.stdout.readline())["returncode"]
            # decoded as subprocess.run(text=True) decodes: the locale's encoding, universal newlines
            encoding = locale.getpreferredencoding(False)
            stdout, stderr = out.read_text(encoding=encoding), err.read_text(encoding=encoding)
        if not ready:
            raise subprocess.TimeoutExpired(command, timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(command, returncode, stdout, stderr)


SERVER = Server()


def perfstudy(*args, env=None, cwd=None, timeout=None):
    """subprocess.run([harness/perfstudy, *args], capture_output=True, text=True, ...), warm."""
    args = [str(a) for a in args]
    env = dict(os.environ if env is None else env)
    cold = os.environ.get("PERFSTUDY_TESTS_COLD") == "1" or any(
        env.get(k) != os.environ.get(k) for k in LAUNCHER_ENV) or any(
        k.startswith("PYTHON") and env.get(k) != os.environ.get(k) for k in set(env) | set(os.environ))
    if cold:
        return subprocess.run([str(PERFSTUDY), *args], capture_output=True, text=True, env=env, cwd=cwd,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    # the launcher puts the harness first on the module path, for what perfstudy starts in turn
    env["PYTHONPATH"] = str(HARNESS) + (f":{env['PYTHONPATH']}" if env.get("PYTHONPATH") else "")
    return SERVER.run(args, env, cwd or os.getcwd(), timeout if timeout is not None else 24 * 3600)


if __name__ == "__main__":
    run(serve())
