"""Session lifecycle on a live AgentSession: pi's ``agent-session-runtime`` and the model and
thinking parts of ``agent-session-model-extension`` (notes §3.17)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_host import Cancel, TextContent, hookimpl
from pi_host.hookspecs import BranchSummary, TreeSummaryResult
from pi_host.messages import AssistantMessage, UserMessage
from pi_host.providers import faux_assistant_message
from pi_host.runtime import AgentSession, SessionError
from pi_host.session import ModelChangeEntry, SessionManager, ThinkingLevelChangeEntry
from tests.test_runtime_prompt import Rig, open_session, read_session_file, wait_until


class SessionHooks:
    """Records every session-lifecycle hook; cancels what it is told to."""

    def __init__(self, cancel: set[str] | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.cancel = cancel or set()

    @hookimpl
    def pi_session_start(self, reason: str, previous_session_file: str | None, ctx: Any) -> None:
        self.calls.append(("start", reason, previous_session_file, ctx.session_manager.session_id))

    @hookimpl
    def pi_session_shutdown(self, reason: str, target_session_file: str | None, ctx: Any) -> None:
        self.calls.append(("shutdown", reason, target_session_file, ctx.session_manager.session_id))

    @hookimpl
    def pi_session_before_switch(self, reason: str, target_session_file: str | None) -> Any:
        self.calls.append(("before_switch", reason, target_session_file))
        return Cancel(reason="no") if "switch" in self.cancel else None

    @hookimpl
    def pi_session_before_fork(self, entry_id: str, position: str) -> Any:
        self.calls.append(("before_fork", entry_id, position))
        return Cancel() if "fork" in self.cancel else None

    @hookimpl
    def pi_session_before_tree(self, preparation: Any) -> Any:
        self.calls.append(("before_tree", preparation.target_id, preparation.old_leaf_id))
        if "tree" in self.cancel:
            return Cancel()
        if preparation.user_wants_summary:
            return TreeSummaryResult(summary=BranchSummary(summary="left the red branch", details={"n": 1}))
        return None

    @hookimpl
    def pi_session_tree(
        self, new_leaf_id: str | None, old_leaf_id: str | None, summary_entry: Any, from_extension: bool
    ) -> None:
        summary = None if summary_entry is None else summary_entry.summary
        self.calls.append(("tree", new_leaf_id, old_leaf_id, summary, from_extension))

    @hookimpl
    def pi_model_select(self, model: Any, previous_model: Any, source: str) -> None:
        previous = None if previous_model is None else previous_model.id
        self.calls.append(("model_select", model.id, previous, source))

    @hookimpl
    def pi_thinking_level_select(self, level: str, previous_level: str) -> None:
        self.calls.append(("thinking_level_select", level, previous_level))

    def names(self) -> list[str]:
        return [call[0] for call in self.calls]


async def two_turns(rig: Rig) -> None:
    rig.faux.append_responses([faux_assistant_message("one"), faux_assistant_message("two")])
    await rig.session.prompt("first")
    await rig.session.prompt("second")


def level(session: AgentSession) -> str:
    """The session's thinking level (a call, so type checkers do not narrow it between asserts)."""
    return session.thinking_level


def user_entry_ids(manager: SessionManager) -> list[str]:
    return [
        e.id
        for e in manager.get_branch()
        if e.type == "message" and isinstance(getattr(e, "message", None), UserMessage)
    ]


# -- message_end replacement -------------------------------------------------------------------


class Redact:
    @hookimpl
    def pi_message_end(self, message: Any) -> Any:
        if isinstance(message, AssistantMessage):
            return message.model_copy(update={"content": [TextContent(text="[redacted]")]})
        return None


async def test_message_end_replacement_is_what_state_subscribers_and_file_get(tmp_path: Path) -> None:
    steps = [faux_assistant_message("secret sk-live-1"), faux_assistant_message("ok")]
    async with open_session(tmp_path, steps, plugins=[Redact()], persist=True) as rig:
        await rig.session.prompt("hi")
        assert rig.assistant_texts() == ["[redacted]"]
        (end,) = [e for e in rig.events if e.type == "message_end" and e.message.role == "assistant"]
        assert end.message.content == [TextContent(text="[redacted]")]
        stored = read_session_file(rig.session.session_manager).build_session_context().messages
        assert [m.content for m in stored if isinstance(m, AssistantMessage)] == [
            [TextContent(text="[redacted]")]
        ]
        await rig.session.prompt("again")
        assert "assistant:[redacted]" in rig.request_texts(1)


# -- new / resume ----------------------------------------------------------------------------------


async def test_new_session_fires_before_switch_shutdown_start(tmp_path: Path) -> None:
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        await two_turns(rig)
        old_id = rig.session.session_manager.session_id
        old_file = str(rig.session.session_manager.session_file)
        hooks.calls.clear()
        assert await rig.session.new_session() is False
        new_id = rig.session.session_manager.session_id
        new_file = str(rig.session.session_manager.session_file)
        assert new_id != old_id and new_file != old_file and new_id in new_file
        # As in pi, shutdown names the file the next session goes to, while the old one is
        # still the session that hooks see.
        assert hooks.calls == [
            ("before_switch", "new", None),
            ("shutdown", "new", new_file, old_id),
            ("start", "new", old_file, new_id),
        ]
        assert rig.session.messages == []
        entries = rig.session.session_manager.get_entries()
        assert [e.type for e in entries] == ["model_change", "thinking_level_change"]


async def test_new_session_cancelled_keeps_everything(tmp_path: Path) -> None:
    hooks = SessionHooks(cancel={"switch"})
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        await two_turns(rig)
        file = rig.session.session_manager.session_file
        assert file is not None
        before = file.read_bytes()
        hooks.calls.clear()
        assert await rig.session.new_session() is True
        assert hooks.calls == [("before_switch", "new", None)]
        assert rig.session.session_manager.session_file == file
        assert file.read_bytes() == before
        assert len(rig.session.messages) == 4


async def test_resume_fires_hooks_and_restores_model_and_thinking(tmp_path: Path) -> None:
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        session = rig.session
        assert await session.set_model(rig.model("faux-2")) is True
        session.set_thinking_level("high")
        await two_turns(rig)
        first_file = str(session.session_manager.session_file)
        first_id = session.session_manager.session_id
        await session.new_session()
        assert await session.set_model(rig.model("faux-plain")) is True
        assert level(session) == "off"
        rig.faux.append_responses([faux_assistant_message("other")])
        await session.prompt("elsewhere")
        second_id = session.session_manager.session_id
        hooks.calls.clear()

        assert await session.switch_session(first_file) is False
        assert hooks.calls == [
            ("before_switch", "resume", first_file),
            ("shutdown", "resume", first_file, second_id),
            ("start", "resume", hooks.calls[2][2], first_id),
            # pi-host's hookspec promises source "restore" when resuming changes the model.
            ("model_select", "faux-2", "faux-plain", "restore"),
        ]
        assert [_text(m) for m in session.messages] == ["first", "one", "second", "two"]
        # pi rebuilds the runtime from the destination file: its model and thinking level.
        assert session.model is not None and session.model.id == "faux-2"
        assert level(session) == "high"


async def test_resume_cancelled(tmp_path: Path) -> None:
    hooks = SessionHooks(cancel={"switch"})
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        await two_turns(rig)
        file = rig.session.session_manager.session_file
        hooks.calls.clear()
        assert await rig.session.switch_session(str(tmp_path / "elsewhere.jsonl")) is True
        assert hooks.calls == [("before_switch", "resume", str(tmp_path / "elsewhere.jsonl"))]
        assert rig.session.session_manager.session_file == file


def _text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


# -- fork / clone ----------------------------------------------------------------------------------


async def test_fork_before_a_user_message(tmp_path: Path) -> None:
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        await two_turns(rig)
        manager = rig.session.session_manager
        old_file, old_id = str(manager.session_file), manager.session_id
        second = user_entry_ids(manager)[1]
        hooks.calls.clear()
        assert await rig.session.fork(second) is False
        new_id = manager.session_id
        assert new_id != old_id
        assert hooks.calls == [
            ("before_fork", second, "before"),
            ("shutdown", "fork", str(manager.session_file), old_id),
            ("start", "fork", old_file, new_id),
        ]
        assert [_text(m) for m in rig.session.messages] == ["first", "one"]
        forked = read_session_file(manager)
        assert forked.header.parent_session == old_file
        assert [_text(m) for m in forked.build_session_context().messages] == ["first", "one"]


async def test_fork_cancelled(tmp_path: Path) -> None:
    hooks = SessionHooks(cancel={"fork"})
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        await two_turns(rig)
        manager = rig.session.session_manager
        file = manager.session_file
        second = user_entry_ids(manager)[1]
        hooks.calls.clear()
        assert await rig.session.fork(second) is True
        assert hooks.calls == [("before_fork", second, "before")]
        assert manager.session_file == file
        assert len(rig.session.messages) == 4


async def test_fork_from_the_first_message_starts_an_empty_child(tmp_path: Path) -> None:
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        await two_turns(rig)
        manager = rig.session.session_manager
        old_file = str(manager.session_file)
        hooks.calls.clear()
        assert await rig.session.fork(user_entry_ids(manager)[0]) is False
        assert rig.session.messages == []
        assert manager.header.parent_session == old_file
        assert ("shutdown", "fork", str(manager.session_file)) == hooks.calls[1][:3]


@pytest.mark.parametrize("persist", [True, False])
async def test_clone_duplicates_the_active_branch(tmp_path: Path, persist: bool) -> None:
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks], persist=persist) as rig:
        await two_turns(rig)
        manager = rig.session.session_manager
        before = [_text(m) for m in rig.session.messages]
        leaf = manager.leaf_id
        assert leaf is not None
        old_id = manager.session_id
        hooks.calls.clear()
        assert await rig.session.fork(leaf, position="at") is False
        assert hooks.calls[0] == ("before_fork", leaf, "at")
        # The clone's file, or None for a session kept in memory (pi's undefined).
        target = str(manager.session_file) if persist else None
        assert hooks.calls[1] == ("shutdown", "fork", target, old_id)
        assert manager.session_id != old_id
        assert [_text(m) for m in rig.session.messages] == before
        if persist:
            clone = read_session_file(manager)
            assert [_text(m) for m in clone.build_session_context().messages] == before
        else:
            assert manager.session_file is None


async def test_fork_with_an_invalid_entry_id_raises(tmp_path: Path) -> None:
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        await two_turns(rig)
        manager = rig.session.session_manager
        assistant = next(
            e.id for e in manager.get_branch() if e.type == "message" and e.id not in user_entry_ids(manager)
        )
        hooks.calls.clear()
        with pytest.raises(SessionError, match="Entry nope not found"):
            await rig.session.fork("nope")
        with pytest.raises(SessionError, match="Can only fork from a user message"):
            await rig.session.fork(assistant)
        # pi asks session_before_fork first and validates after; pi-host refuses a bad id
        # before asking plugins, so they never see a fork that cannot happen.
        assert hooks.calls == []
        with pytest.raises(SessionError, match="Entry nope not found"):
            await rig.session.navigate_tree("nope")


# -- tree navigation -------------------------------------------------------------------------------


async def test_navigate_tree_with_a_plugin_summary(tmp_path: Path) -> None:
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        await two_turns(rig)
        manager = rig.session.session_manager
        second = user_entry_ids(manager)[1]
        old_leaf = manager.leaf_id
        hooks.calls.clear()
        outcome = await rig.session.navigate_tree(second, summarize=True)
        assert outcome.cancelled is False
        assert outcome.editor_text == "second"
        summary_entry = manager.get_leaf_entry()
        assert summary_entry is not None and summary_entry.type == "branch_summary"
        assert hooks.calls == [
            ("before_tree", second, old_leaf),
            ("tree", summary_entry.id, old_leaf, "left the red branch", True),
        ]
        assert [m.role for m in rig.session.messages] == ["user", "assistant", "branchSummary"]
        stored = read_session_file(manager).get_entry(summary_entry.id)
        assert stored is not None and stored.to_json_dict()["fromHook"] is True


async def test_navigate_tree_cancelled(tmp_path: Path) -> None:
    hooks = SessionHooks(cancel={"tree"})
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        await two_turns(rig)
        manager = rig.session.session_manager
        leaf = manager.leaf_id
        first = user_entry_ids(manager)[0]
        assert (await rig.session.navigate_tree(first)).cancelled is True
        assert manager.leaf_id == leaf
        assert len(rig.session.messages) == 4


async def test_navigate_to_a_user_message_without_summary_branches_before_it(tmp_path: Path) -> None:
    async with open_session(tmp_path, persist=True) as rig:
        await two_turns(rig)
        manager = rig.session.session_manager
        first = user_entry_ids(manager)[0]
        entry = manager.get_entry(first)
        assert entry is not None
        outcome = await rig.session.navigate_tree(first)
        assert outcome == type(outcome)(cancelled=False, editor_text="first")
        # The leaf moves to the user message's parent (here the initial thinking_level_change).
        assert manager.leaf_id == entry.parent_id
        assert rig.session.messages == []


# -- model and thinking level ------------------------------------------------------------------------


async def test_set_model_persists_and_fires_model_select_once(tmp_path: Path) -> None:
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        await two_turns(rig)
        hooks.calls.clear()
        faux2 = rig.model("faux-2")
        assert faux2 is not None
        assert await rig.session.set_model(faux2) is True
        assert await rig.session.set_model(faux2) is True  # same model: no second event
        # faux-1 has no reasoning (level "off"), so faux-2 gets the default level, as in pi.
        assert hooks.calls == [
            ("thinking_level_select", "medium", "off"),
            ("model_select", "faux-2", "faux-1", "set"),
        ]
        changes = [
            (e.provider, e.model_id)
            for e in read_session_file(rig.session.session_manager).get_entries()
            if isinstance(e, ModelChangeEntry)
        ]
        assert changes[0] == ("faux", "faux-1")
        assert changes[-1] == ("faux", "faux-2")
        rig.faux.append_responses([faux_assistant_message("on two")])
        await rig.session.prompt("now")
        assert rig.faux.requests[-1].model.id == "faux-2"


async def test_model_switch_clamps_thinking_before_model_select(tmp_path: Path) -> None:
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks]) as rig:
        session = rig.session
        await session.set_model(rig.model("faux-2"))
        session.set_thinking_level("xhigh")  # faux-2 maps xhigh: kept
        assert level(session) == "xhigh"
        # set_thinking_level does not wait for its observers (pi's `void emit`): let it land.
        await wait_until(lambda: ("thinking_level_select", "xhigh", "medium") in hooks.calls)
        hooks.calls.clear()
        await session.set_model(rig.model("faux-plain"))
        assert level(session) == "off"
        assert hooks.calls == [
            ("thinking_level_select", "off", "xhigh"),
            ("model_select", "faux-plain", "faux-2", "set"),
        ]
        assert [e.level for e in rig.events if e.type == "thinking_level_changed"][-1] == "off"


async def test_thinking_level_is_clamped_to_the_model(tmp_path: Path) -> None:
    async with open_session(tmp_path, persist=True) as rig:
        session = rig.session
        await session.set_model(rig.model("faux-plain"))
        session.set_thinking_level("high")  # a model without reasoning only has "off"
        assert level(session) == "off"
        await session.set_model(rig.model("faux-1").model_copy(update={"reasoning": True}))
        # From a model without reasoning pi carries over the default level, not the forced "off".
        assert level(session) == "medium"
        session.set_thinking_level("xhigh")  # no xhigh in the map: the next level down
        assert level(session) == "high"
        await two_turns(rig)
        levels = [
            e.thinking_level
            for e in read_session_file(session.session_manager).get_entries()
            if isinstance(e, ThinkingLevelChangeEntry)
        ]
        assert levels[-1] == "high"


async def test_set_model_without_credentials_returns_false(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks]) as rig:
        keyed = next(m for m in rig.session.model_resolver.all_models() if m.provider == "anthropic")
        hooks.calls.clear()
        assert await rig.session.set_model(keyed) is False
        assert rig.session.model is not None and rig.session.model.id == "faux-1"
        assert hooks.calls == []


# -- start and reload ----------------------------------------------------------------------------------


async def test_reload_reads_settings_skills_templates_and_context_files_again(tmp_path: Path) -> None:
    options = {"no_context_files": False}
    async with open_session(tmp_path, options=options) as rig:
        session = rig.session
        agent, project = tmp_path / "agent", tmp_path / "project"
        assert session.settings.steering_mode == "one-at-a-time"
        (agent / "settings.json").write_text('{"steeringMode": "all"}')
        skill = agent / "skills" / "greet"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: greet\ndescription: Say hello nicely.\n---\nHello.\n")
        (agent / "prompts").mkdir()
        (agent / "prompts" / "review.md").write_text("Review the code.\n")
        (project / "AGENTS.md").write_text("Always answer in haiku.\n")
        await session.reload()
        assert session.settings.steering_mode == "all"
        assert session.agent.steering_mode == "all"
        assert [s.name for s in session.skills] == ["greet"]
        assert [t.name for t in session.prompt_templates] == ["review"]
        assert "Always answer in haiku." in session.system_prompt


async def test_start_on_bind_and_reload_order(tmp_path: Path) -> None:
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks], start=False) as rig:
        assert hooks.calls == []
        await rig.session.start()
        sid = rig.session.session_manager.session_id
        assert hooks.calls == [("start", "startup", None, sid)]
        await rig.session.reload()
        assert hooks.calls[1:] == [("shutdown", "reload", None, sid), ("start", "reload", None, sid)]
        assert rig.session.active_tool_names == ["echo"]


# -- where sessions live -------------------------------------------------------------------------------


async def test_sessions_and_the_resume_cache_live_under_the_given_agent_dir(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # Regression: with SessionOptions.agent_dir set, the default session directory and the
    # resume cache still came from PI_HOST_DIR (or ~/.pi-host), so embedding
    # programs and tests wrote outside the agent directory they named. pi's SDK derives the
    # session directory from its agentDir option.
    elsewhere = tmp_path / "environment-agent-dir"
    monkeypatch.setenv("PI_HOST_DIR", str(elsewhere))
    monkeypatch.delenv("PI_HOST_SESSION_DIR", raising=False)
    async with open_session(tmp_path, persist=True, options={"session_dir": None}) as rig:
        await two_turns(rig)
        manager = rig.session.session_manager
        manager.append_compaction("summary", user_entry_ids(manager)[1], 100)  # writes a checkpoint
        file = manager.session_file
        assert file is not None
    assert file.parent.parent == tmp_path / "agent" / "sessions"
    assert file.parent.name.startswith("--") and file.parent.name.endswith("project--")
    assert list((tmp_path / "agent" / "cache" / "sessions").iterdir())
    assert not elsewhere.exists()


async def test_tree_label_goes_on_the_summary_or_else_on_the_target(tmp_path: Path) -> None:
    hooks = SessionHooks()
    async with open_session(tmp_path, plugins=[hooks], persist=True) as rig:
        await two_turns(rig)
        manager = rig.session.session_manager
        first, second = user_entry_ids(manager)
        # Regression: without a summary the label was dropped; pi puts it on the target entry.
        await rig.session.navigate_tree(first, label="start over")
        assert manager.get_label(first) == "start over"
        rig.faux.append_responses([faux_assistant_message("again")])
        await rig.session.prompt("retry")
        await rig.session.navigate_tree(second, summarize=True, label="summarised")
        leaf = manager.get_leaf_entry()
        assert leaf is not None and leaf.type == "label"
        summary = manager.get_entry(leaf.parent_id or "")
        assert summary is not None and summary.type == "branch_summary"
        assert manager.get_label(summary.id) == "summarised"
        assert manager.get_label(second) is None
        assert read_session_file(manager).get_label(first) == "start over"
