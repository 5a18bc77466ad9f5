"""A resumed session keeps its messages, not the entries they were read from."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from pi_host.messages import AssistantMessage, TextContent, UserMessage
from pi_host.session import SessionManager


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))


def _write_session(path: Path, turns: int) -> None:
    manager = SessionManager.open(path)
    for turn in range(turns):
        manager.append_message(UserMessage(content=f"question {turn}", timestamp=turn))
        manager.append_message(
            AssistantMessage(
                content=[TextContent(text=f"answer {turn}")],
                api="anthropic-messages",
                provider="anthropic",
                model="claude-sonnet-4-5",
                timestamp=turn,
            )
        )


def test_resumed_entries_are_released_and_read_again_on_request(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    _write_session(path, 3)
    manager = SessionManager.open(path)
    leaf_id = manager.leaf_id
    assert leaf_id is not None
    context = manager.build_session_context()
    assert [m.role for m in context.messages] == ["user", "assistant"] * 3
    leaf = manager.get_leaf_entry()
    assert leaf is not None and leaf.id == leaf_id
    held = weakref.ref(leaf)
    first = leaf.to_json()
    del leaf
    gc.collect()
    # Nothing but the caller held the entry: the index let it go, its message lives on.
    assert held() is None
    assert context.messages[-1].content[0].text == "answer 2"  # type: ignore[union-attr]
    again = manager.get_leaf_entry()
    assert again is not None and again.to_json() == first
    assert [entry.id for entry in manager.get_branch()][-1] == leaf_id
