"""The offline demo that ``bash scripts/run.sh`` starts when no API key is set.

A real pi-host session (plugins, tools, the agent loop) on the scripted ``faux`` model: the
"model" lists the folder with the ``ls`` tool, reads the README it found with ``read``, and
answers from what the tools returned (its replies are computed from the tool results in
its request, as a real model's would be). Every step is printed as it happens.

Run it yourself: ``uv run python examples/demo/tour.py [FOLDER]``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from pi_host import SessionOptions, create_session
from pi_host.messages import (
    AssistantMessage,
    MessageEndEvent,
    TextContent,
    ThinkingContent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
)
from pi_host.runtime import Host
from pi_host.testing import Request, ScriptedProvider, reply, tool_call

PROMPT = "Give me a quick tour of this folder."
SHOWN_LINES = 8
_BULLET = "\u25cf"  # a filled circle marks a tool call
_PROMPT_MARK = "\u203a"  # the user's prompt


def _result_text(request: Request, index: int) -> str:
    results = request.tool_results
    if len(results) <= index:
        return ""
    return "".join(block.text for block in results[index].content if isinstance(block, TextContent))


def _after_ls(request: Request) -> Any:
    """Second turn: pick a README from the listing the ls tool returned, and read it."""
    entries = [line for line in _result_text(request, 0).splitlines() if line and not line.startswith("[")]
    readme = next((e for e in entries if e.lower().startswith("readme")), None)
    if readme is None:
        return _answer(request)
    return reply(
        thinking=f"There is a {readme}; its first lines will say what this is.",
        tool_calls=[tool_call("read", path=readme, limit=5)],
    )


def _answer(request: Request) -> Any:
    """Last turn: answer from the tool results in the request."""
    listed = [line for line in _result_text(request, 0).splitlines() if line and not line.startswith("[")]
    entries = [e for e in listed if not e.startswith(".")]
    hidden = len(listed) - len(entries)
    folders = [e.rstrip("/") for e in entries if e.endswith("/")]
    files = [e for e in entries if not e.endswith("/")]
    readme = _result_text(request, 1)
    title = next((line.lstrip("# ").strip() for line in readme.splitlines() if line.strip()), None)
    named = ", ".join(f"`{f}`" for f in folders[:6]) + (" …" if len(folders) > 6 else "")
    lines = [
        f"This folder holds **{len(files)} files** and **{len(folders)} folders**"
        + (f" ({named})" if folders else "")
        + (f", besides {hidden} hidden entries." if hidden else "."),
    ]
    if title:
        lines.append(f"Its README introduces it as **{title}**.")
    lines += [
        "",
        "I found that with two tool calls, `ls` and `read`, run by pi-host's file-tools plugin;",
        "I am the scripted `faux` model, so my words are computed from their results.",
        "",
        "- Talk to a real model: `export ANTHROPIC_API_KEY=...` (or `OPENAI_API_KEY`) and run",
        '  `bash scripts/run.sh` again, or `bash scripts/run.sh -p "your question"`.',
        "- Script the offline model yourself:",
        "  `PI_HOST_FAUX_SCRIPT=replies.json pi-host --provider faux -p hi`.",
    ]
    return reply("\n".join(lines))


class _Transcript:
    """Prints the session's events as a reader would want to see them."""

    def __init__(self, console: Console, on_closed: Any) -> None:
        self.console = console
        self.on_closed = on_closed
        self.closed = False

    def __call__(self, event: Any) -> None:
        if self.closed:
            return
        try:
            self._show(event)
        except SystemExit:
            # rich's answer to a closed stdout (`tour.py | head`): stop the run quietly.
            self.closed = True
            self.on_closed()

    def _show(self, event: Any) -> None:
        if isinstance(event, ToolExecutionStartEvent):
            args = " ".join(f"{key}={value!r}" for key, value in (event.args or {}).items())
            self.console.print(
                Text.assemble(("● ", "cyan"), (event.tool_name, "bold cyan"), " ", (args, "cyan"))
            )
        elif isinstance(event, ToolExecutionEndEvent):
            text = "".join(b.text for b in event.result.content if isinstance(b, TextContent)).rstrip()
            lines = text.splitlines()
            shown = "\n".join(lines[:SHOWN_LINES])
            if len(lines) > SHOWN_LINES:
                shown += f"\n… {len(lines) - SHOWN_LINES} more lines"
            style = "red" if event.is_error else "dim"
            indented = "\n".join(f"  {line}" for line in shown.splitlines())
            self.console.print(Text(indented + "\n", style=style, no_wrap=True, overflow="ellipsis"))
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            for block in event.message.content:
                if isinstance(block, ThinkingContent) and block.thinking:
                    self.console.print(Text(block.thinking, style="italic dim"))
                elif isinstance(block, TextContent) and block.text:
                    self.console.print(Markdown(block.text))


async def tour(folder: Path, console: Console) -> int:
    model = ScriptedProvider(
        [
            reply(
                thinking="A tour starts with what is here: I will list the folder.",
                tool_calls=[tool_call("ls", path=".")],
            ),
            _after_ls,
        ],
        respond=_answer,
    )
    host = Host.load(extra_plugins=[model.plugin()])
    for error in host.load_errors:
        console.print(Text(str(error), style="red"))
    session = await create_session(
        SessionOptions(
            cwd=str(folder),
            provider="faux",
            model="faux-1",
            no_session=True,
            tools=["ls", "read"],
            no_context_files=True,
            no_skills=True,
            no_prompt_templates=True,
        ),
        host=host,
    )
    banner = " offline demo: the scripted faux model, no API key needed"
    console.print(Text.assemble(("pi-host", "bold"), banner))
    console.print(Text.assemble((f"\n{_PROMPT_MARK} ", "bold green"), (PROMPT, "bold"), "\n"))
    transcript = _Transcript(console, session.agent.abort)
    session.subscribe(transcript)
    async with anyio.create_task_group() as tg:
        session.bind_task_group(tg)
        try:
            await session.start("startup")
            await session.prompt(PROMPT)
        finally:
            with anyio.CancelScope(shield=True):
                await session.shutdown("quit")
            tg.cancel_scope.cancel()
    last = session.messages[-1] if session.messages else None
    if transcript.closed:
        return 0
    if isinstance(last, AssistantMessage) and last.stop_reason == "error":
        console.print(Text(last.error_message or "the demo failed", style="red"))
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else ".").resolve()
    return anyio.run(tour, folder, Console(highlight=False))


if __name__ == "__main__":
    sys.exit(main())
