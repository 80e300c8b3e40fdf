"""The processes a long-running command starts (study's steps, run's binaries, the noise study's
co-runner and sweeps, regress's builds), started so that no signal leaves one running.

Each child gets an absolute program path and, when given, an absolute working directory (a
relative one would name a different file once the child's directory differs from the caller's),
leads a process group of its own (a terminal's Ctrl-C reaches the parent only, which stops the
whole group), and is sent SIGTERM by the kernel when the parent dies, even by SIGKILL
(PR_SET_PDEATHSIG). SIGINT, SIGTERM and SIGHUP are held while the child is started: one arriving
inside Popen, before the caller has the child, would otherwise leave a group nobody stops. A held
signal stops the new child and is then raised as KeyboardInterrupt. Stopping a group (SIGTERM,
a grace period, SIGKILL to whatever is left) is likewise not cut short by a second signal.
"""

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import threading

from pstudy import common

PR_SET_PDEATHSIG = 1
_libc = None


def _libc_prctl():
    """libc's prctl, loaded in the parent: a forked child must not load libraries."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):  # not Linux: no parent-death signal
            _libc = False
    return _libc


def absolute(cmd):
    """cmd with its program as an absolute path: one with a slash resolved against this process's
    directory, a bare name looked up on PATH (left as it is when not found: Popen then says so)."""
    program = str(cmd[0])
    if os.sep in program:
        program = os.path.abspath(program)
    else:
        program = shutil.which(program) or program
    return [program, *map(str, cmd[1:])]


def start(cmd, grace=2.0, cls=None, cwd=None, **popen):
    """cls(cmd, ...) (subprocess.Popen or a subclass) as a child that no signal leaves running (module
    comment). A signal that arrives while it starts stops it (stop, `grace`) and raises
    KeyboardInterrupt."""
    if cwd is not None and not os.path.isabs(cwd):
        raise ValueError(f"children.start: relative working directory {cwd}")
    # signal handlers are the main thread's alone, and the parent-death signal follows the thread
    # that forks: another thread's child is started plainly in its own group
    main = threading.current_thread() is threading.main_thread()
    prctl, parent = _libc_prctl() if main else None, os.getpid()

    def die_with_parent():
        if prctl:
            prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the line above took effect
            os._exit(1)

    with common.signals_deferred(reraise=False) if main else contextlib.nullcontext() as held:
        proc = (cls or subprocess.Popen)(absolute(cmd), cwd=cwd, start_new_session=True,
                                         preexec_fn=die_with_parent, **popen)
    if held is not None and held.caught:
        stop(proc, grace)
        raise KeyboardInterrupt(signal.Signals(held.caught[0]).name)
    return proc


def stop(proc, grace):
    """Stops the child's process group: SIGTERM, up to `grace` seconds for the child to end, then
    SIGKILL to the group (what the child left in it too). A signal arriving meanwhile is raised
    once the group is gone. Returns the child's exit status."""
    main = threading.current_thread() is threading.main_thread()
    with common.signals_deferred() if main else contextlib.nullcontext():
        signal_group(proc, signal.SIGTERM)
        if grace > 0:
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        signal_group(proc, signal.SIGKILL)
        return proc.wait()


def signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):  # the group is gone (or another's, after reuse)
        pass


@contextlib.contextmanager
def running(cmd, grace=2.0, **options):
    """start(cmd, ...) for the block; its process group does not outlive the block: stopped
    (stop) when the block raises, an interrupt included, or leaves the child running, and
    whatever the child left in it killed when the child has ended."""
    proc = start(cmd, grace=grace, **options)
    try:
        yield proc
    except BaseException:
        stop(proc, grace)
        raise
    if proc.poll() is None:
        stop(proc, grace)
    else:
        signal_group(proc, signal.SIGKILL)
