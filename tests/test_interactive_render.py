"""The interactive mode's pure parts: rendering, the footer, completion, the tree view."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from rich.text import Text

from pi_host.hookspecs import ToolCallView, ToolRenderer
from pi_host.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, UserMessage
from pi_host.modes._interactive import TreeNode
from pi_host.modes._interactive._commands import flatten_tree
from pi_host.modes._interactive._completion import EditorCompleter, fuzzy_score
from pi_host.modes._interactive._footer import UsageTotals, footer_lines, format_tokens
from pi_host.modes._interactive._render import (
    BashView,
    RenderOptions,
    ToolView,
    ansi_lines,
    markdown_tail,
    render_bash,
    render_diff,
    render_tool,
    stable_markdown_prefix,
)

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def plain(renderable: object, width: int = 60) -> str:
    return "\n".join(ANSI.sub("", line) for line in ansi_lines(renderable, width))  # type: ignore[arg-type]


# -- markdown streaming ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "stable"),
    [
        ("", ""),
        ("one paragraph still growing", ""),
        ("first\n\nsecond", ""),  # "second" may still be growing, but "first" is done ...
        ("first\n\nsecond\n", "first\n\n"),  # ... once the next block's first line is complete
        ("a\n\nb\n\nc", "a\n\n"),
        ("```py\nx = 1\n\ny = 2\n", ""),  # a blank line inside a fence does not end a block
        ("```py\nx = 1\n\ny = 2\n```\n\nafter\n", "```py\nx = 1\n\ny = 2\n```\n\n"),
        ("- item\n\n    continued\n", ""),  # an indented line continues the list item
        ("- item\n\n- next\n", "- item\n\n"),
    ],
)
def test_stable_markdown_prefix(text: str, stable: str) -> None:
    assert text[: stable_markdown_prefix(text)] == stable


def test_ansi_lines_drop_trailing_padding_but_keep_styles() -> None:
    lines = ansi_lines(Text("hi", style="bold"), 40)
    assert lines == ["\x1b[1mhi\x1b[0m"]


# -- tools ------------------------------------------------------------------------------------


def _bash_renderer() -> ToolRenderer:
    """pi-bash's renderer, as its ``pi_register_tool_renderers`` hands it to the host."""
    import pi_bash

    registered: list[ToolRenderer] = []
    pi_bash.pi_register_tool_renderers(registered.append)
    (renderer,) = registered
    return renderer


def test_bash_tool_shows_the_tail_of_its_output() -> None:
    view = ToolView(tool_call_id="1", name="bash", args={"command": "seq 12", "timeout": 5})
    view.set_result(
        [TextContent(text="\n".join(str(i) for i in range(1, 13)))], None, is_error=False, partial=False
    )
    text = plain(render_tool(view, RenderOptions(), _bash_renderer()))
    assert "$ seq 12 (timeout 5s)" in text
    assert "... (7 earlier lines, ctrl+o to expand)" in text
    assert "8" in text and "12" in text and "\n│ 7 " not in text
    expanded = plain(render_tool(view, RenderOptions(expand_tools=True), _bash_renderer()))
    assert "earlier lines" not in expanded and "│ 1 " in expanded


def test_a_tool_renderer_that_raises_is_reported_and_the_default_drawn() -> None:
    def broken(view: ToolCallView) -> None:
        raise RuntimeError("boom")

    view = ToolView(tool_call_id="1", name="weather", args={"city": "Oslo"})
    failures: list[str] = []
    renderer = ToolRenderer(tool="weather", render_call=broken)
    text = plain(render_tool(view, RenderOptions(), renderer, lambda what, exc: failures.append(what)))
    assert "weather" in text and '"city": "Oslo"' in text
    assert failures == ["render_call of the 'weather' tool renderer"]


def test_read_tool_header_has_the_line_range_and_home_is_shortened() -> None:
    home = str(Path.home())
    view = ToolView(
        tool_call_id="1", name="read", args={"path": f"{home}/x/notes.txt", "offset": 10, "limit": 5}
    )
    text = plain(render_tool(view, RenderOptions()))
    assert "read ~/x/notes.txt:10-14" in text


def test_edit_tool_shows_the_diff_from_details() -> None:
    view = ToolView(tool_call_id="1", name="edit", args={"path": "a.py"})
    diff = "  1 keep\n-2 value = 1\n+2 value = 2\n  3 keep"
    view.set_result([TextContent(text="Edited a.py")], {"diff": diff}, is_error=False, partial=False)
    text = plain(render_tool(view, RenderOptions()))
    assert "edit a.py" in text
    assert "-2 value = 1" in text and "+2 value = 2" in text


def test_word_diff_marks_only_the_changed_words() -> None:
    lines = ansi_lines(render_diff("-1 value = 1\n+1 value = 2"), 40)
    assert "\x1b[7" in lines[0] or ";7m" in lines[0]  # reverse video on the change
    assert ANSI.sub("", lines[1]) == "+1 value = 2"


def test_failed_tool_is_red_with_its_message() -> None:
    view = ToolView(tool_call_id="1", name="write", args={"path": "/root/x"})
    view.set_result([TextContent(text="EACCES: permission denied")], None, is_error=True, partial=False)
    lines = ansi_lines(render_tool(view, RenderOptions()), 60)
    assert any("EACCES: permission denied" in ANSI.sub("", line) for line in lines)
    assert "31" in lines[0]  # the red border


def test_unknown_tool_shows_its_arguments_and_output() -> None:
    view = ToolView(tool_call_id="1", name="deploy", args={"env": "staging"})
    view.set_result([TextContent(text="deployed")], None, is_error=False, partial=False)
    text = plain(render_tool(view, RenderOptions()))
    assert "deploy" in text and '"env": "staging"' in text and "deployed" in text


def test_user_bash_status() -> None:
    view = BashView(command="false", running=False, exit_code=1)
    assert "(exit 1)" in plain(render_bash(view, RenderOptions()))
    view = BashView(command="sleep 9", running=False, cancelled=True)
    assert "(cancelled)" in plain(render_bash(view, RenderOptions()))
    view = BashView(command="ls", output="\x1b[31mred\x1b[0m\n", running=True, spinner="*")
    text = plain(render_bash(view, RenderOptions()))
    assert "red" in text and "* Running... (esc to cancel)" in text


# -- footer -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "shown"),
    [(999, "999"), (1234, "1.2k"), (45_600, "46k"), (1_500_000, "1.5M"), (12_000_000, "12M")],
)
def test_format_tokens(count: int, shown: str) -> None:
    assert format_tokens(count) == shown


def test_footer_lines() -> None:
    message = AssistantMessage.model_validate(
        {"usage": {"input": 1500, "output": 200, "cacheRead": 3000, "cost": {"total": 0.0123}}}
    )
    lines = footer_lines(
        80,
        cwd=str(Path.home() / "proj"),
        git_branch="main",
        session_name="refactor",
        totals=UsageTotals.of([UserMessage(content="x"), message]),
        context_tokens_percent=75.25,
        context_window=200_000,
        auto_compaction=True,
        model_id="claude-x",
        provider="anthropic",
        reasoning=True,
        thinking_level="off",
        statuses={"b": "second", "a": "first\nline"},
    )
    text = ["".join(fragment[1] for fragment in line) for line in lines]
    assert text[0] == "~/proj (main) • refactor"
    assert text[1].startswith("↑1.5k ↓200 R3.0k $0.012 75.2%/200k (auto)")
    assert text[1].endswith("claude-x • thinking off") and len(text[1]) == 80
    assert ("class:footer.context-warn", "75.2%/200k (auto)") in lines[1]
    assert text[2] == "first line second"


def test_footer_unknown_context_after_compaction() -> None:
    lines = footer_lines(
        60,
        cwd="/w",
        git_branch=None,
        session_name=None,
        totals=UsageTotals(),
        context_tokens_percent=None,
        context_window=128_000,
        auto_compaction=False,
        model_id=None,
        provider=None,
        reasoning=False,
        thinking_level="off",
    )
    stats = "".join(fragment[1] for fragment in lines[1])
    assert stats.startswith("?/128k") and stats.endswith("no-model")


# -- completion -------------------------------------------------------------------------------


def completions(completer: EditorCompleter, text: str, *, requested: bool = False) -> list[str]:
    event = CompleteEvent(completion_requested=requested)
    return [c.text for c in completer.get_completions(Document(text, len(text)), event)]


@pytest.fixture
def completer(tmp_path: Path) -> EditorCompleter:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("")
    (tmp_path / "README.md").write_text("")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "main.js").write_text("")
    return EditorCompleter(
        cwd=str(tmp_path),
        commands=lambda: [("model", "Switch"), ("compact", "Compact"), ("greet", "plugin")],
        models=lambda: ["anthropic/claude-x", "openai/gpt-y"],
        thinking_levels=lambda: ["off", "low", "high"],
    )


def test_slash_commands_complete_by_prefix_then_fuzzy(completer: EditorCompleter) -> None:
    assert completions(completer, "/") == ["/model", "/compact", "/greet"]
    assert completions(completer, "/co") == ["/compact"]
    assert completions(completer, "/gt") == ["/greet"]


def test_command_arguments_complete(completer: EditorCompleter) -> None:
    assert completions(completer, "/model gpt") == ["openai/gpt-y"]
    assert completions(completer, "/thinking hi") == ["high"]


def test_file_references_search_the_tree_and_skip_dependencies(completer: EditorCompleter) -> None:
    assert completions(completer, "look at @main") == ["@src/main.py "]
    assert "@src/" in completions(completer, "@sr")
    assert "@README.md " in completions(completer, "see @read")


def test_tab_completes_paths(completer: EditorCompleter) -> None:
    assert completions(completer, "cat src/ma", requested=True) == ["src/main.py"]
    assert completions(completer, "cat src/ma") == []  # only on Tab


def test_fuzzy_score_prefers_file_names() -> None:
    by_name = fuzzy_score("main", "src/main.py")
    in_path = fuzzy_score("main", "main/other.py")
    scattered = fuzzy_score("mn", "src/main.py")
    assert by_name is not None and in_path is not None and scattered is not None
    assert by_name > in_path > scattered
    assert fuzzy_score("zz", "src/main.py") is None


# -- /tree ------------------------------------------------------------------------------------


def _message_node(entry_id: str, message: object, *children: TreeNode, label: str | None = None) -> TreeNode:
    return TreeNode(
        entry={"id": entry_id, "type": "message", "message": message}, children=list(children), label=label
    )


def test_flatten_tree_indents_branches_and_marks_the_active_path() -> None:
    call = AssistantMessage(content=[ToolCall(id="c1", name="bash", arguments={"command": "ls"})])
    result = {"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "content": []}
    root = _message_node(
        "u1",
        UserMessage(content="first question"),
        _message_node(
            "a1",
            call,
            _message_node(
                "r1", result, _message_node("a2", AssistantMessage(content=[TextContent(text="done")]))
            ),
            _message_node(
                "u2",
                UserMessage(content="other\nbranch"),
                label="try",
            ),
        ),
    )
    rows = flatten_tree([root], leaf_id="a2")
    assert [row[0] for row in rows] == ["u1", "a1", "r1", "a2", "u2"]
    lines = [row[1] for row in rows]
    assert lines[0] == "• user: first question"
    assert lines[1] == "• assistant: → bash ls"  # a turn of tool calls only is named by them
    assert lines[2] == "├⊟ • [bash] ls"  # a branch that can fold (Ctrl+←) says so
    assert lines[3] == "│  • assistant: done"
    assert lines[4] == "└─ [try] user: other branch"
    # pi's filter modes.
    assert [row[1] for row in flatten_tree([root], "a2", "no-tools")][2] == "├─ • assistant: done"
    assert [row[0] for row in flatten_tree([root], "a2", "user-only")] == ["u1", "u2"]
    assert flatten_tree([root], "a2", "labeled-only") == [("u2", "[try] user: other branch")]


def test_tree_view_folds_and_jumps_between_branch_segments() -> None:
    from pi_host.modes._interactive._tree import TreeView

    # u1 ─ a1 ┬ u2 ─ a2 (current)     u3 is a second branch from a1
    #         └ u3 ─ a3
    root = _message_node(
        "u1",
        UserMessage(content="q1"),
        _message_node(
            "a1",
            AssistantMessage(content=[TextContent(text="r1")]),
            _message_node(
                "u2",
                UserMessage(content="q2"),
                _message_node("a2", AssistantMessage(content=[TextContent(text="r2")])),
            ),
            _message_node(
                "u3",
                UserMessage(content="q3"),
                _message_node("a3", AssistantMessage(content=[TextContent(text="r3")])),
            ),
        ),
    )
    view = TreeView([root], "a2")
    assert view.selected_id == "a2"
    view.fold_or_up()  # a2 starts no segment: up to the start of its segment
    assert view.selected_id == "u2"
    view.fold_or_up()  # u2 starts one: it folds
    assert [row[1] for row in view.rows()] == [
        "• user: q1",
        "• assistant: r1",
        "├⊞ • user: q2",
        "└⊟ user: q3",
        "   assistant: r3",
    ]
    view.fold_or_up()  # folded already: up to the root
    assert view.selected_id == "u1"
    view.unfold_or_down()  # down to the first branch
    assert view.selected_id == "u2"
    view.unfold_or_down()
    assert "a2" in [row[0] for row in view.rows()]
    view.unfold_or_down()  # no branch below: the end of the segment
    assert view.selected_id == "a2"
    # A new filter unfolds everything; the selection stays on its entry or the nearest shown ancestor.
    view.fold_or_up()
    view.fold_or_up()
    view.set_mode("user-only")
    assert view.folded == set() and view.selected_id == "u2"
    view.set_mode("user-only", toggle=True)
    assert view.mode == "default"
    view.search("q3 user")
    assert [row[0] for row in view.rows()] == ["u3"] and view.status() == "(1/1)"


def test_flatten_tree_reads_pi_entries_by_camel_case_keys() -> None:
    compaction = TreeNode(entry={"id": "c", "type": "compaction", "tokensBefore": 45_600, "summary": "s"})
    thinking = TreeNode(
        entry={"id": "t", "type": "thinking_level_change", "thinkingLevel": "high"}, children=[compaction]
    )
    label = TreeNode(entry={"id": "l", "type": "label", "targetId": "t"}, children=[thinking])
    assert [row[1] for row in flatten_tree([label], None, "all")] == [
        "[label: (cleared)]",
        "[thinking: high]",
        "[compaction: 46k tokens]",
    ]
    # The default view leaves settings and bookkeeping out, as pi's.
    assert [row[1] for row in flatten_tree([label], None)] == ["[compaction: 46k tokens]"]


def test_thinking_is_hidden_behind_a_label() -> None:
    from pi_host.modes._interactive._app import _AssistantItem

    item = _AssistantItem(
        AssistantMessage(content=[ThinkingContent(thinking="secret plan"), TextContent(text="hi")])
    )
    item.done = True
    shown = plain(item.renderable(RenderOptions()))
    hidden = plain(item.renderable(RenderOptions(hide_thinking=True)))
    assert "secret plan" in shown
    assert "secret plan" not in hidden and "Thinking..." in hidden and "hi" in hidden


def test_markdown_tail_reopens_an_open_fence() -> None:
    text = "intro\n\n```python\n" + "\n".join(f"line {i}" for i in range(100))
    tail = markdown_tail(text, 3)
    assert tail == "```python\nline 97\nline 98\nline 99"
    closed = "```\ncode\n```\n" + "\n".join(f"p{i}" for i in range(10))
    assert markdown_tail(closed, 2) == "p8\np9"
    assert markdown_tail("short", 5) == "short"


def test_a_long_streaming_block_renders_only_its_tail() -> None:
    from pi_host.modes._interactive._app import _AssistantItem

    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(2000))
    item = _AssistantItem(AssistantMessage(content=[TextContent(text=code)]))
    live = plain(item.renderable(RenderOptions(live_max_lines=20)), 80)
    assert "x1999 = 1999" in live and "x0 = 0" not in live
    assert len(live.split("\n")) <= 22
    item.done = True
    assert "x0 = 0" in plain(item.renderable(RenderOptions(live_max_lines=20)), 80)
