# Makes harness/pstudy importable as `pstudy` when pytest runs from the repository root.
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "harness") not in sys.path:
    sys.path.insert(0, str(REPO / "harness"))
