"""Default factories for pydantic fields, defined below every layer.

pydantic asks each ``default_factory`` for its signature (does it take the validated data?).
For a builtin such as ``list`` that means parsing its text signature with :mod:`tokenize`,
whose first use compiles tokenize's regular expressions: ~4 ms of a one-shot reply for the
settings and message models. A Python function's signature is read directly.
"""

from __future__ import annotations

from typing import Any

__all__ = ["empty_list"]


def empty_list() -> list[Any]:
    """A new empty list: ``Field(default_factory=empty_list)`` instead of ``default_factory=list``."""
    return []
