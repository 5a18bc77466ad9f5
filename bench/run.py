"""Benchmark pi-host against pi 0.73 side by side: ``uv run python bench/run.py [--quick]``.

See ``docs/performance.md`` for what is measured; ``--help`` for the options.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The runner lives in bench/side_by_side and uses the fake servers of tests/fakeservers.
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from side_by_side import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
