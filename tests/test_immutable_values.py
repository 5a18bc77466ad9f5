"""What plugins receive is immutable all the way down (issue #14 point 6).

A plugin that tries to change a message, a content list, tool arguments, ``details``, the
messages of ``pi_context``, an event's lists or ``ctx.settings`` in place gets a ``TypeError``,
and the run, the next plugin and the session never see a change. A changed value is returned
instead (``model_copy(update=...)``), and what that returns is read-only too.
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from pi_host import AssistantMessage, Settings, TextContent, ToolCall, ToolResult, UserMessage, hookimpl
from pi_host._frozen import FrozenDict, FrozenList, deep_freeze
from pi_host.testing import tool_call


def refused(change: Callable[[], object]) -> bool:
    """Whether ``change`` is refused: TypeError from a read-only list or mapping, pydantic's
    ValidationError (a ValueError) from assigning to a frozen model."""
    try:
        change()
    except (TypeError, ValueError):
        return True
    return False


class Meddler:
    """Tries every in-place change it can think of on what its hooks receive."""

    def __init__(self) -> None:
        self.allowed: list[str] = []  # changes that went through (there must be none)
        self.checked: set[str] = set()

    def attempt(self, where: str, change: Callable[[], object]) -> None:
        self.checked.add(where)
        if not refused(change):
            self.allowed.append(where)

    @hookimpl
    def pi_context(self, messages: Any) -> None:
        self.attempt("pi_context messages.append", lambda: messages.append(messages[0]))
        self.attempt("pi_context messages[0] =", lambda: messages.__setitem__(0, messages[0]))
        for message in messages:
            if isinstance(message.content, list) and message.content:
                self.attempt("pi_context content.append", lambda m=message: m.content.append(m.content[0]))

    @hookimpl
    def pi_message_end(self, message: Any) -> None:
        if isinstance(message, AssistantMessage):
            self.attempt("message.content.append", lambda: message.content.append(TextContent(text="x")))
            self.attempt("message.content.clear", lambda: message.content.clear())
            self.attempt("message.content +=", lambda: message.content.__iadd__([TextContent(text="x")]))
            for block in message.content:
                if isinstance(block, ToolCall):
                    arguments = block.arguments
                    self.attempt("arguments[k] =", lambda a=arguments: a.__setitem__("path", "/etc/passwd"))
                    self.attempt("arguments.update", lambda a=arguments: a.update(extra=1))
                    self.attempt("nested arguments list", lambda a=arguments: a["lines"].append(9))
                    self.attempt("nested arguments dict", lambda a=arguments: a["opts"].pop("deep"))

    @hookimpl
    def pi_tool_execution_start(self, args: Any) -> None:
        self.attempt("tool_execution_start args", lambda: args.__setitem__("path", "elsewhere"))

    @hookimpl
    def pi_tool_execution_end(self, result: Any) -> None:
        self.attempt("tool result content", lambda: result.content.append(TextContent(text="x")))
        self.attempt("tool result details", lambda: result.details.__setitem__("n", 0))

    @hookimpl
    def pi_turn_end(self, message: Any, tool_results: Any) -> None:
        self.attempt("turn_end tool_results", lambda: tool_results.clear())

    @hookimpl
    def pi_agent_end(self, messages: Any, ctx: Any) -> None:
        self.attempt("agent_end messages", lambda: messages.append(messages[0]))
        settings = ctx.settings
        assert isinstance(settings, Settings)  # typed, not Any
        self.attempt("settings.skills.append", lambda: settings.skills.append("x"))
        self.attempt("settings.plugins.disable", lambda: settings.plugins.disable.append("guard"))
        self.attempt("settings.plugins.prefer", lambda: settings.plugins.prefer.__setitem__("tools", {}))
        self.attempt("settings.default_model =", lambda: setattr(settings, "default_model", "x"))
        section = (settings.model_extra or {})["nag"]
        self.attempt("a plugin's section in settings", lambda: section.__setitem__("everyTurns", 1))
        self.attempt("a plugin's section, deeper", lambda: section["words"].append("x"))


class Echo:
    """A tool whose result carries details, as pi's tools do."""

    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        from pydantic import BaseModel

        from pi_host import Tool

        class Params(BaseModel):
            path: str
            lines: list[int] = []
            opts: dict[str, Any] = {}

        async def execute(params: Any, ctx: Any) -> ToolResult:
            return ToolResult(content=[TextContent(text=params.path)], details={"n": len(params.lines)})

        register(Tool(name="echo", description="echo", parameters=Params, execute=execute))


async def test_a_plugin_cannot_change_what_it_receives(make_host: Any) -> None:
    meddler = Meddler()
    host = make_host(
        meddler,
        Echo(),
        settings={
            "skills": ["a"],
            "plugins": {"prefer": {"tools": {"echo": "Echo"}}},
            "nag": {"everyTurns": 5, "words": ["please"]},
        },
        replies=[tool_call("echo", path="a.txt", lines=[1, 2], opts={"deep": True}), "done"],
    )
    outcome = await host.run("go")
    outcome.assert_no_errors()  # every attempt was refused in place, none failed a hook
    assert outcome.text == "done"
    assert meddler.allowed == []
    assert meddler.checked >= {
        "pi_context messages.append",
        "pi_context content.append",
        "message.content.append",
        "arguments[k] =",
        "nested arguments list",
        "nested arguments dict",
        "tool_execution_start args",
        "tool result details",
        "turn_end tool_results",
        "agent_end messages",
        "settings.plugins.prefer",
        "a plugin's section, deeper",
        "settings.default_model =",
    }
    # Nothing leaked into the run: the tool got the model's arguments, the session its reply.
    assert outcome.tool_results[0].content[0].text == "a.txt"  # type: ignore[union-attr]


def test_model_copy_freezes_the_values_it_is_given() -> None:
    message = AssistantMessage(content=[TextContent(text="a")])
    copied = message.model_copy(update={"content": [TextContent(text="b")], "details": {"x": [1]}})
    assert isinstance(copied.content, FrozenList)
    assert refused(lambda: copied.content.append(TextContent(text="c")))
    assert refused(lambda: copied.model_extra["details"]["x"].append(2))  # type: ignore[index]
    user = UserMessage(content=[TextContent(text="hi")])
    assert refused(lambda: user.content.append(TextContent(text="x")))  # type: ignore[union-attr]
    assert UserMessage(content="plain").content == "plain"


@pytest.mark.parametrize(
    "value",
    [
        AssistantMessage(content=[ToolCall(id="1", name="x", arguments={"a": [1, {"b": 2}]})]),
        ToolResult(content=[TextContent(text="t")], details={"k": [1]}),
    ],
)
def test_frozen_values_still_read_compare_copy_and_serialise_as_lists(value: Any) -> None:
    assert value.content == list(value.content)  # compares equal to a plain list
    assert isinstance(value.content, list)
    assert json.loads(value.model_dump_json())  # pi's JSON, unchanged
    assert type(value).model_validate_json(value.model_dump_json()) == value
    assert pickle.loads(pickle.dumps(value)) == value
    assert copy.deepcopy(value) == value
    joined = value.content + [TextContent(text="more")]  # noqa: RUF005 - list + on a frozen list
    assert type(joined) is list and joined[:-1] == value.content


def test_deep_freeze_reaches_every_level_and_keeps_other_objects() -> None:
    marker = object()
    frozen = deep_freeze({"a": [1, {"b": [2]}], "o": marker, "t": ({"c": 1},)})
    assert isinstance(frozen, FrozenDict) and isinstance(frozen["a"], FrozenList)
    assert refused(lambda: frozen["a"][1]["b"].append(3))
    assert refused(lambda: frozen["t"][0].update(d=2))
    assert frozen["o"] is marker
    assert deep_freeze(frozen) is frozen
    assert frozen == {"a": [1, {"b": [2]}], "o": marker, "t": ({"c": 1},)}


def test_pi_configure_gets_read_only_settings() -> None:
    from pi_host.runtime._config import SessionHostConfig

    config = SessionHostConfig(cwd="/", mode="print", settings={"nag": {"every": [1]}}, flags={"x": True})
    assert config.settings == {"nag": {"every": [1]}}
    assert refused(lambda: config.settings.__setitem__("nag", {}))
    assert refused(lambda: config.settings["nag"]["every"].append(2))
    assert refused(lambda: config.flags.__setitem__("x", False))
    assert config.get_flag("x") is True


def test_a_deep_copy_is_deep_and_stays_read_only() -> None:
    class Box:
        def __init__(self) -> None:
            self.items: list[int] = []

    box = Box()
    frozen = deep_freeze({"box": box, "list": [1]})
    copied = copy.deepcopy(frozen)
    assert copied == {"box": copied["box"], "list": [1]} and copied["box"] is not box
    assert isinstance(copied, FrozenDict) and isinstance(copied["list"], FrozenList)
    assert copy.copy(frozen) is frozen


def test_a_changed_settings_value_is_read_only_too() -> None:
    from pi_host.runtime._plugin_settings import with_section_value

    settings = Settings.model_validate({"nag": {"everyTurns": 5}})
    changed = with_section_value(settings, "nag.everyTurns", 3)
    assert (changed.model_extra or {})["nag"] == {"everyTurns": 3}
    assert refused(lambda: (changed.model_extra or {})["nag"].__setitem__("everyTurns", 1))
    assert (settings.model_extra or {})["nag"] == {"everyTurns": 5}
