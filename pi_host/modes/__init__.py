"""Layer 6, the modes: the ``pi-host`` command, print, JSON, RPC and interactive modes, export.

Kept import-free so that ``pi-host --version`` and ``--help`` load nothing heavy.
"""

from __future__ import annotations

__all__: list[str] = []
