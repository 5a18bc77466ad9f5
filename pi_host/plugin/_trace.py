"""``PI_HOST_TRACE_HOOKS=1``: print every dispatch to stderr (hook, implementations, results, timings)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

__all__ = ["TRACE_ENV", "DispatchTrace", "ImplTrace", "Tracer", "format_dispatch", "summarize"]

TRACE_ENV = "PI_HOST_TRACE_HOOKS"

_MAX_SUMMARY = 100


def summarize(value: object, limit: int = _MAX_SUMMARY) -> str:
    """A one-line ``repr`` of ``value``, shortened to ``limit`` characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class ImplTrace:
    """What one implementation did during a dispatch.

    :ivar outcome: ``"result"``, ``"none"``, ``"error"``, ``"rejected"`` or ``"not reached"``.
    :ivar detail: the result summary or error message.
    """

    plugin: str
    is_async: bool
    outcome: str
    detail: str = ""
    seconds: float = 0.0
    stopped: bool = False


@dataclass(frozen=True, slots=True)
class DispatchTrace:
    hook: str
    strategy: str
    impls: tuple[ImplTrace, ...]
    result: object
    seconds: float


def format_dispatch(trace: DispatchTrace) -> str:
    """The trace lines for one dispatch, e.g.::

    [pi-host] pi_tool_call (veto) 0.084 ms -> ToolCallBlock(reason='no')
      1. guard         0.031 ms  -> ToolCallBlock(reason='no')  [stop]
      2. audit (async)           not reached
    """
    lines = [
        f"[pi-host] {trace.hook} ({trace.strategy}) {trace.seconds * 1000:.3f} ms "
        f"-> {summarize(trace.result)}"
    ]
    width = max(len(_label(impl)) for impl in trace.impls)
    for index, impl in enumerate(trace.impls, 1):
        label = _label(impl).ljust(width)
        if impl.outcome == "not reached":
            lines.append(f"  {index}. {label}  {'':>9}  not reached")
            continue
        timing = f"{impl.seconds * 1000:.3f} ms"
        if impl.outcome == "none":
            text = "-> None"
        elif impl.outcome == "result":
            text = f"-> {impl.detail}"
        else:
            text = f"{impl.outcome.upper()}: {impl.detail}"
        stop = "  [stop]" if impl.stopped else ""
        lines.append(f"  {index}. {label}  {timing:>9}  {text}{stop}")
    return "\n".join(lines)


def _label(impl: ImplTrace) -> str:
    return f"{impl.plugin} (async)" if impl.is_async else impl.plugin


class Tracer:
    """Writes dispatch traces to a stream (``sys.stderr`` as it is at write time, by default)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Tracer | None:
        """A tracer when ``PI_HOST_TRACE_HOOKS`` is set to a true value, else ``None``."""
        value = (os.environ if environ is None else environ).get(TRACE_ENV, "")
        return cls() if value.strip().lower() in ("1", "true", "yes", "on") else None

    def write(self, trace: DispatchTrace) -> None:
        stream = self._stream if self._stream is not None else sys.stderr
        stream.write(format_dispatch(trace) + "\n")
        stream.flush()
