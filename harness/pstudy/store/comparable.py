"""Whether results directories measured the same problem the same way: the model (a named
configuration or a checkpoint) and its data, the batch shape B and T, and the threads' placement
(OMP_PROC_BIND, OMP_PLACES). A command that sets one directory's times against another's (predict --against,
compare, answer, the noise study through predict) refuses to mix directories that differ in any of
these unless its --mixed says to: a tiny model's steps against d12's give errors of -98%, not
findings."""

from pstudy.errors import StudyError
from pstudy.store import resultsdir

OPTION = "--mixed"
HELP = "set results of different models, B, T or thread placements against each other anyway"


def identity(meta):
    """What must agree, from a directory's meta.json: (model, data, B, T, proc_bind, places)."""
    model, placement = meta.model, meta.table("config", "placement")
    return (model.get("config") or model.get("checkpoint"), model.get("data"), model.get("B"), model.get("T"),
            placement.get("proc_bind"), placement.get("places"))


def describe(ident):
    model, data, B, T, bind, places = ident
    return (f"model {model}{f' on {data}' if data else ''} B={B} T={T}, OMP_PROC_BIND={bind or '(unset)'} "
            f"OMP_PLACES={places or '(unset)'}")


def check(directories, mixed=False):
    """StudyError naming the first two of `directories` that measured different problems or
    placements (and how each did), unless `mixed`."""
    if mixed:
        return
    first, ident = None, None
    for directory in directories:
        mine = identity(resultsdir.read_meta(directory))
        if first is None:
            first, ident = directory, mine
        elif mine != ident:
            raise StudyError(f"{first} ({describe(ident)}) and {directory} ({describe(mine)}): not comparable "
                             f"({OPTION} sets them against each other anyway)")
