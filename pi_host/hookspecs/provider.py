"""Provider hooks: the context sent to the model, the request body, the HTTP response.

Per provider call, after ``pi_turn_start``: ``pi_context`` (agent messages) → conversion to
provider messages → ``pi_before_provider_request`` (the provider-specific body) → HTTP →
``pi_after_provider_response`` (status and headers, before the stream is read) → message
hooks (:mod:`pi_host.hookspecs.message`).
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._reducers import ContextReducer
from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    from pi_host.messages import AgentMessage
    from pi_host.providers import Model

    from ._context import PluginContext

__all__ = ["pi_after_provider_response", "pi_before_provider_request", "pi_context"]


@hookspec(strategy=Strategy.PIPELINE, returns=(list, tuple), pipe="messages", reducer=ContextReducer)
def pi_context(messages: Sequence[AgentMessage], ctx: PluginContext) -> Sequence[AgentMessage] | None:
    """Change the messages sent to the model for one provider call, without touching the session.

    Fires once per provider call, after ``pi_turn_start``, before the messages are converted
    for the provider and ``pi_before_provider_request``. The session's transcript is not
    changed: filtering, redaction or pinning here only affects what the model sees.

    :param messages: the agent messages for this call (as replaced by earlier implementations).
    :param ctx: the plugin context.
    :returns: a new list of messages, or ``None`` to keep them. Do not mutate ``messages``;
        the messages themselves are frozen (``model_copy(update=...)`` makes a changed copy).

    **Combination:** pipeline — every implementation runs; each sees the previous one's list.
    **On error:** reported and skipped; that implementation's change is dropped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_context(messages):
            # hide plugin-internal notes from the model
            return [m for m in messages if getattr(m, "custom_type", None) != "internal-note"]
    """


@hookspec(strategy=Strategy.PIPELINE, returns=object, pipe="payload")
def pi_before_provider_request(payload: Any, model: Model, ctx: PluginContext) -> Any | None:
    """Inspect or replace the provider-specific request body just before it is sent.

    Fires after ``pi_context`` and conversion, once per HTTP request, before
    ``pi_after_provider_response``.

    :param payload: the request body as the provider's API expects it (e.g. the Anthropic
        Messages API JSON), as replaced by earlier implementations. Treat it as read-only.
    :param model: the model the request is for.
    :param ctx: the plugin context.
    :returns: a replacement body, or ``None`` to keep it.

    **Combination:** pipeline — every implementation runs; each sees the previous one's body.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_before_provider_request(payload, model):
            if model.api == "anthropic-messages" and isinstance(payload, dict):
                return {**payload, "metadata": {"user_id": "pi-host"}}
            return None
    """


@hookspec(strategy=Strategy.NOTIFY)
def pi_after_provider_response(status: int, headers: Mapping[str, str], ctx: PluginContext) -> None:
    """The provider answered; the response stream has not been read yet.

    Fires after ``pi_before_provider_request``, before the reply's ``pi_message_start``.

    :param status: the HTTP status code.
    :param headers: the response headers (lower-case names).
    :param ctx: the plugin context.

    **Combination:** notify — every implementation runs; return nothing.
    **On error:** reported and skipped.

    Example::

        from pi_host import hookimpl


        @hookimpl
        def pi_after_provider_response(headers, ctx):
            remaining = headers.get("anthropic-ratelimit-requests-remaining")
            if remaining is not None:
                ctx.ui.set_status("ratelimit", f"requests left: {remaining}")
    """
