"""A third-party plugin that extends the interactive screen: a key binding, a renderer for its
custom messages, and a tool with its own call and result renderers."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from rich.text import Text

from pi_host import CustomMessage, Tool, ToolResult, hookimpl
from pi_host.hookspecs import MessageRenderer, Shortcut, ToolRenderer


class WeatherParams(BaseModel):
    city: str


async def _weather(params: WeatherParams, ctx: Any) -> ToolResult:
    return ToolResult.text(f"{params.city}: sunny, 21 degrees")


async def _note(ctx: Any) -> None:
    ctx.send_message(CustomMessage(custom_type="screen-note", content="pressed ctrl+x", display=True))


@hookimpl
def pi_register_tools(register: Any) -> None:
    register(
        Tool(name="weather", description="Weather in a city.", parameters=WeatherParams, execute=_weather)
    )


@hookimpl
def pi_register_shortcuts(register: Any) -> None:
    register(Shortcut(key="ctrl+x", description="Leave a note", handler=_note))


@hookimpl
def pi_register_message_renderers(register: Any) -> None:
    register(
        MessageRenderer(
            custom_type="screen-note", render=lambda message, expanded: f"NOTE >> {message.content}"
        )
    )


@hookimpl
def pi_register_tool_renderers(register: Any) -> None:
    register(
        ToolRenderer(
            tool="weather",
            render_call=lambda view: Text(
                f"Forecast wanted for {view.args.get('city', '...')}", style="bold"
            ),
            render_result=lambda view: (
                None if view.result_text is None else f"FORECAST >> {view.result_text}"
            ),
        )
    )
