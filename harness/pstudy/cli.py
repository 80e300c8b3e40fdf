"""Subcommand dispatch for harness/perfstudy.

Each subcommand is a module in pstudy/commands/ with two functions:
    add_arguments(parser)   adds its options to an argparse parser
    main(args) -> int       runs it and returns the exit status
and a one-line docstring used in the overview. Only the chosen module is imported, so a
subcommand that needs heavy libraries costs nothing to the others. To add one, write the
module and add a line to SUBCOMMANDS.
"""

import argparse
import importlib
import sys

from pstudy import common
from pstudy.errors import StudyError, os_error_message

# name on the command line -> module in pstudy/
SUBCOMMANDS = {name: f"pstudy.commands.{name}" for name in
               ("run", "report", "list", "trace", "ceilings", "roofline", "predict", "compare", "regress",
                "history", "sensitivity", "cachesim", "study", "answer", "doctor", "pairs", "validate", "noise")}

USAGE = """usage: perfstudy SUBCOMMAND [options]   (perfstudy SUBCOMMAND --help for its options)

subcommands:
{lines}
"""


def overview():
    lines = []
    for name, module_name in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        summary = (module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else ""
        lines.append(f"  {name:<10} {summary}")
    return USAGE.format(lines="\n".join(lines))


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(overview())
        return 0 if argv else 2
    name = argv[0]
    if name not in SUBCOMMANDS:
        sys.stderr.write(f"perfstudy: unknown subcommand '{name}' (known: {', '.join(SUBCOMMANDS)})\n")
        return 2
    try:
        try:
            module = importlib.import_module(SUBCOMMANDS[name])
        except StudyError as err:  # the variant registry is read on import
            sys.stderr.write(f"perfstudy {name}: {err}\n")
            return 2
        summary = (module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else None
        parser = argparse.ArgumentParser(prog=f"perfstudy {name}", description=summary)
        module.add_arguments(parser)
        args = parser.parse_args(argv[1:])
        common.take_interrupts()
        return module.main(args)
    except StudyError as err:
        sys.stderr.write(f"perfstudy {name}: {err}\n")
        return 2
    except OSError as err:  # a full disk, a read-only or unwritable root, a path under a file
        sys.stderr.write(f"perfstudy {name}: {os_error_message(err)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"\nperfstudy {name}: interrupted\n")
        return 130
    except ImportError as err:
        sys.stderr.write(f"perfstudy {name}: {sys.executable} cannot import what it needs: {err}\n")
        return 2
