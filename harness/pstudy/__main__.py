import signal
import sys

from pstudy import common

# harness/perfstudy starts the interpreter with SIGINT ignored (see there); Ctrl-C is held while the
# modules load, and takes effect once they have (cli.main)
signal.signal(signal.SIGINT, common.hold_interrupt)

from pstudy.cli import main  # noqa: E402  (after the handler)

sys.exit(main(sys.argv[1:]))
