"""What pi-checkpoints costs: per edit, and per turn on a git repository of 10,000 files.

Run with ``uv run python bench/bench_checkpoints.py [--files N] [--rounds N] [--attributes LINE]``.

``--attributes '* text=auto'`` commits a ``.gitattributes`` with that line first: every file
then has a converting attribute, so each snapshot hashes them again with ``--no-filters``
(the price of recording a file's own bytes whatever ``.gitattributes`` says).

Median (and 90th percentile) wall-clock milliseconds over ``--rounds`` rounds, on a fresh
repository of ``--files`` committed files of 1 KiB in 100 directories:

- *edit*: what the tool middleware does around one ``edit`` of a 4 KiB file: the pre-image
  (read, git blob id, kept in the store) before the call and the post-image after it;
- *turn, nothing changed*: one snapshot of the work tree (private index, ``git add -A``,
  ``write-tree``) when no file changed since the last one;
- *turn, one file changed*: the same after a tool changed one tracked file and created one;
- *turn, 100 files changed*: after a ``bash`` call rewrote 100 tracked files;
- *first snapshot*: the first of a session on this repository (the private index is seeded
  from the user's index, so only files changed since the user's ``git add`` are hashed);
- *git status*: ``git status --porcelain`` on the same tree, the cost every git user already
  pays, for scale (a ratio to it does not drift with the machine's load as much as a time);
- *plan*: planning a restore of the first of 10 turns (snapshot now, diffs, lookups).

Figures measured while other processes load the machine are inflated; compare the ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pi_checkpoints._git import GitRepo
from pi_checkpoints._restore import capture, file_entry
from pi_checkpoints._store import BlobStore
from pi_checkpoints._timeline import plan_restore


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def make_repo(root: Path, files: int, attributes: str | None = None) -> Path:
    repo = root / "repo"
    if attributes:
        repo.mkdir(parents=True)
        (repo / ".gitattributes").write_text(attributes + "\n")
    per_dir = max(1, files // 100)
    for index in range(files):
        path = repo / f"d{index // per_dir:03d}" / f"f{index:05d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((f"{index} ".encode() * 200)[:1024])
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "files")
    return repo


def timed(rounds: int, setup: Callable[[], None], work: Callable[[], Any]) -> tuple[float, float]:
    samples = []
    for _ in range(rounds):
        setup()
        start = time.perf_counter()
        work()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.9))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--attributes", default=None, help="a .gitattributes line, e.g. '* text=auto'")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-checkpoints-"))
    try:
        repo_dir = make_repo(tmp, args.files, args.attributes)
        store_root = tmp / "agent" / "checkpoints"
        store = BlobStore(store_root / "blobs")
        limit = 10 << 20
        results: list[tuple[str, tuple[float, float]]] = []

        edited = repo_dir / "d000" / "edited.txt"
        edited.write_bytes(b"y" * 4096)
        counter = iter(range(10**9))

        def edit_once() -> None:
            pre = capture(str(edited), algo="sha1", store=store, max_file_bytes=limit)
            edited.write_bytes(b"y" * 4000 + str(next(counter)).encode())
            post = capture(str(edited), algo="sha1", store=store, max_file_bytes=limit)
            file_entry(str(edited), pre, post)

        results.append(("edit (pre- and post-image)", timed(args.rounds * 4, lambda: None, edit_once)))

        def fresh() -> GitRepo:
            found = GitRepo.discover(str(repo_dir), store_root)
            assert found is not None
            return found

        def drop_state() -> None:
            shutil.rmtree(store_root / "git", ignore_errors=True)

        results.append(
            (
                "first snapshot of a session",
                timed(max(3, args.rounds // 3), drop_state, lambda: fresh().snapshot(limit)),
            )
        )
        repo = fresh()
        repo.snapshot(limit)
        results.append(
            ("turn, nothing changed", timed(args.rounds, lambda: None, lambda: repo.snapshot(limit)))
        )
        tracked = repo_dir / "d001" / f"f{max(1, args.files // 100):05d}.txt"

        def one_change() -> None:
            tracked.write_bytes(os.urandom(512).hex().encode())
            (repo_dir / f"new{next(counter)}.txt").write_text("new\n")

        results.append(
            ("turn, one file changed", timed(args.rounds, one_change, lambda: repo.snapshot(limit)))
        )
        many = sorted((repo_dir / "d002").glob("*.txt"))[:100]

        def hundred_changes() -> None:
            for path in many:
                path.write_bytes(os.urandom(256).hex().encode())

        results.append(
            ("turn, 100 files changed", timed(args.rounds, hundred_changes, lambda: repo.snapshot(limit)))
        )
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
        results.append(
            (
                "git status --porcelain (for scale)",
                timed(
                    args.rounds,
                    lambda: None,
                    lambda: subprocess.run(
                        ["git", "status", "--porcelain"],
                        cwd=repo_dir,
                        env=env,
                        check=True,
                        capture_output=True,
                    ),
                ),
            )
        )

        # Ten turns of one edit each, recorded as the plugin records them; plan the first.
        branch: list[Any] = []
        before = repo.snapshot(limit).tree
        for turn in range(10):
            branch.append(
                SimpleNamespace(
                    type="message",
                    id=f"u{turn}",
                    parent_id=None,
                    timestamp="",
                    message=SimpleNamespace(role="user", content=f"turn {turn}"),
                )
            )
            target = repo_dir / "d003" / f"f{turn:05d}.txt"
            pre = capture(str(target), algo="sha1", store=store, max_file_bytes=limit)
            target.write_text(f"turn {turn}\n")
            post = capture(str(target), algo="sha1", store=store, max_file_bytes=limit)
            data = {"v": 1, "kind": "turn", "run": f"r{turn}", "repo": {"root": repo.root, "algo": "sha1"}}
            data |= {"before": before, "files": [file_entry(str(target), pre, post)]}
            data["after"] = before = repo.snapshot(limit).tree
            branch.append(SimpleNamespace(type="custom", id=f"c{turn}", custom_type="checkpoint", data=data))
        results.append(
            (
                "plan a restore of 10 turns back",
                timed(
                    args.rounds,
                    lambda: None,
                    lambda: plan_restore(branch, "u0", cwd=str(repo_dir), store_root=store_root),
                ),
            )
        )

        status = dict(results)["git status --porcelain (for scale)"][0]
        attributes = f", .gitattributes: {args.attributes!r}" if args.attributes else ""
        print(f"pi-checkpoints on a repository of {args.files} files ({args.rounds} rounds{attributes})\n")
        print(f"{'':36} {'median ms':>10} {'p90 ms':>8} {'x git status':>13}")
        for name, (median, p90) in results:
            print(f"{name:36} {median:10.2f} {p90:8.2f} {median / status:13.2f}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
