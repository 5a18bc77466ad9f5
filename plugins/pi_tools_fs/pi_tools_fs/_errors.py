"""The exception the file tools raise for a failure the model should read."""

from __future__ import annotations

from pi_host import AbortedError, AbortSignal

__all__ = ["ToolError", "raise_if_aborted"]

OPERATION_ABORTED = "Operation aborted"


class ToolError(Exception):
    """A tool failure; ``str(error)`` is pi's text, which becomes the error result."""


def raise_if_aborted(signal: AbortSignal) -> None:
    """:raises AbortedError: ``Operation aborted`` (pi's text) once the run is aborted."""
    if signal.aborted:
        raise AbortedError(OPERATION_ABORTED)
