import sys

from pstudy.cli import main

sys.exit(main(sys.argv[1:]))
