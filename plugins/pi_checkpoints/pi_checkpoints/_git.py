"""Snapshots of a git work tree that leave the user's repository as it was.

A snapshot is a tree object of the tracked and untracked-but-not-ignored files, built with
git's plumbing against a private index (``GIT_INDEX_FILE``) and written into a private
object directory under the agent directory (``GIT_OBJECT_DIRECTORY``, with the repository's
own objects as an alternate to read from). Nothing is written into the repository: no
object, no ref, no reflog, no index, no stash; ``git gc`` in the repository cannot prune a
snapshot, and pruning the snapshots is ours (:func:`pi_checkpoints._store.prune`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._store import norm_path

__all__ = ["GitError", "GitRepo", "Snapshot"]

# Settings that would make a snapshot write into the repository, run the user's code there
# or change the bytes or modes it records: a split index writes a shared index into .git;
# maintenance; hooks (post-index-change runs after every index write); Git LFS's clean
# filter stores content under .git/lfs; end-of-line conversion would record other bytes than
# the file's; without core.fileMode an executable bit is not seen, without core.symlinks a
# file where a link was is recorded as a link. Every other filter driver the configuration
# names is switched off the same way (:meth:`GitRepo._filter_config`), and files that
# attributes would still convert (from any .gitattributes: tracked, untracked or ignored, or
# info/attributes) are hashed again with ``--no-filters`` (:meth:`GitRepo._record_own_bytes`).
# The global and system attribute files are not read (``core.attributesFile``,
# ``GIT_ATTR_NOSYSTEM``), nor is an fsmonitor hook run.
_SAFE_CONFIG = (
    "-c", "core.splitIndex=false",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.autocrlf=false",
    "-c", "core.fileMode=true",
    "-c", "core.symlinks=true",
    "-c", "core.fsmonitor=false",
    "-c", "core.attributesFile=/dev/null",
    "-c", "filter.lfs.process=",
    "-c", "filter.lfs.clean=",
    "-c", "filter.lfs.smudge=",
    "-c", "filter.lfs.required=false",
)  # fmt: skip
# Variables that would point git elsewhere than we say.
_GIT_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
)


class GitError(RuntimeError):
    """A git command failed; the text has the command and git's message."""


# The attributes under which ``git add`` records other bytes than the file's own.
_CONVERTING = ("text", "eol", "crlf", "filter", "ident", "working-tree-encoding")
_NO_VALUE = (b"unspecified", b"unset")
_GITLINK = "160000"
_SYMLINK = "120000"


@dataclass(frozen=True)
class Snapshot:
    """One snapshot: the tree and the untracked files left out for their size (relative paths)."""

    tree: str
    skipped: tuple[str, ...] = ()


class GitRepo:
    """A work tree and the private index and object directory its snapshots use."""

    def __init__(self, root: str, common_dir: str, algo: str, state_dir: Path) -> None:
        self.root = root
        self.common_dir = common_dir
        self.algo = algo
        self.state_dir = state_dir
        self.objects = state_dir / "objects"
        self.index = state_dir / "index"
        self._filters: tuple[str, ...] | None = None

    @classmethod
    def discover(cls, cwd: str, store_root: Path) -> GitRepo | None:
        """The work tree ``cwd`` is in, ``None`` outside one (or without git)."""
        try:
            out = subprocess.run(
                [
                    "git",
                    "-C",
                    cwd,
                    "rev-parse",
                    "--show-toplevel",
                    "--git-common-dir",
                    "--show-object-format",
                ],
                capture_output=True,
                text=True,
                env=_clean_env(),
                check=False,
            )
        except OSError:
            return None
        lines = out.stdout.splitlines()
        if out.returncode != 0 or len(lines) < 3:
            return None
        root = os.path.realpath(lines[0])
        common = lines[1] if os.path.isabs(lines[1]) else os.path.join(cwd, lines[1])
        key = hashlib.sha256(root.encode()).hexdigest()[:16]
        return cls(root, os.path.realpath(common), lines[2].strip() or "sha1", store_root / "git" / key)

    def _env(self) -> dict[str, str]:
        env = _clean_env()
        env["GIT_INDEX_FILE"] = str(self.index)
        env["GIT_OBJECT_DIRECTORY"] = str(self.objects)
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.path.join(self.common_dir, "objects")
        return env

    def _git(
        self, *args: str, input: bytes | None = None, ok: Sequence[int] = (0,), literal: bool = False
    ) -> bytes:
        cmd = ["git", "-C", self.root, *_SAFE_CONFIG, *self._filter_config(), *args]
        env = self._env()
        if literal:
            env["GIT_LITERAL_PATHSPECS"] = "1"
        out = subprocess.run(cmd, input=input, capture_output=True, env=env, check=False)
        if out.returncode not in ok:
            message = out.stderr.decode(errors="replace").strip()
            raise GitError(f"git {' '.join(args[:2])} in {self.root} failed: {message}")
        return out.stdout

    def _filter_config(self) -> tuple[str, ...]:
        """``-c filter.NAME.clean=`` … for every filter driver the repository's configuration
        names: none of them runs (an empty command is no filter; not required, so no error)."""
        if self._filters is None:
            out = subprocess.run(
                ["git", "-C", self.root, "config", "--name-only", "--get-regexp", r"^filter\..*\."],
                capture_output=True,
                text=True,
                env=_clean_env(),
                check=False,
            )
            names = sorted({key[len("filter.") : key.rindex(".")] for key in out.stdout.split()})
            config: list[str] = []
            for name in names:
                for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
                    config += ["-c", f"filter.{name}.{key}={value}"]
            self._filters = tuple(config)
        return self._filters

    def _stat_dirty(self) -> list[str]:
        """The tracked paths whose file changed since the private index saw it (by stat;
        plumbing ``diff-files`` does not refresh, so each of them is listed)."""
        out = self._git("diff-files", "-z", "--name-only")
        return [os.fsdecode(name) for name in out.split(b"\0") if name]

    def _record_own_bytes(self, candidates: set[str] | None, *, seeded: bool = False) -> None:
        """Record the file's own bytes for each of ``candidates`` (``None``: every path) that
        ``text``, ``eol``, ``ident`` … make ``git add`` convert (``hash-object --no-filters``).

        Which files attributes convert is asked of git (``check-attr``), which reads every
        ``.gitattributes`` on a file's way, tracked, untracked or ignored, and info/attributes:
        there is no list of attribute files to keep up to date. ``seeded``: the index was just
        copied from the user's, whose blobs were converted as the user's own settings said
        (``core.autocrlf``, the global and system attribute files), so those count too.

        The entries written carry no stat data; a refresh then gives it back to those whose
        converted bytes are their own anyway (most files under ``text=auto``), so only the
        files whose bytes conversion changes are looked at again by the next snapshot.
        """
        if candidates is not None and not candidates:
            return
        files: list[tuple[str, str]] = []  # (mode, path) of regular files
        if candidates is None or len(candidates) > 2000:
            listing = self._git("ls-files", "-s", "-z")
        else:  # a turn's few changed paths: not the whole index listed each turn
            ordered = sorted(candidates)
            listing = b"".join(
                self._git("ls-files", "-s", "-z", "--", *ordered[at : at + 500], literal=True)
                for at in range(0, len(ordered), 500)
            )
        for record in listing.split(b"\0"):
            if not record:
                continue
            meta, _, name = record.partition(b"\t")
            mode = meta.split(b" ", 1)[0].decode()
            rel = os.fsdecode(name)
            if mode not in (_GITLINK, _SYMLINK) and (candidates is None or rel in candidates):
                files.append((mode, rel))
        if not files:
            return
        request = b"".join(os.fsencode(rel) + b"\0" for _, rel in files)
        out = self._git("check-attr", "-z", "--stdin", *_CONVERTING, input=request)
        converted = _converted(out)
        if seeded:
            converted |= self._converted_by_user(request, [rel for _, rel in files])
        if not converted:
            return
        modes = dict((rel, mode) for mode, rel in files)
        lines: list[bytes] = []
        ordered = sorted(converted)
        for start in range(0, len(ordered), 500):
            chunk = ordered[start : start + 500]
            blobs = self._git("hash-object", "--no-filters", "-w", "--", *chunk).split()
            for rel, blob in zip(chunk, blobs, strict=True):
                lines.append(b"%s %s\t%s\0" % (modes[rel].encode(), blob, os.fsencode(rel)))
        self._git("update-index", "-z", "--index-info", input=b"".join(lines))
        self._git("update-index", "-q", "--refresh", ok=(0, 1))

    def _converted_by_user(self, request: bytes, rels: Sequence[str]) -> set[str]:
        """Which of ``rels`` the user's own ``git add`` converts: every one under
        ``core.autocrlf`` (true or input), else those the attributes with the user's global
        and system files convert."""
        env = _clean_env()
        autocrlf = (
            subprocess.run(
                ["git", "-C", self.root, "config", "core.autocrlf"],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            .stdout.strip()
            .lower()
        )
        if autocrlf in ("true", "yes", "on", "1", "input"):
            return set(rels)
        del env["GIT_ATTR_NOSYSTEM"]
        out = subprocess.run(
            [
                "git",
                "-C",
                self.root,
                "-c",
                "core.fsmonitor=false",
                "check-attr",
                "-z",
                "--stdin",
                *_CONVERTING,
            ],
            input=request,
            capture_output=True,
            env=env,
            check=False,
        )
        return _converted(out.stdout) if out.returncode == 0 else set(rels)

    def submodules(self) -> list[str]:
        """The submodules (and nested repositories) of the work tree as the last snapshot saw
        them: a snapshot records which commit each is at, never the files inside."""
        found = []
        for record in self._git("ls-files", "-s", "-z").split(b"\0"):
            meta, _, name = record.partition(b"\t")
            if meta.startswith(_GITLINK.encode() + b" "):
                found.append(os.fsdecode(name))
        return found

    def tracked_count(self) -> int:
        """How many files the user's index holds (read from its header; 0 without one)."""
        index = self._user_index()
        try:
            with open(index, "rb") if index is not None else open(os.devnull, "rb") as f:
                header = f.read(12)
        except OSError:
            return 0
        return int.from_bytes(header[8:12], "big") if header[:4] == b"DIRC" else 0

    def _user_index(self) -> Path | None:
        out = subprocess.run(
            ["git", "-C", self.root, "rev-parse", "--git-path", "index"],
            capture_output=True,
            text=True,
            env=_clean_env(),
            check=False,
        )
        if out.returncode != 0:
            return None
        path = Path(out.stdout.strip())
        return path if path.is_absolute() else Path(self.root) / path

    def snapshot(self, max_file_bytes: int) -> Snapshot:
        """Record the work tree now; untracked files over ``max_file_bytes`` are left out.

        The private index starts as a copy of the user's index (read, never written), so
        the first snapshot only hashes what changed since the user's last ``git add``.
        """
        self.objects.mkdir(parents=True, exist_ok=True)
        with open(self.state_dir / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            # A seeded index holds the user's blobs, converted as the user's attributes and
            # settings said: every path is looked at once; later snapshots look at the paths
            # that changed.
            fresh = not self.index.exists()
            seeded = False
            if fresh:
                user_index = self._user_index()
                if user_index is not None and user_index.is_file():
                    shutil.copyfile(user_index, self.index)
                    seeded = True
            others = self._git("ls-files", "-z", "--others", "--exclude-standard").split(b"\0")
            skipped: list[str] = []
            for raw in others:
                if not raw:
                    continue
                rel = os.fsdecode(raw)
                try:
                    if os.lstat(os.path.join(self.root, rel)).st_size > max_file_bytes:
                        skipped.append(rel)
                except OSError:
                    continue
            untracked = [os.fsdecode(raw) for raw in others if raw]
            # Before ``add`` refreshes their stat data: the tracked files it will hash again.
            dirty = self._stat_dirty() if not fresh else []
            pathspec = [".", *(f":(exclude,literal){rel}" for rel in skipped)]
            try:
                self._git("add", "-A", "--", *pathspec)
            except GitError:
                # A seeded index git cannot use (another version's extensions): start afresh.
                self.index.unlink(missing_ok=True)
                fresh, seeded = True, False
                self._git("add", "-A", "--", *pathspec)
            self._record_own_bytes(None if fresh else {*dirty, *untracked}, seeded=seeded)
            tree = self._git("write-tree").decode().strip()
        return Snapshot(tree, tuple(skipped))

    def entries(self, tree: str, rels: Sequence[str]) -> dict[str, tuple[int, str]]:
        """``{path: (mode, blob id)}`` for each of ``rels`` that is a file in ``tree``.

        Read from the tree alone: a blob that was pruned still has its id here.
        """
        found: dict[str, tuple[int, str]] = {}
        for start in range(0, len(rels), 500):
            out = self._git(
                "ls-tree", "-z", "--full-tree", tree, "--", *rels[start : start + 500], literal=True
            )
            for record in out.split(b"\0"):
                if not record:
                    continue
                meta, _, name = record.partition(b"\t")
                mode, kind, blob = meta.decode().split(" ", 2)
                if kind == "blob":
                    found[os.fsdecode(name)] = (int(mode, 8), blob)
        return found

    def missing(self, blobs: Iterable[str]) -> set[str]:
        """Which of ``blobs`` are not in the snapshot objects nor the repository's."""
        ids = list(dict.fromkeys(blobs))
        if not ids:
            return set()
        out = self._git("cat-file", "--batch-check", input="".join(f"{blob}\n" for blob in ids).encode())
        return {line.split()[0] for line in out.decode().splitlines() if line.endswith(" missing")}

    def read_blob(self, blob: str) -> bytes | None:
        """A blob's content, ``None`` when it is gone (pruned, or the repository's was)."""
        try:
            return self._git("cat-file", "blob", blob)
        except GitError:
            return None

    def changed(self, tree_a: str, tree_b: str) -> list[str]:
        """The relative paths whose files differ between two snapshots."""
        if tree_a == tree_b:
            return []
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--name-only", tree_a, tree_b)
        return [os.fsdecode(name) for name in out.split(b"\0") if name]

    def ignored(self, rels: Sequence[str]) -> set[str]:
        """Which of ``rels`` git ignores (files in the snapshot index never count as ignored)."""
        # git refuses a path beyond a symlink (a directory that became one): not ignored.
        rels = [rel for rel in rels if not self._beyond_link(rel)]
        if not rels:
            return set()
        request = b"".join(os.fsencode(rel) + b"\0" for rel in rels)
        out = self._git("check-ignore", "-z", "--stdin", input=request, ok=(0, 1))
        return {os.fsdecode(name) for name in out.split(b"\0") if name}

    def _beyond_link(self, rel: str) -> bool:
        """Whether a directory on the way to ``rel`` in the work tree is a symlink."""
        parts = rel.split("/")[:-1]
        return any(os.path.islink(os.path.join(self.root, *parts[: n + 1])) for n in range(len(parts)))

    def relative(self, path: str) -> str | None:
        """``path`` relative to the work tree, ``None`` when it lies outside (or in ``.git``)."""
        # By name first: a file below a directory that became a symlink is still the work
        # tree's path (a snapshot holds it); else with the directories resolved.
        for candidate in (os.path.abspath(path), norm_path(path)):
            try:
                rel = os.path.relpath(candidate, self.root)
            except ValueError:
                continue
            if rel == "." or rel.startswith(".." + os.sep) or rel == ".." or rel.split(os.sep)[0] == ".git":
                continue
            return rel.replace(os.sep, "/")
        return None


def _converted(check_attr: bytes) -> set[str]:
    """The paths ``check-attr -z`` output gives a converting attribute (any value but unset)."""
    out = check_attr.split(b"\0")
    return {os.fsdecode(out[at]) for at in range(0, len(out) - 2, 3) if out[at + 2] not in _NO_VALUE}


def _clean_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in _GIT_ENV}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_ATTR_NOSYSTEM"] = "1"
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return env
