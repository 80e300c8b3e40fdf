"""The one error type the harness reports to the user: a one-line message and exit status 2."""
import sys


class StudyError(Exception):
    """Bad input (a config, a results directory, an option): printed as one line, exit 2.

    The message should name the file and, where there is one, the key: "FILE: KEY: problem".
    """



def os_error_message(err):
    """An OSError as the one line the user sees: "PATH: problem" (both paths for a rename)."""
    text = err.strerror or str(err)
    if err.filename is not None and err.filename2 is not None:
        return f"{err.filename} -> {err.filename2}: {text}"
    if err.filename is not None:
        return f"{err.filename}: {text}"
    return text


def require_modules(program, modules=("pandas", "scipy", "matplotlib")):
    """What a script outside the perfstudy command (bench/) does first: exit 2 with one line when
    this Python cannot import what it will need, before it measures for minutes and fails at the
    summary (a `#!/usr/bin/env python3` may find a Python without Debian's packages)."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        exit_bad_input(program, f"{sys.executable} cannot import {', '.join(missing)}; run it with the Python "
                                "scripts/find-python.sh prints (on Debian: /usr/bin/python3 with python3-pandas, "
                                "python3-scipy, python3-matplotlib)")


def exit_bad_input(program, message):
    """What a script outside the perfstudy command (bench/) does with bad input: the same one
    line, "PROGRAM: message", on stderr and exit status 2."""
    sys.stderr.write(f"{program}: {message}\n")
    sys.exit(2)
