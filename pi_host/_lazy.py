"""Package namespaces that import their names on first access (PEP 562).

Start-up imports only what a run uses: ``pi-host --version`` or a one-shot ``-p`` reply must
not pay for the modules behind every public name of every package. A package keeps its
``__all__`` and type-checking imports, and hands its name → submodule table to
:func:`lazy_exports` for the module-level ``__getattr__`` and ``__dir__``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, resolving names through ``exports``.

    :param exports: each lazily imported name → the module it lives in: a bare name is a
        submodule of ``package`` (``"_session"``), a dotted one is absolute
        (``"pi_host.providers"``). A name is imported once, then cached in the package's
        namespace, so later lookups are plain attribute reads.
    :param public: what ``dir(package)`` lists (its ``__all__``).
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        path = module if "." in module else f"{package}.{module}"
        value = getattr(importlib.import_module(path), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return list(public)

    return __getattr__, __dir__
