"""The scripted ``faux`` provider as an essential plugin: offline demos and tests.

With ``PI_HOST_FAUX_SCRIPT`` set to a JSON file (a list of replies, see
:func:`pi_host.providers.load_faux_script`), ``--provider faux`` replays it; without it, the
provider answers every request with a clear error.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from pi_host.hookspecs import hookimpl
from pi_host.messages import AssistantMessageEvent
from pi_host.providers import LlmContext, Model, Provider, StreamOptions
from pi_host.providers._faux_models import faux_models

if TYPE_CHECKING:
    from pi_host.providers import FauxProvider

__all__ = ["FAUX_SCRIPT_ENV", "pi_register_providers"]

FAUX_SCRIPT_ENV = "PI_HOST_FAUX_SCRIPT"


class _Script:
    """One host's scripted provider, made (and the script read) by its first request.

    Each registration gets its own: sessions of one process, each with its own host, replay
    the script independently instead of taking turns on one queue (``/reload`` re-reads it).
    """

    __slots__ = ("_provider",)

    def __init__(self) -> None:
        self._provider: FauxProvider | None = None

    def stream(
        self, model: Model, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        if self._provider is None:
            self._provider = _load()
        return self._provider.stream(model, context, options)


def _load() -> FauxProvider:
    # The scripted provider is imported by the first faux request, not at registration.
    from pi_host.providers import FauxProvider, load_faux_script

    path = os.environ.get(FAUX_SCRIPT_ENV)
    if path:
        return load_faux_script(path)
    return FauxProvider(exhausted_message=f"No faux replies: set {FAUX_SCRIPT_ENV} to a JSON script file")


@hookimpl(trylast=True)
def pi_register_providers(register: Callable[[Provider], None]) -> None:
    """Register ``faux`` with its model ``faux/faux-1`` (no credentials needed)."""
    # Listed among the available models only when a script is set: otherwise it would answer
    # every request with an error, and model cycling would land on it.
    register(
        Provider(
            api="faux",
            stream=_Script().stream,
            models=faux_models(),
            requires_auth=False,
            listed=bool(os.environ.get(FAUX_SCRIPT_ENV)),
        )
    )
