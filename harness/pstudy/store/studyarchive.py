"""The study archive (`perfstudy study --archive FILE.tar.gz`): its layout, and reading it back.

    study/machine.txt, study/counters.txt, study/log.txt
    study/ceilings/                 the machine's ceilings, measured once before the sweeps
    study/results/<directory>/      one results directory per config (resultsdir.py's layout)

An archive comes home from another machine: it is unpacked with nothing but plain files and folders
below study/ (no links, devices, absolute paths or '..'), and no more than MAX_BYTES in all, so that
a damaged or foreign archive is refused in one line instead of writing outside its folder.
"""

import errno
import gzip
import os
import shutil
import tarfile
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path

from pstudy import common
from pstudy.errors import StudyError

ROOT = "study"
RESULTS = "results"
SUFFIXES = (".tar.gz", ".tgz")
MAX_BYTES = 64 << 30
# in a folder an archive was unpacked into to stay: the archive's sha256 and where it was
UNPACKED_FROM = ".unpacked-from"


def is_archive(path):
    return str(path).endswith(SUFFIXES) and Path(path).is_file()


def _members(tar, path):
    total = 0
    for member in tar.getmembers():
        name = Path(member.name)
        if name.is_absolute() or ".." in name.parts or (name.parts[:1] != (ROOT,)):
            raise StudyError(f"{path}: not a study archive: it holds {member.name!r} outside {ROOT}/")
        if not (member.isfile() or member.isdir()):
            raise StudyError(f"{path}: {member.name}: a link or special file, which a study archive never holds")
        total += member.size
        if total > MAX_BYTES:
            raise StudyError(f"{path}: over {MAX_BYTES >> 30} GiB unpacked: not a study archive")
        yield member


def unpack(path, into):
    """Unpacks the archive `path` into the folder `into` (which must be empty or absent); returns
    into/study."""
    into = Path(into)
    try:
        with tarfile.open(path, "r:gz") as tar:
            members = list(_members(tar, path))
            if not members:
                raise StudyError(f"{path}: an empty archive")
            into.mkdir(parents=True, exist_ok=True)
            for member in members:  # checked above: plain files and folders below study/
                tar.extract(member, into, set_attrs=False)
    except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error) as err:  # a full disk is the caller's OSError
        raise StudyError(f"{path}: not a readable .tar.gz archive ({err})") from None
    root = into / ROOT
    if not root.is_dir():
        raise StudyError(f"{path}: no {ROOT}/ folder: not a study archive")
    return root


def results_dirs(study_root):
    """The results directories of an unpacked study, in name order."""
    folder = Path(study_root) / RESULTS
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def unpack_kept(path, results_root):
    """The archive unpacked, to stay, into results_root/<its name without .tar.gz>/ (reused when that
    folder is this same archive's unpacking; refused when it is anything else); its results
    directories."""
    name = Path(path).name
    folder = Path(results_root) / name[: -len(next(s for s in SUFFIXES if name.endswith(s)))]
    mark = folder / UNPACKED_FROM
    wanted = common.file_sha256(path)
    if folder.exists():
        if not (mark.is_file() and mark.read_text().split()[:1] == [wanted]):
            raise StudyError(f"{path}: would unpack into {folder}, which exists and is not this archive's "
                             "unpacking (move it, or rename the archive)")
        return results_dirs(folder / ROOT)
    Path(results_root).mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=results_root))
    try:
        unpack(path, partial)
        (partial / UNPACKED_FROM).write_text(f"{wanted}  {Path(path).resolve()}\n")
        os.rename(partial, folder)  # whole or not at all; a second reader of the same archive loses here
    except FileExistsError:
        pass
    except OSError as err:
        if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return unpack_kept(path, results_root)


@contextmanager
def unpacked(path):
    """The archive unpacked into a temporary folder for as long as the block runs: its study/ folder."""
    tmp = tempfile.mkdtemp(prefix="perfstudy-archive-")
    try:
        yield unpack(path, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
