"""The Python bridge kit (bridge/python) as this repository holds it, for the demo bridge and the tests: its source
tree on the path rather than an installed copy, so the example a game team copies is always the kit as it stands."""

from __future__ import annotations

import sys
from pathlib import Path

PYTHON_KIT = Path(__file__).resolve().parents[2] / "bridge" / "python"
if str(PYTHON_KIT) not in sys.path:
    sys.path.insert(0, str(PYTHON_KIT))

import event_bridge  # noqa: E402

__all__ = ["PYTHON_KIT", "event_bridge"]
