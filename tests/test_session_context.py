"""Context resolution: pi's rules, and the lazy resume giving exactly the full-parse answer."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_host.messages import (
    AssistantMessage,
    BashExecutionMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_host.session import (
    CompactionEntry,
    ModelRef,
    SessionContext,
    SessionEntry,
    SessionManager,
    build_session_context,
    parse_entry,
)
from tests.pi_reference import require_pi_package

DATA = Path(__file__).parent / "data" / "session"


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))


def all_entries(file: Path) -> list[SessionEntry]:
    """Every entry, parsed line by line: the reference the lazy reader must agree with."""
    return [parse_entry(line) for line in file.read_text("utf-8").split("\n")[1:-1]]


def random_session(rng: random.Random, directory: Path, steps: int) -> SessionManager:
    """A session grown by random appends, branches, compactions and tree moves."""
    manager = SessionManager.create("/w", directory, cache_dir=directory / "cache")
    manager.append_model_change("anthropic", "m0")
    manager.append_thinking_level_change("low")
    calls = 0
    for step in range(steps):
        ids = [entry.id for entry in manager.get_branch()]
        roll = rng.random()
        if roll < 0.25:
            manager.append_message(UserMessage(content=f"user {step}", timestamp=step))
        elif roll < 0.45:
            calls += 1
            manager.append_message(
                AssistantMessage(
                    content=[TextContent(text=f"reply {step}"), ToolCall(id=f"c{calls}", name="read")],
                    provider=rng.choice(["anthropic", "openai"]),
                    model=f"m{step}",
                    timestamp=step,
                )
            )
        elif roll < 0.55:
            manager.append_message(
                ToolResultMessage(tool_call_id=f"c{calls}", tool_name="read", timestamp=step)
            )
        elif roll < 0.6:
            manager.append_message(BashExecutionMessage(command="ls", timestamp=step))
        elif roll < 0.64 and ids:
            kept = rng.choice(ids) if rng.random() < 0.9 else "not-an-entry"
            manager.append_compaction(f"summary {step}", kept, step)
        elif roll < 0.67:
            manager.append_thinking_level_change(rng.choice(["off", "low", "high"]))
        elif roll < 0.7:
            manager.append_model_change("p", f"model {step}")
        elif roll < 0.73:
            manager.append_custom_message_entry("note", f"note {step}", rng.random() < 0.5)
        elif roll < 0.76:
            manager.append_custom_entry("state", {"step": step})
        elif roll < 0.79 and ids:
            manager.append_label_change(rng.choice(ids), rng.choice([None, f"label {step}"]))
        elif roll < 0.81:
            manager.append_session_info(f"name {step}")
        elif roll < 0.9:
            everything = manager.get_entries()
            if everything:
                manager.branch(rng.choice(everything).id)
        elif roll < 0.93:
            everything = manager.get_entries()
            target = rng.choice(everything).id if everything and rng.random() < 0.8 else None
            manager.branch_with_summary(target, rng.choice(["", f"summary of branch {step}"]))
        elif roll < 0.94:
            manager.reset_leaf()
        else:
            manager.append_message(UserMessage(content=f"user {step}", timestamp=step))
    manager.append_message(AssistantMessage(content=[TextContent(text="end")], timestamp=steps))
    return manager


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 150))
def test_lazy_resume_equals_full_parse_on_random_trees(tmp_path: Path, seed: int, steps: int) -> None:
    directory = tmp_path / f"s{seed}-{steps}"
    manager = random_session(random.Random(seed), directory, steps)
    file = manager.session_file
    assert file is not None
    entries = all_entries(file)
    expected = build_session_context(entries)
    assert manager.build_session_context() == expected  # the manager that wrote it
    for cache in (False, directory / "cache", directory / "cache"):  # none, then cold, then warm
        lazy = SessionManager.open(file, cache_dir=cache)
        assert lazy.build_session_context() == expected
        assert lazy.warnings == []
    shutil.rmtree(directory / "cache", ignore_errors=True)
    rng = random.Random(seed)
    lazy = SessionManager.open(file, cache_dir=directory / "cache")
    for target in rng.sample(entries, min(8, len(entries))):
        lazy.branch(target.id)
        assert lazy.build_session_context() == build_session_context(entries, target.id), target.id


def test_leaf_rules() -> None:
    assert build_session_context([], None) == SessionContext()
    assert build_session_context([]) == SessionContext()
    entries = all_entries(DATA / "pi073_session.jsonl")
    assert build_session_context(entries, None).messages == []
    last = build_session_context(entries)
    assert build_session_context(entries, "unknown-id") == last
    assert build_session_context(entries, entries[-1].id) == last
    assert last.model == ModelRef("anthropic", "claude-sonnet-4-5")
    assert (last.thinking_level, last.has_thinking_entry) == ("off", False)  # the root summary's branch


def long_session(directory: Path, entries: int, cache: Path | Literal[False]) -> SessionManager:
    manager = SessionManager.create("/w", directory, cache_dir=cache)
    manager.append_model_change("anthropic", "claude")
    manager.append_thinking_level_change("high")  # pi records it once, at the root
    kept = ""
    for n in range(entries):
        if n % 2 == 0:
            entry_id = manager.append_message(UserMessage(content=f"question {n} " + "x" * 200, timestamp=n))
        else:
            entry_id = manager.append_message(
                AssistantMessage(content=[TextContent(text=f"answer {n}")], timestamp=n)
            )
        if n == entries - 30:
            kept = entry_id
    manager.append_compaction("what happened", kept, 100_000)
    for n in range(10):
        manager.append_message(UserMessage(content=f"after {n}", timestamp=entries + n))
    return manager


def scribble(file: Path, first_line: int, last_line: int) -> None:
    """Overwrite lines with junk of the same length: a reader that touches them will notice."""
    lines = file.read_bytes().split(b"\n")
    for index in range(first_line, last_line):
        lines[index] = b"#" * len(lines[index])
    file.write_bytes(b"\n".join(lines))


def test_a_warm_resume_reads_only_the_branch_since_the_compaction(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    writer = long_session(tmp_path, 3000, cache)
    file = writer.session_file
    assert file is not None
    expected = build_session_context(all_entries(file))
    assert expected.thinking_level == "high" and len(expected.messages) == 1 + 30 + 10
    # The compaction was appended by pi-host, which recorded the settings in force there.
    scribble(file, 10, 2400)  # all but the last block read
    resumed = SessionManager.open(file, cache_dir=cache)
    assert resumed.build_session_context() == expected
    assert resumed.warnings == []  # it never read the scribbled lines
    # Without the checkpoint the walk to the root crosses them and notices.
    uncached = SessionManager.open(file, cache_dir=False)
    assert uncached.build_session_context() != expected
    assert uncached.warnings


def test_the_first_resume_of_a_foreign_file_fills_the_resume_cache(tmp_path: Path) -> None:
    long_session(tmp_path / "write", 2000, False)  # nothing cached, as if pi wrote it
    (file,) = (tmp_path / "write").glob("*.jsonl")
    expected = build_session_context(all_entries(file))
    cache = tmp_path / "cache"
    assert SessionManager.open(file, cache_dir=cache).build_session_context() == expected
    assert list(cache.iterdir())  # the walk saved what it learned
    scribble(file, 10, 1400)
    resumed = SessionManager.open(file, cache_dir=cache)
    assert resumed.build_session_context() == expected and resumed.warnings == []


def test_a_stale_or_broken_cache_is_ignored(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    writer = long_session(tmp_path, 300, cache)
    file = writer.session_file
    assert file is not None
    expected = build_session_context(all_entries(file))
    (cache_file,) = cache.iterdir()
    cache_file.write_text("{not json", "utf-8")
    assert SessionManager.open(file, cache_dir=cache).build_session_context() == expected
    data = json.loads(cache_file.read_text("utf-8"))  # rewritten by the walk
    key = next(iter(data["checkpoints"]))
    entry_id = key.split(":")[0]
    # Another file with the same compaction id but different content does not match the key.
    text = file.read_text("utf-8").replace('"what happened"', '"something else"')
    other = tmp_path / "other.jsonl"
    other.write_text(text, "utf-8")
    data["checkpoints"][key] = {"thinkingLevel": "bogus", "model": None}
    cache_file.write_text(json.dumps(data), "utf-8")
    context = SessionManager.open(other, cache_dir=cache).build_session_context()
    assert context.thinking_level == "high"
    assert isinstance(SessionManager.open(other).get_entry(entry_id), CompactionEntry)


def test_new_ids_avoid_ids_in_lines_not_yet_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = long_session(tmp_path, 2000, False)
    file = writer.session_file
    assert file is not None
    early = all_entries(file)[5].id
    manager = SessionManager.open(file, cache_dir=False)
    manager.build_session_context()
    candidates = iter(
        [uuid.UUID(early + "0" * 24), uuid.UUID(early + "0" * 24), uuid.UUID("12345678" + "0" * 24)]
    )
    monkeypatch.setattr("pi_host.session._migrate.uuid.uuid4", lambda: next(candidates))
    assert manager.append_message(UserMessage(content="new")) == "12345678"


def pi_view(file: Path) -> dict[str, Any]:
    session_manager = require_pi_package() / "dist/core/session-manager.js"
    done = subprocess.run(
        ["node", str(DATA / "pi_view.mjs"), str(session_manager), str(file)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    view: dict[str, Any] = json.loads(done.stdout)
    return view


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_pi_agrees_on_random_trees(tmp_path: Path, seed: int) -> None:
    manager = random_session(random.Random(seed), tmp_path, 120)
    file = manager.session_file
    assert file is not None
    view = pi_view(file)
    lazy = SessionManager.open(file)
    assert lazy.leaf_id == view["leafId"]
    assert lazy.session_name == view["sessionName"]
    for key, context in view["contexts"].items():
        if key == "null":
            lazy.reset_leaf()
        else:
            lazy.branch(key)
        ours = lazy.build_session_context()
        model = ours.model
        assert {
            "messages": [message.to_json_dict() for message in ours.messages],
            "thinkingLevel": ours.thinking_level,
            "model": {"provider": model.provider, "modelId": model.model_id} if model else None,
        } == context, key


def test_the_ids_gathered_for_the_first_append_are_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    writer = long_session(tmp_path, 2000, cache)
    file = writer.session_file
    assert file is not None
    early = all_entries(file)[5].id
    first = SessionManager.open(file, cache_dir=cache)
    first.build_session_context()
    first.append_message(UserMessage(content="gathers the ids"))
    scribble(file, 3, 1400)  # the early ids are gone from the file, but not from the cache
    resumed = SessionManager.open(file, cache_dir=cache)
    resumed.build_session_context()
    candidates = iter([uuid.UUID(early + "0" * 24), uuid.UUID("12345678" + "0" * 24)])
    monkeypatch.setattr("pi_host.session._migrate.uuid.uuid4", lambda: next(candidates))
    assert resumed.append_message(UserMessage(content="new")) == "12345678"
    assert resumed.warnings == []


def test_entries_of_a_large_file_reserialise_from_the_file(tmp_path: Path) -> None:
    writer = long_session(tmp_path, 50, False)
    file = writer.session_file
    assert file is not None
    line = file.read_text("utf-8").split("\n")[-2]
    manager = SessionManager.open(file)
    leaf = manager.get_leaf_entry()
    assert leaf is not None and leaf.to_json() == line
    file.write_text(file.read_text("utf-8").replace("after 9", "AFTER 9"), "utf-8")  # rewritten behind us
    assert leaf.to_json() != line.replace("after 9", "AFTER 9")  # never someone else's bytes
    assert json.loads(leaf.to_json()) == json.loads(line)
