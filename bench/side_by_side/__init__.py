"""Side-by-side benchmark of pi-host against pi 0.73, in one run, on one machine.

``uv run python bench/run.py`` (see ``docs/performance.md``): starts a fake Anthropic Messages
server on 127.0.0.1, installs pi 0.73 from npm into a cache folder when it is missing, points
both agents at the server through their ``models.json``, runs every workload for both agents
alternately (pi-host, pi, pi-host, pi, …) after a warm-up, and writes the table of medians,
ranges and pairwise pi-host/pi ratios into ``docs/performance.md``.
"""

from __future__ import annotations

from ._runner import main

__all__ = ["main"]
