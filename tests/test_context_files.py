"""Context files: AGENTS.md / CLAUDE.md from the agent directory and from / down to cwd."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_host.resources import ContextFile, load_context_files


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    agent = tmp_path / "agent"
    root = tmp_path / "root"
    cwd = root / "a" / "b"
    agent.mkdir()
    cwd.mkdir(parents=True)
    return {"agent": agent, "root": root, "cwd": cwd, "tmp": tmp_path}


def local(files: tuple[ContextFile, ...], tmp: Path) -> list[tuple[str, str]]:
    """The files under the test's directory (a machine may have its own /AGENTS.md)."""
    return [(str(Path(f.path).relative_to(tmp)), f.content) for f in files if f.path.startswith(str(tmp))]


def test_global_first_then_outermost_to_cwd(tree: dict[str, Path]) -> None:
    (tree["agent"] / "AGENTS.md").write_text("global")
    (tree["root"] / "AGENTS.md").write_text("root")
    (tree["root"] / "a" / "CLAUDE.md").write_text("a")
    (tree["cwd"] / "AGENTS.md").write_text("b")
    result = load_context_files(tree["cwd"], tree["agent"])
    assert local(result.files, tree["tmp"]) == [
        ("agent/AGENTS.md", "global"),
        ("root/AGENTS.md", "root"),
        ("root/a/CLAUDE.md", "a"),
        ("root/a/b/AGENTS.md", "b"),
    ]
    assert result.diagnostics == ()


def test_one_file_per_directory_in_name_order(tree: dict[str, Path]) -> None:
    (tree["cwd"] / "CLAUDE.md").write_text("claude")
    (tree["cwd"] / "AGENTS.MD").write_text("upper")
    (tree["root"] / "CLAUDE.MD").write_text("claude upper")
    result = load_context_files(tree["cwd"], tree["agent"])
    assert [content for _, content in local(result.files, tree["tmp"])] == ["claude upper", "upper"]


def test_agent_dir_inside_the_walk_is_listed_once(tree: dict[str, Path]) -> None:
    (tree["cwd"] / "AGENTS.md").write_text("here")
    result = load_context_files(tree["cwd"], tree["cwd"])
    assert local(result.files, tree["tmp"]) == [("root/a/b/AGENTS.md", "here")]


def test_global_claude_md_counts_too(tree: dict[str, Path]) -> None:
    (tree["agent"] / "CLAUDE.md").write_text("global claude")
    assert local(load_context_files(tree["cwd"], tree["agent"]).files, tree["tmp"]) == [
        ("agent/CLAUDE.md", "global claude")
    ]


def test_disabled_loads_nothing(tree: dict[str, Path]) -> None:
    (tree["agent"] / "AGENTS.md").write_text("global")
    (tree["cwd"] / "AGENTS.md").write_text("b")
    result = load_context_files(tree["cwd"], tree["agent"], enabled=False)
    assert result.files == ()


def test_unreadable_candidate_is_reported_and_the_next_name_used(tree: dict[str, Path]) -> None:
    (tree["cwd"] / "AGENTS.md").mkdir()  # exists, but cannot be read as a file
    (tree["cwd"] / "CLAUDE.md").write_text("fallback")
    result = load_context_files(tree["cwd"], tree["agent"])
    assert local(result.files, tree["tmp"]) == [("root/a/b/CLAUDE.md", "fallback")]
    (problem,) = result.diagnostics
    assert problem.type == "warning"
    assert problem.path == str(tree["cwd"] / "AGENTS.md")
    assert problem.message.startswith(f"Could not read {tree['cwd'] / 'AGENTS.md'}")


def test_invalid_utf8_is_replaced_not_fatal(tree: dict[str, Path]) -> None:
    (tree["cwd"] / "AGENTS.md").write_bytes(b"caf\xe9 rules")
    result = load_context_files(tree["cwd"], tree["agent"])
    assert local(result.files, tree["tmp"]) == [("root/a/b/AGENTS.md", "caf\ufffd rules")]


def test_relative_cwd_is_resolved(tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    (tree["cwd"] / "AGENTS.md").write_text("b")
    monkeypatch.chdir(tree["root"])
    result = load_context_files("a/b", tree["agent"])
    assert local(result.files, tree["tmp"]) == [("root/a/b/AGENTS.md", "b")]
