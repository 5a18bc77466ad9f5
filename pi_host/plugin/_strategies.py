"""The reducers, where the plugin layer has always exported them from (they live with the hookspecs)."""

from __future__ import annotations

from pi_host.hookspecs._reducers import Reducer, ResultRejected, Step, VetoFailure, reducer_for

__all__ = ["Reducer", "ResultRejected", "Step", "VetoFailure", "reducer_for"]
