import sys

try:
    from pstudy.cli import main
except KeyboardInterrupt:  # Ctrl-C while the interpreter imports: no traceback for it
    sys.stderr.write("\nperfstudy: interrupted\n")
    sys.exit(130)

sys.exit(main(sys.argv[1:]))
