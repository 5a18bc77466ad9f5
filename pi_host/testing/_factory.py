"""The type of the ``make_host`` fixture, importable without pytest."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from pi_host.modes._distribution import Distribution

from ._host import IsolatedHost
from ._script import Responder, ScriptedProvider, Step
from ._ui import RecordingUI

__all__ = ["HostFactory"]


class HostFactory(Protocol):
    """The type of the ``make_host`` fixture."""

    def __call__(
        self,
        *plugins: object,
        load: Iterable[str] | None = None,
        replies: Iterable[Step] = (),
        respond: Responder | None = None,
        provider: ScriptedProvider | None = None,
        settings: Mapping[str, Any] | None = None,
        files: Mapping[str, str | bytes] | None = None,
        tools: Sequence[str] | None = None,
        system_prompt: str | None = None,
        session_options: Mapping[str, Any] | None = None,
        ui: RecordingUI | None = None,
        distribution: Distribution | None = None,
        strict: bool = True,
        trace: bool = False,
    ) -> IsolatedHost: ...
