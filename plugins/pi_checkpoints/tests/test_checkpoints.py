"""pi-checkpoints in a real session on the scripted model, with real files and a real git repository."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pi_checkpoints
import pytest

from pi_host import Cancel, SessionManager
from pi_host import hookimpl as pi_host_hookimpl
from pi_host.testing import CliRunner, IsolatedHost, RecordingUI, build_host, tool_call

# Imported before any test moves HOME: its cache of pi 0.73 is under the real home.
from tests.pi_reference import require_pi_package

PI_HOST = str(Path(sys.executable).with_name("pi-host"))


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def git_state(repo: Path) -> dict[str, str]:
    """Every file under .git by content hash: branches, HEAD, index, stash, reflogs, objects."""
    state = {}
    for path in sorted((repo / ".git").rglob("*")):
        if path.is_file():
            state[str(path.relative_to(repo))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


@pytest.fixture
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("PI_HOST", "GIT_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_HOST_DIR", str(tmp_path / "agent"))
    (tmp_path / "home").mkdir()
    (tmp_path / "agent").mkdir()
    return tmp_path


def make_repo(root: Path) -> Path:
    repo = root / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("alpha\n")
    (repo / "c.txt").write_text("to be deleted\n")
    (repo / "logo.bin").write_bytes(bytes(range(256)))
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")
    (repo / "scratch.txt").write_text("stash me\n")
    git(repo, "stash", "push", "-q", "-u", "-m", "the user's stash")
    (repo / "untracked.txt").write_text("untracked\n")
    return repo


def host_for(root: Path, cwd: Path, ui: RecordingUI | None = None) -> IsolatedHost:
    return build_host(
        [pi_checkpoints],
        load=["tools_fs", "bash"],
        cwd=cwd,
        agent_dir=root / "agent",
        ui=ui or RecordingUI(),
        session_options={"mode": "rpc"},
    )


def edit(path: str, old: str, new: str) -> Any:
    return tool_call("edit", path=path, edits=[{"oldText": old, "newText": new}])


def checkpoint_entries(host_session: Any) -> list[dict[str, Any]]:
    return [
        e.data
        for e in host_session.session_manager.get_branch()
        if e.type == "custom" and e.custom_type == "checkpoint"
    ]


def user_ids(session: Any) -> list[str]:
    return [
        e.id
        for e in session.session_manager.get_branch()
        if e.type == "message" and getattr(e.message, "role", None) == "user"
    ]


@pytest.fixture
async def repo_session(environment: Path) -> AsyncIterator[tuple[IsolatedHost, Path]]:
    repo = make_repo(environment)
    host = host_for(environment, repo)
    try:
        yield host, repo
    finally:
        await host.close()


async def test_edits_and_bash_are_restored_and_git_is_untouched(
    repo_session: tuple[IsolatedHost, Path],
) -> None:
    host, repo = repo_session
    before_git = git_state(repo)
    # Run 1: edit, write a new file, and bash creates, deletes and changes a binary file.
    (
        await host.run(
            "change things",
            replies=[
                edit("a.txt", "alpha", "ALPHA"),
                tool_call("write", path="notes/new.md", content="# new\n"),
                tool_call(
                    "bash",
                    command=(
                        "echo made > made.txt && rm c.txt && printf '\\000\\377\\001' > logo.bin"
                        " && mkdir -p build && echo x > build/out"
                    ),
                ),
                "done",
            ],
        )
    ).assert_ok()
    assert (repo / "a.txt").read_text() == "ALPHA\n" and not (repo / "c.txt").exists()
    # Run 2: more edits.
    (await host.run("again", replies=[edit("a.txt", "ALPHA", "OMEGA"), "ok"])).assert_ok()
    session = await host.session()
    records = checkpoint_entries(session)
    assert records[0]["before"] and records[0]["repo"]["root"] == str(repo.resolve())
    u1, u2 = user_ids(session)

    points = pi_checkpoints.list_points(
        session.session_manager.get_branch(), cwd=str(repo), store_root=pi_checkpoints.store_root()
    )
    by_id = {p.entry_id: p for p in points}
    assert set(by_id[u1].files) == {"a.txt", "notes/new.md", "made.txt", "c.txt", "logo.bin"}
    assert by_id[u2].files == ("a.txt",)

    # Rewind the files to before run 2 (only a.txt changes back).
    await host.run(f"/rewind {u2} files")
    assert (repo / "a.txt").read_text() == "ALPHA\n"
    # A change made outside the agent is detected, and the restore refused.
    (repo / "made.txt").write_text("the user's work\n")
    await host.run(f"/rewind {u1} files")
    assert (repo / "made.txt").read_text() == "the user's work\n"
    assert any("changed outside the agent" in text for text, _ in host.ui.notifications)
    # Rewinding a second time, confirmed: everything is as before run 1.
    await host.run(f"/rewind {u1} files force")
    assert (repo / "a.txt").read_text() == "alpha\n"
    assert (repo / "c.txt").read_text() == "to be deleted\n"
    assert (repo / "logo.bin").read_bytes() == bytes(range(256))
    assert not (repo / "made.txt").exists() and not (repo / "notes").exists()  # emptied dirs go too
    assert (repo / "build" / "out").exists()  # ignored: never snapshotted, never touched
    assert (repo / "untracked.txt").read_text() == "untracked\n"
    # The restore is a point of its own: rewinding to it undoes it.
    restores = [
        e.id
        for e in session.session_manager.get_branch()
        if e.type == "custom" and e.data["kind"] == "restore"
    ]
    await host.run(f"/rewind {restores[-1]} files force")
    assert (repo / "a.txt").read_text() == "ALPHA\n" and (
        repo / "made.txt"
    ).read_text() == "the user's work\n"
    assert not (repo / "c.txt").exists()
    # The user's branches, HEAD, index, stash and reflogs (all of .git) are byte-identical.
    assert git_state(repo) == before_git
    assert git(repo, "stash", "list").count("the user's stash") == 1


async def test_conversation_and_files_together(repo_session: tuple[IsolatedHost, Path]) -> None:
    host, repo = repo_session
    await host.run("one", replies=[edit("a.txt", "alpha", "one"), "ok"])
    await host.run("two", replies=[edit("a.txt", "one", "two"), "ok"])
    session = await host.session()
    _, u2 = user_ids(session)
    await host.run(f"/rewind {u2} both")
    assert (repo / "a.txt").read_text() == "one\n"
    assert user_ids(session)[-1] != u2  # the message is taken back, into the editor
    assert host.ui.editor_text == "two"
    assert [m.role for m in session.messages][-1] == "assistant"


async def test_non_git_directory_restores_edits_only(environment: Path) -> None:
    plain = environment / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("alpha\n")
    (plain / "pic.bin").write_bytes(b"\x00\x01\x02")
    ui = RecordingUI()
    host = host_for(environment, plain, ui)
    try:
        await host.run(
            "go",
            replies=[
                edit("a.txt", "alpha", "beta"),
                tool_call("write", path="pic.bin", content="text now"),
                tool_call("bash", command="echo by-bash > bashed.txt"),
                "ok",
            ],
        )
        session = await host.session()
        records = checkpoint_entries(session)
        assert all("before" not in r and "after" not in r for r in records)
        (u1,) = user_ids(session)
        plan = pi_checkpoints.plan_restore(
            session.session_manager.get_branch(), u1, cwd=str(plain), store_root=pi_checkpoints.store_root()
        )
        assert any("not a git work tree" in note for note in plan.notes)
        await host.run("/rewind")  # the picker says so too (dismissed here)
        assert ui.dialogs[-1][0] == "select" and "not a git work tree" in ui.dialogs[-1][1]
        await host.run(f"/rewind {u1} files")
        assert (plain / "a.txt").read_text() == "alpha\n"
        assert (plain / "pic.bin").read_bytes() == b"\x00\x01\x02"
        assert (plain / "bashed.txt").exists()  # bash's changes are not restored without git
    finally:
        await host.close()


async def test_rewind_cli_lists_and_restores(
    repo_session: tuple[IsolatedHost, Path], environment: Path
) -> None:
    host, repo = repo_session
    await host.run(
        "one", replies=[edit("a.txt", "alpha", "one"), tool_call("bash", command="rm c.txt"), "ok"]
    )
    session = await host.session()
    file = str(session.session_manager.session_file)
    (u1,) = user_ids(session)
    env = {**os.environ, "PI_HOST_DIR": str(environment / "agent")}

    def rewind(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PI_HOST, "rewind", "--session", file, *args], capture_output=True, text=True, env=env, cwd=repo
        )

    listed = rewind("--list", "--json")
    assert listed.returncode == 0, listed.stderr
    (point,) = json.loads(listed.stdout)["points"]
    assert point["entry_id"] == u1 and set(point["files"]) == {"a.txt", "c.txt"}
    (repo / "a.txt").write_text("edited by hand\n")
    refused = rewind("--to", u1, "--files")
    assert refused.returncode == 3 and "changed outside the agent" in refused.stderr
    assert (repo / "a.txt").read_text() == "edited by hand\n"
    done = rewind("--to", u1, "--both", "--force")
    assert done.returncode == 0, done.stderr
    assert (repo / "a.txt").read_text() == "alpha\n" and (repo / "c.txt").exists()
    reopened = SessionManager.open(file)
    branch = reopened.get_branch()  # the conversation is back before the first message
    assert branch[-1].type == "custom" and not [e for e in branch if e.type == "message"]


def test_rpc_rewind_commands(environment: Path) -> None:
    repo = make_repo(environment)
    script = [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo new > n.txt && rm c.txt"}}]},
        {"text": "done"},
    ]
    with CliRunner(environment / "cli").rpc("--provider", "faux", replies=script, cwd=repo) as rpc:
        rpc.call({"id": "p", "type": "prompt", "message": "make a file"})
        rpc.wait_for("agent_end")  # the run is over, not just accepted
        listed = rpc.call({"id": "l", "type": "rewind_list"})
        assert listed["success"], listed
        (point,) = listed["data"]["points"]
        assert set(point["files"]) == {"n.txt", "c.txt"}
        preview = rpc.call({"id": "v", "type": "rewind_preview", "entryId": point["entry_id"]})
        assert {c["action"] for c in preview["data"]["changes"]} == {"create", "delete"}
        done = rpc.call({"id": "r", "type": "rewind", "entryId": point["entry_id"], "restore": "files"})
        assert done["success"], done
        assert (repo / "c.txt").exists() and not (repo / "n.txt").exists()
        # Undoing that restore would delete c.txt, which was edited by hand since: refused.
        (repo / "c.txt").write_text("mine now\n")
        points = rpc.call({"id": "l2", "type": "rewind_list"})["data"]["points"]
        undo = next(p for p in points if p["kind"] == "restore")
        refused = rpc.call({"id": "u", "type": "rewind", "entryId": undo["entry_id"], "restore": "files"})
        assert refused["success"] is False and "changed outside the agent" in refused["error"]
        assert (repo / "c.txt").read_text() == "mine now\n"
        forced = rpc.call(
            {"id": "f", "type": "rewind", "entryId": undo["entry_id"], "restore": "files", "force": True}
        )
        assert forced["success"] and not (repo / "c.txt").exists() and (repo / "n.txt").exists()
        bad = rpc.call({"id": "b", "type": "rewind", "restore": "files"})
        assert bad["success"] is False and "entryId is required" in bad["error"]
        # pi's own commands are untouched.
        assert rpc.call({"id": "s", "type": "get_state"})["success"] is True


async def two_runs(host: IsolatedHost) -> tuple[Any, str, str]:
    await host.run("one", replies=[edit("a.txt", "alpha", "one"), "ok"])
    await host.run("two", replies=[edit("a.txt", "one", "two"), tool_call("bash", command="rm c.txt"), "ok"])
    session = await host.session()
    u1, u2 = user_ids(session)
    return session, u1, u2


async def test_rewind_dialog_offers_conversation_files_or_both(environment: Path) -> None:
    from pi_checkpoints._plugin import _label

    repo = make_repo(environment)
    ui = RecordingUI()
    host = host_for(environment, repo, ui)
    try:
        session, _, u2 = await two_runs(host)
        points = pi_checkpoints.list_points(
            session.session_manager.get_branch(), cwd=str(repo), store_root=pi_checkpoints.store_root()
        )
        ui.answers.extend([_label(points[-1]), "Files only", True])
        await host.run("/rewind")
        assert [kind for kind, _ in ui.dialogs] == ["select", "select", "confirm"]
        assert (repo / "a.txt").read_text() == "one\n" and (repo / "c.txt").exists()
        assert user_ids(session)[-1] == u2  # files only: the conversation stays
        # Declining the preview changes nothing.
        (repo / "a.txt").write_text("one\n")
        points = pi_checkpoints.list_points(
            session.session_manager.get_branch(), cwd=str(repo), store_root=pi_checkpoints.store_root()
        )
        ui.answers.extend([_label(points[0]), "Conversation and files", False])
        await host.run("/rewind")
        assert (repo / "a.txt").read_text() == "one\n" and user_ids(session)[-1] == u2
    finally:
        await host.close()


async def test_tree_navigation_offers_the_files(environment: Path) -> None:
    repo = make_repo(environment)
    ui = RecordingUI()
    host = host_for(environment, repo, ui)
    try:
        session, u1, u2 = await two_runs(host)
        old_leaf = session.session_manager.leaf_id
        ui.answers.append(True)
        await session.navigate_tree(u2)  # back to before the second message
        assert ui.dialogs[-1] == ("confirm", "Restore the files of this point too?")
        assert (repo / "a.txt").read_text() == "one\n" and (repo / "c.txt").exists()
        # And forward again to the old leaf: the second run's files come back.
        ui.answers.append(True)
        assert old_leaf is not None
        await session.navigate_tree(old_leaf)
        assert (repo / "a.txt").read_text() == "two\n" and not (repo / "c.txt").exists()
        # Declined: the files stay.
        ui.answers.append(False)
        await session.navigate_tree(u1)
        assert (repo / "a.txt").read_text() == "two\n"
    finally:
        await host.close()


async def test_fork_offers_the_files_and_records_the_restore_in_the_new_session(environment: Path) -> None:
    repo = make_repo(environment)
    ui = RecordingUI()
    host = host_for(environment, repo, ui)
    try:
        session, _, u2 = await two_runs(host)
        old_file = session.session_manager.session_file
        ui.answers.append(True)
        assert await session.fork(u2) is False
        assert session.session_manager.session_file != old_file
        assert (repo / "a.txt").read_text() == "one\n" and (repo / "c.txt").exists()
        records = checkpoint_entries(session)
        assert records[-1]["kind"] == "restore" and records[-1]["target"] == u2
    finally:
        await host.close()


async def test_a_session_with_checkpoints_opens_in_pi_073(repo_session: tuple[IsolatedHost, Path]) -> None:
    session_manager_js = require_pi_package() / "dist" / "core" / "session-manager.js"
    host, _ = repo_session
    session, _, u2 = await two_runs(host)
    await host.run(f"/rewind {u2} both")  # a restore entry, on a second branch
    await host.run("three", replies=[edit("a.txt", "one", "three"), "ok"])
    file = Path(str(session.session_manager.session_file))
    view_script = Path(__file__).parents[3] / "tests" / "data" / "session" / "pi_view.mjs"
    done = subprocess.run(
        ["node", str(view_script), str(session_manager_js), str(file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    pi = json.loads(done.stdout)
    ours = SessionManager.open(file)
    assert pi["leafId"] == ours.leaf_id
    assert pi["entryIds"] == [entry.id for entry in ours.get_entries()]
    customs = [e.id for e in ours.get_entries() if e.type == "custom" and e.custom_type == "checkpoint"]
    assert len(customs) >= 4 and set(customs) <= set(pi["entryIds"])
    # pi sends the model the same conversation: checkpoint entries are not part of it.
    ours_messages = [message.to_json_dict() for message in ours.build_session_context().messages]
    assert pi["leafContext"]["messages"] == ours_messages
    assert [m["role"] for m in ours_messages] == ["user", "assistant", "toolResult", "assistant"] * 2


class StampPlugin:
    """A third-party tool that writes a file it names in its own argument, and says so."""

    @staticmethod
    def tool() -> Any:
        from pydantic import BaseModel

        from pi_host import Tool, ToolResult

        class StampParams(BaseModel):
            target: str

        async def execute(params: StampParams, ctx: Any) -> ToolResult:
            Path(ctx.cwd, params.target).write_bytes(b"\x89stamped\x00")
            return ToolResult.text("stamped")

        return Tool(
            name="stamp",
            description="Stamp a file.",
            parameters=StampParams,
            execute=execute,
            writes=lambda params, cwd: [os.path.join(cwd, params.target)],
        )

    @pi_host_hookimpl
    def pi_register_tools(self, register: Any) -> None:
        register(self.tool())


async def test_a_tool_that_declares_its_writes_is_checkpointed(environment: Path) -> None:
    plain = environment / "plain"
    plain.mkdir()
    (plain / "seal.bin").write_bytes(b"\x00original\xff")
    host = build_host(
        [pi_checkpoints, StampPlugin()],
        load=["tools_fs"],
        cwd=plain,
        agent_dir=environment / "agent",
        session_options={"mode": "rpc"},
    )
    try:
        assert host.tools["write"].writes is not None and host.tools["edit"].writes is not None
        await host.run("stamp it", replies=[tool_call("stamp", target="seal.bin"), "ok"])
        assert (plain / "seal.bin").read_bytes() == b"\x89stamped\x00"
        session = await host.session()
        (u1,) = user_ids(session)
        await host.run(f"/rewind {u1} files")
        assert (plain / "seal.bin").read_bytes() == b"\x00original\xff"
    finally:
        await host.close()


async def test_files_over_the_cap_are_named_not_restored(environment: Path) -> None:
    plain = environment / "plain"
    plain.mkdir()
    (plain / "big.txt").write_text("x" * 100 + "\n")
    ui = RecordingUI()
    host = build_host(
        [pi_checkpoints],
        load=["tools_fs"],
        cwd=plain,
        agent_dir=environment / "agent",
        settings={"checkpoints": {"maxFileBytes": 50}},
        ui=ui,
        session_options={"mode": "rpc"},
    )
    try:
        await host.run("shrink", replies=[tool_call("write", path="big.txt", content="small\n"), "ok"])
        session = await host.session()
        (u1,) = user_ids(session)
        plan = pi_checkpoints.plan_restore(
            session.session_manager.get_branch(), u1, cwd=str(plain), store_root=pi_checkpoints.store_root()
        )
        (change,) = plan.changes
        assert change.problem is not None and "maxFileBytes" in change.problem
        await host.run(f"/rewind {u1} files")
        assert (plain / "big.txt").read_text() == "small\n"
        assert any("not restored: " in text and "big.txt" in text for text, _ in ui.notifications)
    finally:
        await host.close()


def test_pruning_removes_old_content_first_then_the_oldest_over_the_cap(tmp_path: Path) -> None:
    from pi_checkpoints._store import BlobStore, blob_id, prune

    store = BlobStore(tmp_path / "blobs")
    ids = []
    for age, data in enumerate([b"a" * 100, b"b" * 100, b"c" * 100]):
        blob = blob_id(data)
        store.put(blob, data)
        path = tmp_path / "blobs" / blob[:2] / blob[2:]
        os.utime(path, (1_000_000 - age * 1000, 1_000_000 - age * 1000))
        ids.append(blob)
    assert blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git's id of the empty blob
    # Nothing is old, but the cap holds two: the oldest ("c") goes.
    assert prune([tmp_path / "blobs"], max_bytes=250, max_age_days=30, now=1_000_000) == (
        1,
        100,
        {tmp_path / "blobs"},
    )
    assert [store.has(blob) for blob in ids] == [True, True, False]
    # A day later with a one-day limit only the newest ("a", touched last) stays.
    assert prune([tmp_path / "blobs"], max_bytes=10_000, max_age_days=1, now=1_000_000 + 86400 - 500)[0] == 1
    assert [store.has(blob) for blob in ids] == [True, False, False]


async def test_runs_that_only_talk_or_read_record_nothing(repo_session: tuple[IsolatedHost, Path]) -> None:
    host, _ = repo_session
    await host.run("hello", replies=["hi"])
    await host.run("look", replies=[tool_call("read", path="a.txt"), tool_call("ls", path="."), "seen"])
    assert checkpoint_entries(await host.session()) == []


async def test_tree_to_before_the_first_change_restores_it(environment: Path) -> None:
    plain = environment / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("alpha\n")
    ui = RecordingUI()
    host = host_for(environment, plain, ui)
    try:
        session, u1, _ = await two_runs(host)
        assert (plain / "a.txt").read_text() == "two\n"
        ui.answers.append(True)
        await session.navigate_tree(u1)  # nothing is recorded on the branch up to u1's parent
        assert (plain / "a.txt").read_text() == "alpha\n"
    finally:
        await host.close()


def test_snapshots_work_again_after_their_objects_were_pruned(environment: Path) -> None:
    from pi_checkpoints._git import GitRepo
    from pi_checkpoints._plugin import _prune_now_and_then

    repo_dir = make_repo(environment)
    root = pi_checkpoints.store_root()
    repo = GitRepo.discover(str(repo_dir), root)
    assert repo is not None
    (repo_dir / "untracked.txt").write_text("changed\n")
    first = repo.snapshot(1 << 20)
    assert any(repo.objects.rglob("*"))
    _prune_now_and_then(pi_checkpoints.CheckpointSettings(max_store_bytes=0))
    assert not [p for p in repo.objects.rglob("*") if p.is_file()] and not repo.index.exists()
    # The private index named the pruned objects; it went with them, so git does not trust it.
    again = repo.snapshot(1 << 20)
    assert again.tree == first.tree
    assert repo.read_blob(repo.entries(again.tree, ["untracked.txt"])["untracked.txt"][1]) == b"changed\n"


async def test_a_file_that_cannot_be_written_back_is_named_and_the_rest_restored(
    repo_session: tuple[IsolatedHost, Path],
) -> None:
    host, repo = repo_session
    await host.run(
        "swap",
        replies=[
            edit("a.txt", "alpha", "beta"),
            # A directory holding an ignored file: the restore neither empties it nor writes c.txt.
            tool_call("bash", command="rm c.txt && mkdir -p c.txt/build && echo x > c.txt/build/out"),
            "ok",
        ],
    )
    session = await host.session()
    (u1,) = user_ids(session)
    await host.run(f"/rewind {u1} files")
    assert (repo / "a.txt").read_text() == "alpha\n" and (repo / "c.txt").is_dir()
    restore = checkpoint_entries(session)[-1]
    assert restore["notRestored"] == [str(repo.resolve() / "c.txt")] and "c.txt" in next(
        iter(restore["errors"])
    )
    assert any("not restored: " in text and "c.txt (" in text for text, _ in host.ui.notifications)


async def test_a_big_untracked_file_is_left_out_of_snapshots_yet_removed_on_rewind(environment: Path) -> None:
    repo = make_repo(environment)
    host = build_host(
        [pi_checkpoints],
        load=["tools_fs", "bash"],
        cwd=repo,
        agent_dir=environment / "agent",
        settings={"checkpoints": {"maxFileBytes": 100}},
        session_options={"mode": "rpc"},
    )
    try:
        await host.run("big", replies=[tool_call("bash", command="head -c 500 /dev/zero > big.bin"), "ok"])
        session = await host.session()
        records = checkpoint_entries(session)
        assert records[-1]["afterSkipped"] == ["big.bin"]
        (u1,) = user_ids(session)
        # The agent made it, so removing it is no clobbering, though its content was never kept.
        await host.run(f"/rewind {u1} files")
        assert not (repo / "big.bin").exists()
    finally:
        await host.close()


def test_snapshots_run_none_of_the_repositorys_hooks_or_filters(environment: Path) -> None:
    from pi_checkpoints._git import GitRepo

    repo_dir = make_repo(environment)
    hooks = repo_dir / ".git" / "hooks"
    hook = hooks / "post-index-change"
    hook.write_text('#!/bin/sh\ntouch "$GIT_DIR/hook-ran"\n')
    hook.chmod(0o755)
    # Git LFS installs itself so: its clean filter writes the content under .git/lfs.
    git(repo_dir, "config", "filter.lfs.clean", "sh -c 'touch .git/filter-ran; cat'")
    git(repo_dir, "config", "filter.lfs.process", "sh -c 'touch .git/filter-ran; exit 1'")
    (repo_dir / ".gitattributes").write_text("*.dat filter=lfs\n")
    (repo_dir / "big.dat").write_bytes(b"\x00raw bytes\r\n")
    before = git_state(repo_dir)
    repo = GitRepo.discover(str(repo_dir), pi_checkpoints.store_root())
    assert repo is not None
    snapshot = repo.snapshot(1 << 20)
    assert git_state(repo_dir) == before  # no hook ran, no filter wrote into .git
    blob = repo.entries(snapshot.tree, ["big.dat"])["big.dat"][1]
    assert repo.read_blob(blob) == b"\x00raw bytes\r\n"  # the file's own bytes


class CancelsForks:
    """Cancels every fork, after pi-checkpoints has asked about the files (trylast)."""

    @pi_host_hookimpl(trylast=True)
    def pi_session_before_fork(self) -> Cancel:
        return Cancel()


class WaitingUI(RecordingUI):
    """Answers a confirmation only once ``go`` is set: the user of this session is slow."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = anyio.Event()
        self.go = anyio.Event()

    async def confirm(self, title: str, message: str, *, timeout: float | None = None) -> bool:
        self.asked.set()
        await self.go.wait()
        return await super().confirm(title, message, timeout=timeout)


async def test_a_fork_plan_stays_with_its_own_session(environment: Path) -> None:
    """Unsaved sessions of one process all have no session file. A plan kept by file name, in
    module state, for a fork another plugin then cancelled was restored by the fork of
    another session whose user was still deciding meanwhile: the first session's files were
    rewritten although its fork never happened."""
    (environment / "first").mkdir()
    (environment / "second").mkdir()
    first_repo = make_repo(environment / "first")
    second_repo = make_repo(environment / "second")
    first_ui, second_ui = RecordingUI(), WaitingUI()
    first = build_host(
        [pi_checkpoints, CancelsForks()],
        load=["tools_fs", "bash"],
        cwd=first_repo,
        agent_dir=environment / "agent",
        ui=first_ui,
        session_options={"mode": "rpc", "no_session": True},
    )
    second = build_host(
        [pi_checkpoints],
        load=["tools_fs", "bash"],
        cwd=second_repo,
        agent_dir=environment / "agent",
        ui=second_ui,
        session_options={"mode": "rpc", "no_session": True},
    )
    try:
        first_session, _, first_u2 = await two_runs(first)
        second_session, _, second_u2 = await two_runs(second)
        second_ui.answers.append(False)  # the second session's user will keep the files
        forked: list[bool] = []

        async def second_fork() -> None:
            forked.append(await second_session.fork(second_u2))

        async with anyio.create_task_group() as tg:
            tg.start_soon(second_fork)
            await second_ui.asked.wait()  # the second session's user is deciding
            first_ui.answers.append(True)  # restore: the plan is made, then the fork cancelled
            assert await first_session.fork(first_u2) is True
            second_ui.go.set()
        assert forked == [False]
        assert (first_repo / "a.txt").read_text() == "two\n"  # its fork never happened
        assert not (first_repo / "c.txt").exists()
        assert (second_repo / "a.txt").read_text() == "two\n"
    finally:
        await first.close()
        await second.close()


# -- hardening: paths outside the project, byte-exactness, concurrent restores, aborts, submodules


def _rewind_cli(
    session_file: str, environment: Path, *args: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_HOST_DIR": str(environment / "agent")}
    return subprocess.run(
        [PI_HOST, "rewind", "--session", session_file, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
    )


async def test_a_crafted_session_cannot_restore_outside_its_project_unless_allowed(environment: Path) -> None:
    plain = environment / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("alpha\n")
    elsewhere = environment / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "victim.txt").write_text("victim\n")
    (elsewhere / "linked.txt").write_text("linked victim\n")
    (plain / "link").symlink_to(elsewhere)  # a directory inside the project that leads out
    host = host_for(environment, plain)
    try:
        await host.run("go", replies=[edit("a.txt", "alpha", "beta"), "ok"])
        session = await host.session()
        (u1,) = user_ids(session)
        file = Path(str(session.session_manager.session_file))
    finally:
        await host.close()
    # Someone hands over a session file whose checkpoint names paths out of the project.
    own = str(plain.resolve() / "a.txt")
    lines = []
    for line in file.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "custom" and entry.get("customType") == "checkpoint":
            (item,) = entry["data"]["files"]
            entry["data"]["files"] = [
                {**item, "path": str(elsewhere / "victim.txt")},
                {**item, "path": str(plain / "link" / "linked.txt")},
                {**item, "path": str(plain / ".git" / "config")},
            ]
            assert item["path"] == own
        lines.append(json.dumps(entry))
    crafted = environment / "crafted.jsonl"
    crafted.write_text("\n".join(lines) + "\n")

    refused = _rewind_cli(str(crafted), environment, "--to", u1, "--files", "--force", cwd=environment)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "OUTSIDE THE PROJECT" in refused.stdout  # the preview marks them
    assert (
        f"outside the project {plain.resolve()}" in refused.stderr and "--outside-project" in refused.stderr
    )
    # Named as the checkpoint names it, with why it leaves: the link on its way leads out.
    assert f"{plain / 'link' / 'linked.txt'}: it is reached through a symlink" in refused.stderr
    assert (elsewhere / "victim.txt").read_text() == "victim\n"
    assert (elsewhere / "linked.txt").read_text() == "linked victim\n"
    # The in-process API refuses the same way, and a directory turned symlink after the plan too.
    plan = pi_checkpoints.plan_restore(
        SessionManager.open(str(crafted)).get_branch(),
        u1,
        cwd=str(plain),
        store_root=pi_checkpoints.store_root(),
    )
    assert plan.project_root == str(plain.resolve()) and len(plan.outside_project) == 3
    with pytest.raises(pi_checkpoints.RestoreOutsideProject) as raised:
        pi_checkpoints.apply_restore(plan, store_root=pi_checkpoints.store_root(), force=True)
    assert raised.value.reasons == {
        str(elsewhere / "victim.txt"): f"it is outside the project {plain.resolve()}",
        str(plain / "link" / "linked.txt"): (
            f"it is reached through a symlink that leads out of {plain.resolve()}"
        ),
        str(plain.resolve() / ".git" / "config"): "it is inside the repository's .git",
    }

    # A session that claims / as its working directory does not make everything "inside".
    header, *rest = crafted.read_text().splitlines()
    rooted = environment / "rooted.jsonl"
    rooted.write_text("\n".join([json.dumps({**json.loads(header), "cwd": "/"}), *rest]) + "\n")
    broad = _rewind_cli(str(rooted), environment, "--to", u1, "--files", "--force", cwd=environment)
    assert broad.returncode == 3 and "the project / is / or holds the home directory" in broad.stderr
    assert (elsewhere / "victim.txt").read_text() == "victim\n"

    allowed = _rewind_cli(
        str(crafted), environment, "--to", u1, "--files", "--force", "--outside-project", cwd=environment
    )
    assert allowed.returncode == 0, allowed.stderr
    assert (elsewhere / "victim.txt").read_text() == "alpha\n"
    assert (elsewhere / "linked.txt").read_text() == "alpha\n"


def test_a_directory_that_becomes_a_symlink_after_the_plan_is_refused(environment: Path) -> None:
    from pi_checkpoints._timeline import FileChange, RestorePlan

    project = environment / "p"
    (project / "sub").mkdir(parents=True)
    outside = environment / "out"
    outside.mkdir()
    store = pi_checkpoints.store_root()
    plan = RestorePlan(
        target_id="x",
        changes=(
            FileChange(path=str(project / "sub" / "f.txt"), action="delete", current=None, target=None),
        ),
        project_root=str(project.resolve()),
    )
    (project / "sub").rmdir()
    (project / "sub").symlink_to(outside)
    (outside / "f.txt").write_text("keep\n")
    with pytest.raises(pi_checkpoints.RestoreOutsideProject, match="through a symlink that leads out"):
        pi_checkpoints.apply_restore(plan, store_root=store, force=True)
    assert (outside / "f.txt").read_text() == "keep\n"


def make_converting_repo(root: Path) -> Path:
    """A repository whose .gitattributes converts every file to CRLF and runs a clean filter."""
    repo = root / "crlf"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text("* text eol=crlf\n*.up filter=upper\n")
    git(repo, "config", "filter.upper.clean", "sh -c 'touch .git/filter-ran; tr a-z A-Z'")
    git(repo, "config", "filter.upper.smudge", "cat")
    (repo / "a.txt").write_bytes(b"alpha\r\nbeta\r\n")
    (repo / "x.up").write_bytes(b"lower case\r\n")
    (repo / "lf.txt").write_bytes(b"only lf\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    (repo / ".git" / "filter-ran").unlink()
    return repo


async def test_snapshots_and_restores_are_byte_exact_whatever_gitattributes_says(environment: Path) -> None:
    from pi_checkpoints._git import GitRepo

    repo = make_converting_repo(environment)
    originals = {name: (repo / name).read_bytes() for name in ("a.txt", "x.up", "lf.txt")}
    before_git = git_state(repo)
    host = host_for(environment, repo)
    try:
        await host.run(
            "change",
            replies=[
                edit("a.txt", "alpha", "ALPHA"),
                tool_call(
                    "bash",
                    command="printf 'mixed\\r\\nlf\\n' > new.txt && printf 'other\\r\\n' > x.up && rm lf.txt",
                ),
                "ok",
            ],
        )
        session = await host.session()
        (u1,) = user_ids(session)
        record = checkpoint_entries(session)[-1]
        snapshots = GitRepo.discover(str(repo), pi_checkpoints.store_root())
        assert snapshots is not None
        after = snapshots.entries(record["after"], ["a.txt", "x.up", "new.txt"])
        assert snapshots.read_blob(after["new.txt"][1]) == b"mixed\r\nlf\n"  # not normalised to LF
        assert snapshots.read_blob(after["x.up"][1]) == b"other\r\n"  # the filter did not run
        assert snapshots.read_blob(after["a.txt"][1]) == (repo / "a.txt").read_bytes()
        # Nothing counts as changed outside the agent: the restore goes through unforced.
        plan = pi_checkpoints.plan_restore(
            session.session_manager.get_branch(), u1, cwd=str(repo), store_root=pi_checkpoints.store_root()
        )
        assert not plan.conflicts, plan.conflicts
        await host.run(f"/rewind {u1} files")
        assert {name: (repo / name).read_bytes() for name in originals} == originals
        assert not (repo / "new.txt").exists()
        assert not (repo / ".git" / "filter-ran").exists()
        assert git_state(repo) == before_git
    finally:
        await host.close()


def test_two_processes_restoring_one_project_take_turns(
    repo_session: tuple[IsolatedHost, Path], environment: Path
) -> None:
    host, repo = repo_session
    import anyio

    async def one_run() -> str:
        await host.run("one", replies=[edit("a.txt", "alpha", "one"), "ok"])
        session = await host.session()
        return str(session.session_manager.session_file)

    file = anyio.run(one_run)
    (u1,) = user_ids(anyio.run(host.session))
    env = {**os.environ, "PI_HOST_DIR": str(environment / "agent")}
    # Another process is restoring this project: it holds the lock.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\nfrom pi_checkpoints import store_root\n"
            "from pi_checkpoints._lock import project_lock\n"
            "with project_lock(store_root(), sys.argv[1]):\n"
            "    print('held', flush=True); sys.stdin.readline()\n",
            str(repo.resolve()),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n"
        rewind = subprocess.Popen(
            [PI_HOST, "rewind", "--session", file, "--to", u1, "--files"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=repo,
        )
        assert rewind.stderr is not None
        assert "waiting for another restore of" in rewind.stderr.readline()  # blocked on the lock
        (repo / "a.txt").write_text("written by the other restore\n")  # what the holder does
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=60)
        holder.stdout.close()
    out, err = rewind.communicate(timeout=120)
    # Its plan was made before the other restore wrote: checked again under the lock, refused.
    assert rewind.returncode == 3, out + err
    assert "changed since the restore was planned" in err
    assert (repo / "a.txt").read_text() == "written by the other restore\n"


class _AbortAfterBash:
    """Aborts the run as soon as a ``bash`` call has finished, inside the turn."""

    @pi_host_hookimpl
    def pi_tool_execution_end(self, tool_name: str, ctx: Any) -> None:
        if tool_name == "bash":
            ctx.abort()


async def test_a_run_aborted_mid_turn_still_records_what_bash_did(environment: Path) -> None:
    repo = make_repo(environment)
    host = build_host(
        [pi_checkpoints, _AbortAfterBash()],
        load=["tools_fs", "bash"],
        cwd=repo,
        agent_dir=environment / "agent",
        ui=RecordingUI(),
        session_options={"mode": "rpc"},
    )
    try:
        outcome = await host.run(
            "go",
            replies=[
                tool_call("bash", command="echo made > made.txt && rm c.txt"),
                "never requested",  # the run ends with an aborted reply instead
            ],
        )
        assert outcome.stop_reason == "aborted"
        outcome.assert_hooks("pi_tool_execution_end", "pi_turn_end", "pi_agent_end")
        session = await host.session()
        (record,) = checkpoint_entries(session)
        assert record["before"] and record["after"]  # the turn cut short still has its snapshot
        assert host.provider.pending == 1
        (u1,) = user_ids(session)
        await host.run(f"/rewind {u1} files")  # no outside change: restores unforced
        assert not (repo / "made.txt").exists() and (repo / "c.txt").read_text() == "to be deleted\n"
    finally:
        await host.close()


async def test_submodules_are_named_in_the_preview_as_not_recorded(environment: Path) -> None:
    inner = environment / "inner"
    inner.mkdir()
    git(inner, "init", "-q", "-b", "main")
    (inner / "lib.txt").write_text("lib\n")
    git(inner, "add", "-A")
    git(inner, "commit", "-q", "-m", "lib")
    repo = make_repo(environment)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "vendor/inner")
    git(repo, "commit", "-q", "-m", "submodule")
    host = host_for(environment, repo)
    try:
        await host.run(
            "go", replies=[tool_call("bash", command="echo x > vendor/inner/lib.txt && echo y > y.txt"), "ok"]
        )
        session = await host.session()
        (u1,) = user_ids(session)
        plan = pi_checkpoints.plan_restore(
            session.session_manager.get_branch(), u1, cwd=str(repo), store_root=pi_checkpoints.store_root()
        )
        (note,) = [n for n in plan.notes if "submodules" in n]
        assert "not recorded" in note and "vendor/inner" in note
        assert [c.path for c in plan.changes] == [str(repo.resolve() / "y.txt")]
        assert any("vendor/inner" in line for line in pi_checkpoints.describe_plan(plan, str(repo)))
    finally:
        await host.close()


async def test_a_repository_over_the_file_limit_gets_edit_checkpoints_only(environment: Path) -> None:
    repo = make_repo(environment)  # four files in the index (staged.txt went into the stash)
    host = build_host(
        [pi_checkpoints],
        load=["tools_fs", "bash"],
        cwd=repo,
        agent_dir=environment / "agent",
        settings={"checkpoints": {"gitSnapshotMaxFiles": 3}},
        ui=RecordingUI(),
        session_options={"mode": "rpc"},
    )
    try:
        await host.run(
            "go", replies=[edit("a.txt", "alpha", "beta"), tool_call("bash", command="rm c.txt"), "ok"]
        )
        session = await host.session()
        records = checkpoint_entries(session)
        assert all("before" not in r and "after" not in r for r in records)
        assert [f["path"] for r in records for f in r.get("files", [])] == [str(repo.resolve() / "a.txt")]
        await host.run("/rewind")  # the picker says why bash's changes cannot come back
        assert "gitSnapshotMaxFiles" in host.ui.dialogs[-1][1]
    finally:
        await host.close()


async def test_in_a_session_files_outside_the_project_are_restored_only_when_allowed(
    environment: Path,
) -> None:
    from pi_checkpoints._plugin import _label

    plain = environment / "plain"
    plain.mkdir()
    outside = environment / "outside.txt"
    outside.write_text("before\n")
    ui = RecordingUI()
    host = host_for(environment, plain, ui)
    try:
        await host.run("go", replies=[tool_call("write", path=str(outside), content="after\n"), "ok"])
        session = await host.session()
        (u1,) = user_ids(session)
        await host.run(f"/rewind {u1} files")
        assert outside.read_text() == "after\n"
        assert any("outside the project" in text and "files outside" in text for text, _ in ui.notifications)
        await host.run(f"/rewind {u1} files outside")
        assert outside.read_text() == "before\n"
        # In the dialog: the preview, then a question of its own for the files outside.
        outside.write_text("after\n")
        await host.run("again", replies=[tool_call("write", path=str(outside), content="again\n"), "ok"])
        points = pi_checkpoints.list_points(
            session.session_manager.get_branch(), cwd=str(plain), store_root=pi_checkpoints.store_root()
        )
        ui.answers.extend([_label(points[-1]), "Files only", True, False])
        await host.run("/rewind")
        assert [kind for kind, _ in ui.dialogs[-4:]] == ["select", "select", "confirm", "confirm"]
        assert "outside the project" in ui.dialogs[-1][1] and outside.read_text() == "again\n"
        ui.answers.extend([_label(points[-1]), "Files only", True, True])
        await host.run("/rewind")
        assert outside.read_text() == "after\n"
    finally:
        await host.close()


# -- symlinks leading out of the project, and attributes git would convert with ----------------


def tree_bytes(root: Path) -> dict[str, bytes | str]:
    """Every file and link under ``root``: a file by its bytes, a link by its target."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


def make_outside(root: Path) -> Path:
    outside = root / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "victim.txt").write_bytes(b"victim\nline\n")
    (outside / "dir" / "inner.txt").write_bytes(b"inner\n")
    return outside


def make_linked_repo(root: Path) -> tuple[Path, Path]:
    """A repository with a tracked symlink to a file outside it and one to a directory outside."""
    outside = make_outside(root)
    repo = make_repo(root)
    (repo / "file-link").symlink_to(outside / "victim.txt")
    (repo / "dir-link").symlink_to(outside / "dir")
    git(repo, "add", "file-link", "dir-link")
    git(repo, "commit", "-q", "-m", "links")
    return repo, outside


async def test_links_leading_out_are_snapshotted_and_restored_as_links(environment: Path) -> None:
    from pi_checkpoints._git import GitRepo

    repo, outside = make_linked_repo(environment)
    before_outside = tree_bytes(outside)
    host = host_for(environment, repo)
    try:
        await host.run(
            "replace the links",
            replies=[
                tool_call(
                    "bash",
                    command=(
                        "rm file-link dir-link && printf 'mine\\n' > file-link && mkdir dir-link"
                        f" && echo mine > dir-link/inner.txt && ln -s {outside / 'dir'} new-link"
                    ),
                ),
                "ok",
            ],
        )
        session = await host.session()
        (u1,) = user_ids(session)
        (record,) = checkpoint_entries(session)
        snapshots = GitRepo.discover(str(repo), pi_checkpoints.store_root())
        assert snapshots is not None
        before = snapshots.entries(record["before"], ["file-link", "dir-link", "dir-link/inner.txt"])
        assert before["file-link"][0] == before["dir-link"][0] == 0o120000  # links, not followed
        assert "dir-link/inner.txt" not in before  # nothing outside was snapshotted
        assert snapshots.read_blob(before["file-link"][1]) == str(outside / "victim.txt").encode()
        after = snapshots.entries(record["after"], ["new-link"])
        assert after["new-link"][0] == 0o120000
        await host.run(f"/rewind {u1} files")  # the agent's own changes: no confirmation
        assert os.readlink(repo / "file-link") == str(outside / "victim.txt")
        assert os.readlink(repo / "dir-link") == str(outside / "dir")
        assert not os.path.lexists(repo / "new-link")  # a link to a directory is removed, as a link
        assert tree_bytes(outside) == before_outside
        assert git(repo, "status", "--porcelain", "--", "file-link", "dir-link", "new-link") == ""
    finally:
        await host.close()


async def test_an_edit_through_a_link_leading_out_is_named_not_written_back_unasked(
    environment: Path,
) -> None:
    repo, outside = make_linked_repo(environment)
    host = host_for(environment, repo)
    try:
        # pi's edit tool writes through the link: the file outside is what changes.
        await host.run(
            "edit", replies=[edit("file-link", "victim", "edited"), edit("a.txt", "alpha", "b"), "ok"]
        )
        assert (outside / "victim.txt").read_bytes() == b"edited\nline\n"
        session = await host.session()
        (u1,) = user_ids(session)
        paths = {f["path"] for record in checkpoint_entries(session) for f in record.get("files", [])}
        assert str(outside / "victim.txt") in paths  # what was written, by its real place
        await host.run(f"/rewind {u1} files force")
        refusal = next(text for text, _ in host.ui.notifications if "not restoring" in text)
        assert f"{outside / 'victim.txt'}: it is outside the project {repo.resolve()}" in refusal
        assert (outside / "victim.txt").read_bytes() == b"edited\nline\n"  # nothing written out
        assert (repo / "a.txt").read_text() == "b\n" and os.path.islink(repo / "file-link")
        await host.run(f"/rewind {u1} files outside")  # allowed explicitly: written back
        assert (outside / "victim.txt").read_bytes() == b"victim\nline\n"
        assert (repo / "a.txt").read_text() == "alpha\n"
        assert os.readlink(repo / "file-link") == str(outside / "victim.txt")
    finally:
        await host.close()


async def test_an_edit_through_a_link_inside_the_project_restores_its_target(environment: Path) -> None:
    plain = environment / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("alpha\n")
    (plain / "alias.txt").symlink_to("a.txt")
    host = host_for(environment, plain)
    try:
        await host.run("go", replies=[edit("alias.txt", "alpha", "beta"), "ok"])
        assert (plain / "a.txt").read_text() == "beta\n"
        session = await host.session()
        (u1,) = user_ids(session)
        await host.run(f"/rewind {u1} files")
        assert (plain / "a.txt").read_text() == "alpha\n"
        assert os.readlink(plain / "alias.txt") == "a.txt"
    finally:
        await host.close()


async def test_a_file_that_became_a_link_outside_the_agent_is_flagged_then_replaced_not_followed(
    environment: Path,
) -> None:
    repo, outside = make_linked_repo(environment)
    before_outside = tree_bytes(outside)
    host = host_for(environment, repo)
    try:
        await host.run("edit", replies=[edit("a.txt", "alpha", "beta"), "ok"])
        session = await host.session()
        (u1,) = user_ids(session)
        (repo / "a.txt").unlink()
        (repo / "a.txt").symlink_to(outside / "victim.txt")  # not the agent
        await host.run(f"/rewind {u1} files")
        refusal = next(text for text, _ in host.ui.notifications if "not restoring" in text)
        assert "a.txt changed outside the agent" in refusal
        assert os.path.islink(repo / "a.txt")
        await host.run(f"/rewind {u1} files force")
        assert not os.path.islink(repo / "a.txt") and (repo / "a.txt").read_text() == "alpha\n"
        assert tree_bytes(outside) == before_outside
    finally:
        await host.close()


async def test_a_directory_that_became_a_link_leading_out_is_replaced_not_written_through(
    environment: Path,
) -> None:
    outside = make_outside(environment)
    repo = make_repo(environment)
    (repo / "sub").mkdir()
    (repo / "sub" / "inner.txt").write_text("mine\n")
    git(repo, "add", "sub")
    git(repo, "commit", "-q", "-m", "sub")
    before_outside = tree_bytes(outside)
    host = host_for(environment, repo)
    try:
        await host.run("edit", replies=[edit("sub/inner.txt", "mine", "edited"), "ok"])
        session = await host.session()
        (u1,) = user_ids(session)
        (repo / "sub").rename(environment / "moved-away")
        (repo / "sub").symlink_to(outside / "dir")  # not the agent
        plan = pi_checkpoints.plan_restore(
            session.session_manager.get_branch(), u1, cwd=str(repo), store_root=pi_checkpoints.store_root()
        )
        sub = str(repo.resolve() / "sub")
        assert [(c.path, c.action) for c in plan.changes] == [(sub, "delete"), (f"{sub}/inner.txt", "create")]
        assert not plan.outside_project  # the link goes first: nothing is written through it
        assert all(c.outside for c in plan.changes) and plan.changes[1].current is None  # not read
        await host.run(f"/rewind {u1} files")
        refusal = next(text for text, _ in host.ui.notifications if "not restoring" in text)
        assert f"{sub}, {sub}/inner.txt changed outside the agent" in refusal
        assert os.path.islink(repo / "sub")
        await host.run(f"/rewind {u1} files force")
        # As git would: the link goes, the directory and its file come back inside the project.
        assert not os.path.islink(repo / "sub") and (repo / "sub" / "inner.txt").read_text() == "mine\n"
        assert tree_bytes(outside) == before_outside
    finally:
        await host.close()


async def test_without_git_a_directory_turned_link_leading_out_refuses_naming_the_path(
    environment: Path,
) -> None:
    outside = make_outside(environment)
    plain = environment / "plain"
    (plain / "sub").mkdir(parents=True)
    (plain / "sub" / "inner.txt").write_text("mine\n")
    before_outside = tree_bytes(outside)
    host = host_for(environment, plain)
    try:
        await host.run("edit", replies=[edit("sub/inner.txt", "mine", "edited"), "ok"])
        session = await host.session()
        (u1,) = user_ids(session)
        (plain / "sub").rename(environment / "moved-away")
        (plain / "sub").symlink_to(outside / "dir")
        await host.run(f"/rewind {u1} files force")
        refusal = next(text for text, _ in host.ui.notifications if "not restoring" in text)
        target = plain.resolve() / "sub" / "inner.txt"
        assert f"{target}: it is reached through a symlink that leads out of {plain.resolve()}" in refusal
        assert tree_bytes(outside) == before_outside
    finally:
        await host.close()


_CONVERTING_ATTRIBUTES = "* text eol=crlf\n*.up filter=upper\n"


def make_attributes_repo(root: Path, where: str) -> Path:
    """Files committed without attributes, then attributes git would convert them with, from
    ``where``: an untracked or an ignored ``.gitattributes``, one in an ignored directory
    holding a tracked file, ``.git/info/attributes``, the user's global attributes file, or
    ``core.autocrlf`` (the user's index then holds LF blobs of CRLF files)."""
    repo = root / "conv"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "filter.upper.clean", "sh -c 'touch .git/filter-ran; tr a-z A-Z'")
    git(repo, "config", "filter.upper.smudge", "cat")
    if where == "autocrlf":
        git(repo, "config", "core.autocrlf", "true")
    if where == "global":
        (root / "home" / "attributes").write_text(_CONVERTING_ATTRIBUTES)
        git(repo, "config", "--global", "core.attributesFile", str(root / "home" / "attributes"))
    (repo / ".gitignore").write_text(".gitattributes\nvendor/\n" if where.startswith("ignored") else "")
    (repo / "a.txt").write_bytes(b"alpha\r\nbeta\r\n")
    (repo / "x.up").write_bytes(b"lower case\r\n")
    (repo / "lf.txt").write_bytes(b"only lf\n")
    (repo / "vendor").mkdir()
    (repo / "vendor" / "lib.txt").write_bytes(b"vendored\r\n")
    for name in ("a.txt", "x.up", "lf.txt", "vendor/lib.txt"):
        # Older than the index: git trusts its entries by stat, not racily hashing them again.
        os.utime(repo / name, (1_000_000_000, 1_000_000_000))
    git(repo, "add", "-A")
    git(repo, "add", "-f", "vendor/lib.txt")  # a tracked file in an ignored directory
    git(repo, "commit", "-q", "-m", "start")
    if where in ("untracked", "ignored"):
        (repo / ".gitattributes").write_text(_CONVERTING_ATTRIBUTES)
    elif where == "ignored-dir":
        (repo / "vendor" / ".gitattributes").write_text(_CONVERTING_ATTRIBUTES)
    elif where == "info":
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "attributes").write_text(_CONVERTING_ATTRIBUTES)
    (repo / ".git" / "filter-ran").unlink(missing_ok=True)
    return repo


@pytest.mark.parametrize("where", ["untracked", "ignored", "ignored-dir", "info", "global", "autocrlf"])
async def test_snapshots_are_byte_exact_whatever_attributes_or_config_say(
    environment: Path, where: str
) -> None:
    from pi_checkpoints._git import GitRepo

    repo = make_attributes_repo(environment, where)
    names = ("a.txt", "x.up", "lf.txt", "vendor/lib.txt")
    originals = {name: (repo / name).read_bytes() for name in names}
    before_git = git_state(repo)
    host = host_for(environment, repo)
    try:
        await host.run(
            "change",
            replies=[
                edit("a.txt", "alpha", "ALPHA"),
                tool_call(
                    "bash",
                    command=(
                        "printf 'mixed\\r\\nlf\\n' > new.txt && printf 'other\\r\\n' > x.up && rm lf.txt"
                        " && printf 'changed\\r\\n' > vendor/lib.txt"
                    ),
                ),
                "ok",
            ],
        )
        session = await host.session()
        (u1,) = user_ids(session)
        records = checkpoint_entries(session)
        snapshots = GitRepo.discover(str(repo), pi_checkpoints.store_root())
        assert snapshots is not None
        before = snapshots.entries(records[0]["before"], list(names))
        assert {name: snapshots.read_blob(before[name][1]) for name in names} == originals
        after = snapshots.entries(records[-1]["after"], ["a.txt", "x.up", "new.txt", "vendor/lib.txt"])
        assert {name: snapshots.read_blob(blob) for name, (_, blob) in after.items()} == {
            "a.txt": b"ALPHA\r\nbeta\r\n",
            "x.up": b"other\r\n",  # the filter did not run
            "new.txt": b"mixed\r\nlf\n",  # not normalised
            "vendor/lib.txt": b"changed\r\n",
        }
        # Nothing counts as changed outside the agent: the restore goes through unforced.
        plan = pi_checkpoints.plan_restore(
            session.session_manager.get_branch(), u1, cwd=str(repo), store_root=pi_checkpoints.store_root()
        )
        assert not plan.conflicts, plan.conflicts
        await host.run(f"/rewind {u1} files")
        assert {name: (repo / name).read_bytes() for name in names} == originals
        assert not (repo / "new.txt").exists() and not (repo / ".git" / "filter-ran").exists()
        assert git_state(repo) == before_git
    finally:
        await host.close()


async def test_modes_and_links_are_recorded_whatever_core_filemode_and_symlinks_say(
    environment: Path,
) -> None:
    repo = make_repo(environment)
    git(repo, "config", "core.fileMode", "false")
    git(repo, "config", "core.symlinks", "false")
    (repo / "tool.sh").write_text("#!/bin/sh\n")
    (repo / "tool.sh").chmod(0o755)
    git(repo, "add", "tool.sh")
    git(repo, "commit", "-q", "-m", "tool")
    host = host_for(environment, repo)
    try:
        await host.run(
            "modes",
            replies=[
                tool_call("bash", command="chmod +x a.txt && chmod -x tool.sh && ln -s a.txt alias"),
                "ok",
            ],
        )
        session = await host.session()
        (u1,) = user_ids(session)
        await host.run(f"/rewind {u1} files")
        assert not os.access(repo / "a.txt", os.X_OK) and os.access(repo / "tool.sh", os.X_OK)
        assert not os.path.lexists(repo / "alias")
    finally:
        await host.close()


async def test_a_conversation_rewind_does_not_read_beyond_a_link_leading_out(environment: Path) -> None:
    from pi_checkpoints._store import BlobStore, blob_id

    outside = make_outside(environment)
    plain = environment / "plain"
    (plain / "sub").mkdir(parents=True)
    (plain / "sub" / "inner.txt").write_text("mine\n")
    host = host_for(environment, plain)
    try:
        await host.run("edit", replies=[edit("sub/inner.txt", "mine", "edited"), "ok"])
        session = await host.session()
        (u1,) = user_ids(session)
        (plain / "sub").rename(environment / "moved-away")
        (plain / "sub").symlink_to(outside / "dir")
        await host.run(f"/rewind {u1} conversation")
        sync = checkpoint_entries(session)[-1]
        assert sync["kind"] == "sync"
        assert sync["files"] == [
            {"path": str(plain.resolve() / "sub" / "inner.txt"), "pre": None, "post": None}
        ]
        assert not BlobStore(pi_checkpoints.store_root() / "blobs").has(blob_id(b"inner\n"))
    finally:
        await host.close()
