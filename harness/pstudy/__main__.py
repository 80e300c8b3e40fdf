import signal
import sys

# harness/perfstudy starts the interpreter with SIGINT ignored (see there): Ctrl-C is Python's again
signal.signal(signal.SIGINT, signal.default_int_handler)

try:
    from pstudy.cli import main
except KeyboardInterrupt:  # Ctrl-C while the interpreter imports: no traceback for it
    sys.stderr.write("\nperfstudy: interrupted\n")
    sys.exit(130)

sys.exit(main(sys.argv[1:]))
