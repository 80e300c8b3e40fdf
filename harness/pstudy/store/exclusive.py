"""Outputs placed exclusively: a file a long-running command leaves (a study's archive, a noise
sweep's co-runner record) is never put over another one, and two writers of one name are refused.

A writer claims the name first (claim): it locks NAME.partial (flock, released by the kernel when
the writer dies, so a killed writer's leftover is taken over, never a live one's) and finds NAME
absent under that lock. It writes NAME.partial, then hard-links it to NAME, which fails when NAME
exists, instead of renaming over it. A second writer is refused in one line, at its claim or, when
NAME appeared otherwise meanwhile, at the link, its own output kept under NAME.partial.
"""

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from pstudy.errors import StudyError


class Claim:
    """The claim on `final`: `file` (NAME.partial, open for binary writing) and place()."""

    def __init__(self, final, partial, file):
        self.final, self.partial, self.file, self.written = final, partial, file, False

    def place(self):
        """NAME.partial, written, linked to NAME; StudyError when NAME exists (or the file system
        has no hard links), NAME.partial then kept whole."""
        self.file.flush()
        os.fsync(self.file.fileno())
        self.written = True
        try:
            os.link(self.partial, self.final)
        except OSError as err:
            why = "written by another process meanwhile" if err.errno == errno.EEXIST else err.strerror
            raise StudyError(f"{self.final}: {why} (never replaced); the output is kept in {self.partial}") from None
        os.unlink(self.partial)


@contextlib.contextmanager
def claim(final, what):
    """Claims `final` for the block (module comment); `what` names it in the messages (an option).
    StudyError when it exists or another process is writing it. Left before place(), the block
    removes NAME.partial."""
    final = Path(final)
    partial = final.with_name(final.name + ".partial")
    fd = os.open(partial, os.O_RDWR | os.O_CREAT, 0o644)
    f = os.fdopen(fd, "r+b")
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StudyError(f"{what} {final}: another process is writing it ({partial} is locked)") from None
        held = Claim(final, partial, f)
        try:
            if os.path.lexists(final):
                raise StudyError(f"{what} {final}: exists (never replaced)")
            f.truncate(0)
            yield held
        finally:
            if not held.written and partial.exists():  # what is not whole is not kept
                os.unlink(partial)
    finally:
        f.close()


def write(final, data, what):
    """`data` (bytes or text) as the new file `final`, placed exclusively (claim)."""
    with claim(final, what) as held:
        held.file.write(data.encode() if isinstance(data, str) else data)
        held.place()
