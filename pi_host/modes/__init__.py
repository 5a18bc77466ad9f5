"""Layer 6, the modes: the ``pi-host`` command, print, JSON, RPC and interactive modes, export.

Kept import-free so that ``pi-host --version`` and ``--help`` load nothing heavy; the one
public name (``pi_host.Distribution``) is imported on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host import _lazy

__all__ = ["Distribution"]

if TYPE_CHECKING:
    from ._distribution import Distribution

__getattr__, __dir__ = _lazy.lazy_exports(__name__, {"Distribution": "_distribution"}, __all__)
