"""pi-hello: an example pi-host plugin with one of each kind of extension.

- a tool, ``greet``, that the model can call;
- a slash command, ``/hello [name]``, that greets the user and leaves a note in the session;
- a ``pi_input`` shortcut: ``:greet Ada`` becomes a request to greet Ada with the tool;
- a ``pi_tool_call`` policy that refuses to greet anyone on the blocklist;
- a ``pi_context`` filter that keeps the ``/hello`` notes away from the model.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from pi_host import (
    AgentMessage,
    Command,
    CommandContext,
    CustomMessage,
    InputTransform,
    Tool,
    ToolCallBlock,
    ToolCallContext,
    ToolResult,
    hookimpl,
)

__all__ = [
    "BLOCKLIST_ENV",
    "NOTE_TYPE",
    "GreetParams",
    "blocklist",
    "greet_tool",
    "hello_command",
    "pi_context",
    "pi_input",
    "pi_register_commands",
    "pi_register_tools",
    "pi_tool_call",
]

NOTE_TYPE = "hello-note"
"""The ``custom_type`` of the notes ``/hello`` leaves in the session."""

BLOCKLIST_ENV = "PI_HELLO_BLOCKLIST"
"""Comma-separated names the ``greet`` tool must not be used for (default: ``Voldemort``)."""

_SHORTCUT = ":greet "


# -- the tool ---------------------------------------------------------------------------------


class GreetParams(BaseModel):
    """Arguments of ``greet``: the JSON schema the model sees comes from these fields."""

    name: str = Field(description="The name of the person to greet")
    excited: bool = Field(default=False, description="End the greeting with an exclamation mark")


async def _greet(params: GreetParams, ctx: ToolCallContext) -> ToolResult:
    ending = "!" if params.excited else "."
    return ToolResult.text(f"Hello, {params.name}{ending}", details={"name": params.name})


greet_tool = Tool(
    name="greet",
    description="Greet a person by name. Returns the greeting text.",
    parameters=GreetParams,
    execute=_greet,
    prompt_snippet="Greet a person by name",
)


@hookimpl
def pi_register_tools(register: Callable[[Tool[Any]], None]) -> None:
    register(greet_tool)


# -- the slash command ------------------------------------------------------------------------


async def hello_command(args: str, ctx: CommandContext) -> None:
    """``/hello [name]``: greet in the UI and note it in the session (shown, not sent to the model)."""
    name = args or "world"
    ctx.ui.notify(f"Hello, {name}!", "info")
    ctx.send_message(CustomMessage(custom_type=NOTE_TYPE, content=f"Said hello to {name}.", display=True))


@hookimpl
def pi_register_commands(register: Callable[[Command], None]) -> None:
    register(Command(name="hello", description="Say hello (to you, or to a name)", handler=hello_command))


# -- the input transform ----------------------------------------------------------------------


@hookimpl
def pi_input(text: str) -> InputTransform | None:
    """``:greet Ada`` → a prompt that asks the model to use the ``greet`` tool."""
    if not text.startswith(_SHORTCUT):
        return None
    name = text[len(_SHORTCUT) :].strip()
    return InputTransform(text=f"Greet {name} using the greet tool.")


# -- the tool policy --------------------------------------------------------------------------


def blocklist(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The names ``greet`` refuses, case-folded."""
    env = os.environ if environ is None else environ
    names = env.get(BLOCKLIST_ENV, "Voldemort").split(",")
    return frozenset(name.strip().casefold() for name in names if name.strip())


# trylast: a policy should judge the arguments the tool will really get, after other
# plugins' rewrites.
@hookimpl(trylast=True)
def pi_tool_call(tool_name: str, input: Mapping[str, Any]) -> ToolCallBlock | None:
    if tool_name == "greet" and str(input.get("name", "")).casefold() in blocklist():
        return ToolCallBlock(reason=f"pi-hello will not greet {input['name']}")
    return None


# -- the context filter -----------------------------------------------------------------------


@hookimpl
def pi_context(messages: Sequence[AgentMessage]) -> list[AgentMessage] | None:
    """Drop ``/hello`` notes from what the model sees; the session keeps them."""
    kept = [m for m in messages if not (isinstance(m, CustomMessage) and m.custom_type == NOTE_TYPE)]
    return kept if len(kept) != len(messages) else None
