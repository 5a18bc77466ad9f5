"""A directory walk that skips what ripgrep and fd skip, in a fixed order.

Rules, as the Rust ``ignore`` crate applies them (checked against ripgrep 13 and 15, fd 8.6):

- command-line overrides decide first (ripgrep's ``--glob``, the built-in ``!.git``);
- then, per kind of ignore file, the nearest directory with a matching rule decides; the kinds
  rank tool-specific (``.rgignore`` / ``.fdignore``) over ``.ignore`` over ``.gitignore`` over
  ``.git/info/exclude`` over the global git excludes file over an explicit global file;
- ignore files in the directories above the search root count too; inside a repository,
  ``.gitignore`` and ``exclude`` stop at the first enclosing repository (a directory holding
  ``.git``), the other kinds apply all the way up;
- ``.gitignore`` applies outside repositories as well (``--no-require-git``), and there, as in
  ripgrep 14 and later, a repository nested in the tree is no boundary;
- hidden files are included; symbolic links are listed, never followed.

Entries come depth first, each directory's entries sorted by name (UTF-8 byte order): the
order of ``rg --sort path``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ._ignore import Gitignore, Match, Override

__all__ = ["IgnoreFiles", "WalkEntry", "global_gitignore", "walk"]


@dataclass(frozen=True, slots=True)
class IgnoreFiles:
    """Which ignore files a walk honours besides ``.gitignore``, ``.ignore`` and git's excludes.

    :ivar custom: the tool's own per-directory file names (``.rgignore`` or ``.fdignore``).
    :ivar explicit: extra global ignore files (fd's ``~/.config/fd/ignore``), lowest rank.
    """

    custom: tuple[str, ...] = ()
    explicit: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WalkEntry:
    """One file system entry below the search root (never followed if a symlink)."""

    path: str
    name: str
    is_dir: bool
    is_file: bool


@dataclass(frozen=True, slots=True)
class _Level:
    prefix_len: int
    custom: Gitignore | None
    dot_ignore: Gitignore | None
    gitignore: Gitignore | None
    exclude: Gitignore | None
    has_git: bool


@dataclass(frozen=True, slots=True)
class _Node:
    path: str
    # The levels (this directory, then its ancestors) that hold rules or a repository.
    chain: tuple[_Level, ...]


_EXCLUDES_FILE = re.compile(r'^\s*excludesfile\s*=\s*"?\s*(\S+?)\s*"?\s*$', re.IGNORECASE | re.MULTILINE)


def _git_excludes_path() -> str | None:
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    for config in (os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config")):
        try:
            with open(config, encoding="utf-8", errors="replace") as handle:
                found = _EXCLUDES_FILE.search(handle.read())
        except OSError:
            continue
        if found:
            value = found.group(1)
            return home + value[1:] if value.startswith("~/") else value
    return os.path.join(xdg, "git", "ignore")


def global_gitignore() -> Gitignore | None:
    """The user's global git excludes (``core.excludesFile``, else ``~/.config/git/ignore``)."""
    path = _git_excludes_path()
    # The global file's rules see absolute paths without the leading slash.
    return Gitignore.from_file(path, root="/") if path else None


def _load(directory: str, names: tuple[str, ...]) -> Gitignore | None:
    lines: list[str] = []
    for name in names:
        try:
            with open(os.path.join(directory, name), "rb") as handle:
                lines.extend(handle.read().decode("utf-8", "replace").split("\n"))
        except OSError:
            continue
    if not lines:
        return None
    matcher = Gitignore(directory, lines)
    return matcher if matcher.rules else None


def _git_dir(directory: str) -> str | None:
    dot_git = os.path.join(directory, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    if not os.path.isfile(dot_git):
        return None
    # A worktree or submodule: ``.git`` is a file naming the real git directory.
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as handle:
            first = handle.readline().strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    git_dir = os.path.join(directory, first[len("gitdir:") :].strip())
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8", errors="replace") as handle:
            return os.path.join(git_dir, handle.readline().strip())
    except OSError:
        return git_dir


def _node(directory: str, parent: _Node | None, files: IgnoreFiles) -> _Node:
    git_dir = _git_dir(directory)
    has_git = git_dir is not None or os.path.exists(os.path.join(directory, ".git"))
    exclude = None
    if git_dir is not None:
        exclude = Gitignore.from_file(os.path.join(git_dir, "info", "exclude"), root=directory)
    level = _Level(
        prefix_len=len(directory.rstrip("/")) + 1,
        custom=_load(directory, files.custom) if files.custom else None,
        dot_ignore=_load(directory, (".ignore",)),
        gitignore=_load(directory, (".gitignore",)),
        exclude=exclude,
        has_git=has_git,
    )
    inherited = parent.chain if parent is not None else ()
    if level.custom or level.dot_ignore or level.gitignore or level.exclude or level.has_git:
        return _Node(directory, (level, *inherited))
    return _Node(directory, inherited)


def _root_node(root: str, files: IgnoreFiles) -> _Node:
    ancestors: list[str] = []
    current = root
    while True:
        ancestors.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    node: _Node | None = None
    for directory in reversed(ancestors):
        node = _node(directory, node, files)
    assert node is not None
    return node


class _Verdicts:
    def __init__(self, files: IgnoreFiles, git_boundaries: bool) -> None:
        self.git_boundaries = git_boundaries
        self.global_gitignore = global_gitignore()
        self.explicit = [m for m in (Gitignore.from_file(p, root="/") for p in files.explicit) if m]

    def ignored(self, node: _Node, path: str, is_dir: bool) -> bool:
        custom = dot = gitignore = exclude = Match.NONE
        saw_git = False
        for level in node.chain:
            relative = path[level.prefix_len :]
            if custom is Match.NONE and level.custom is not None:
                custom = level.custom.matched_relative(relative, is_dir)
            if dot is Match.NONE and level.dot_ignore is not None:
                dot = level.dot_ignore.matched_relative(relative, is_dir)
            if not saw_git:
                if gitignore is Match.NONE and level.gitignore is not None:
                    gitignore = level.gitignore.matched_relative(relative, is_dir)
                if exclude is Match.NONE and level.exclude is not None:
                    exclude = level.exclude.matched_relative(relative, is_dir)
            saw_git = saw_git or (level.has_git and self.git_boundaries)
        for verdict in (custom, dot, gitignore, exclude):
            if verdict is not Match.NONE:
                return verdict is Match.IGNORE
        if self.global_gitignore is not None:
            verdict = self.global_gitignore.matched(path, is_dir)
            if verdict is not Match.NONE:
                return verdict is Match.IGNORE
        for matcher in self.explicit:
            verdict = matcher.matched(path, is_dir)
            if verdict is not Match.NONE:
                return verdict is Match.IGNORE
        return False


def _sort_key(entry: os.DirEntry[str]) -> bytes:
    return entry.name.encode("utf-8", "surrogateescape")


def _entries(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as iterator:
            entries = list(iterator)
    except OSError:
        return []
    entries.sort(key=_sort_key)
    return entries


class WalkAborted(Exception):
    """Raised inside :func:`walk` when its ``aborted`` callback turns true."""


def walk(
    root: str,
    *,
    files: IgnoreFiles = IgnoreFiles(),
    overrides: Override | None = None,
    aborted: Callable[[], bool] = lambda: False,
) -> Iterator[WalkEntry]:
    """Every entry below the directory ``root`` that the ignore rules let through, in order.

    Ignored directories are not entered. Unreadable directories are skipped.

    :raises WalkAborted: once ``aborted()`` returns true (checked per directory and every few
        hundred entries).
    """
    root = root.rstrip("/") or "/"
    root_node = _root_node(root, files)
    verdicts = _Verdicts(files, git_boundaries=any(level.has_git for level in root_node.chain))
    stack: list[tuple[_Node, Iterator[os.DirEntry[str]]]] = [(root_node, iter(_entries(root)))]
    seen = 0
    while stack:
        node, iterator = stack[-1]
        entry = next(iterator, None)
        if entry is None:
            stack.pop()
            continue
        seen += 1
        if seen % 256 == 0 and aborted():
            raise WalkAborted
        path = entry.path
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = not is_dir and entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        if overrides is not None:
            verdict = overrides.matched(path, is_dir)
            if verdict is Match.IGNORE:
                continue
            if verdict is Match.NONE and verdicts.ignored(node, path, is_dir):
                continue
        elif verdicts.ignored(node, path, is_dir):
            continue
        yield WalkEntry(path, entry.name, is_dir, is_file)
        if is_dir:
            if aborted():
                raise WalkAborted
            stack.append((_node(path, node, files), iter(_entries(path))))
