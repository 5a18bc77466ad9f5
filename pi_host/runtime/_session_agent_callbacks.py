"""The agent's callbacks, each bridged to its plugin hook.

Context transform, provider payload and response, tool call and result, next-turn
preparation, and credentials: the agent calls these during a run; each calls the hook of the
same stage (and skips the work of building its arguments when no plugin implements it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pi_host.agent import AgentContext, TurnContext, TurnUpdate
from pi_host.hookspecs import ToolCallBlock, ToolCallRewrite
from pi_host.messages import AgentMessage
from pi_host.providers import AbortSignal, Model

if TYPE_CHECKING:
    from pi_host.agent import (
        AfterToolCallContext,
        AfterToolCallResult,
        Agent,
        BeforeToolCallContext,
        BeforeToolCallResult,
    )

    from ._context import SessionPluginContext
    from ._host import Host

__all__ = ["install_agent_callbacks"]


class _Session(Protocol):
    """What the callbacks need of their session."""

    host: Host
    agent: Agent
    ctx: SessionPluginContext
    cwd: str
    model_resolver: Any

    def removed_tool_reason(self, name: str) -> str | None: ...


def install_agent_callbacks(session: _Session) -> None:
    """Point the session's agent at the session's plugins (and its cwd and plugin context)."""
    agent, dispatcher, ctx = session.agent, session.host.dispatcher, session.ctx

    async def transform_context(messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
        return await dispatcher.context(messages=messages, ctx=ctx)

    async def on_payload(payload: Any, model: Model) -> Any:
        return await dispatcher.before_provider_request(payload=payload, model=model, ctx=ctx)

    async def on_response(status: int, headers: dict[str, str], model: Model) -> None:
        await dispatcher.after_provider_response(status=status, headers=headers, ctx=ctx)

    async def before_tool_call(
        call: BeforeToolCallContext, signal: AbortSignal
    ) -> BeforeToolCallResult | None:
        if not dispatcher.has_implementations("pi_tool_call"):
            return None
        from pi_host.agent import BeforeToolCallResult

        raw = call.args.model_dump(mode="json", by_alias=True, exclude_unset=False)
        verdict = await dispatcher.tool_call(
            tool_call_id=call.tool_call.id, tool_name=call.tool_call.name, input=raw, ctx=ctx
        )
        if isinstance(verdict, ToolCallBlock):
            return BeforeToolCallResult(block=True, reason=verdict.reason)
        if isinstance(verdict, ToolCallRewrite):
            tool = session.host.tools.get(call.tool_call.name)
            if tool is None:
                return None
            try:
                return BeforeToolCallResult(args=tool.validate_arguments(verdict.input))
            except ValueError as exc:
                return BeforeToolCallResult(block=True, reason=str(exc))
        return None

    async def after_tool_call(call: AfterToolCallContext, signal: AbortSignal) -> AfterToolCallResult | None:
        if not dispatcher.has_implementations("pi_tool_result"):
            return None
        patch = await dispatcher.tool_result(
            tool_call_id=call.tool_call.id,
            tool_name=call.tool_call.name,
            input=call.args.model_dump(mode="json", by_alias=True),
            content=call.result.content,
            details=call.result.details,
            is_error=call.is_error,
            ctx=ctx,
        )
        if patch is None:
            return None
        from pi_host.agent import AfterToolCallResult

        fields = patch.model_fields_set
        return AfterToolCallResult(
            content=list(patch.content) if "content" in fields and patch.content is not None else None,
            details=patch.details if "details" in fields else call.result.details,
            is_error=patch.is_error if "is_error" in fields else None,
        )

    async def prepare_next_turn(turn: TurnContext, signal: AbortSignal) -> TurnUpdate | None:
        # A tool registered (or activated) during the run takes part from the next turn
        # on, as pi's registerTool does: the run's context was taken when it started.
        tools = list(session.agent.state.tools)
        tools_changed = [id(t) for t in tools] != [id(t) for t in turn.context.tools]
        update = None
        if dispatcher.has_implementations("pi_prepare_next_turn"):
            update = await dispatcher.prepare_next_turn(
                message=turn.message, tool_results=turn.tool_results, messages=turn.context.messages, ctx=ctx
            )
        if update is None and not tools_changed:
            return None
        context = None
        if update is not None and update.messages is not None:
            context = AgentContext(
                system_prompt=session.agent.state.system_prompt,
                messages=list(update.messages),
                tools=tools if tools_changed else turn.context.tools,
            )
        elif tools_changed:
            context = AgentContext(
                system_prompt=turn.context.system_prompt, messages=turn.context.messages, tools=tools
            )
        if update is None:
            return TurnUpdate(context=context)
        return TurnUpdate(context=context, model=update.model, thinking_level=update.thinking_level)

    async def get_api_key(provider: str) -> str | None:
        if session.model_resolver is None:
            return None
        key: str | None = await session.model_resolver.api_key_for(provider)
        return key

    agent.transform_context = transform_context
    agent.on_payload = on_payload
    agent.on_response = on_response
    agent.before_tool_call = before_tool_call
    agent.after_tool_call = after_tool_call
    agent.prepare_next_turn = prepare_next_turn
    agent.get_api_key = get_api_key
    agent.cwd = session.cwd
    agent.session = session.ctx
    agent.missing_tool = session.removed_tool_reason
