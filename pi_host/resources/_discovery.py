"""Finding skill and prompt-template files, in pi's places and pi's precedence order.

Order matters because the first resource with a given name wins: project resources before
user resources, and within each, paths listed in ``settings.json`` before auto-discovered
directories. Paths given on the command line (``--skill``, ``--prompt-template``) come last.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ._paths import canonical_path, exists, is_dir, is_file, project_config_dir, resolve_user_path
from ._patterns import IgnoreRules, apply_patterns, is_enabled_by_overrides, relative_posix

__all__ = [
    "DiscoveredFile",
    "ResourceKind",
    "ResourceScope",
    "ancestor_agents_skill_dirs",
    "collect_prompt_files",
    "collect_skill_files",
    "find_git_root",
    "resolve_resource_files",
]

ResourceKind = Literal["skills", "prompts"]
#: Where a resource came from: the agent directory, the project, or an explicit path.
ResourceScope = Literal["user", "project", "temporary"]


@dataclass(frozen=True)
class DiscoveredFile:
    """A resource file found by discovery, with the scope that found it."""

    path: Path
    scope: ResourceScope


def _entry_kind(path: Path) -> tuple[bool, bool]:
    """(is_dir, is_file) following symlinks; (False, False) for a broken link."""
    return is_dir(path), is_file(path)


def _sorted_children(directory: Path) -> list[Path]:
    try:
        # Sorted, so discovery (and with it collision winners) does not depend on the file system.
        return sorted(directory.iterdir(), key=lambda p: p.name)
    except OSError:
        return []


def _enter(directory: Path, root: Path, rules: IgnoreRules, visited: set[str]) -> bool:
    """Whether a walk goes into *directory*: not when it was seen already (through a symlink
    too); when it does, the directory's ignore files now apply."""
    real = canonical_path(directory)
    if real in visited:
        return False
    visited.add(real)
    rules.add_directory(directory, root)
    return True


def _children(directory: Path, root: Path, rules: IgnoreRules) -> Iterator[tuple[Path, bool, bool]]:
    """The entries of *directory* a walk looks at, by name, each with (is_dir, is_file): not
    dot entries, ``node_modules``, or what the ignore rules exclude."""
    for child in _sorted_children(directory):
        if child.name.startswith(".") or child.name == "node_modules":
            continue
        entry_is_dir, entry_is_file = _entry_kind(child)
        if rules.ignores(relative_posix(child, root), is_dir=entry_is_dir):
            continue
        yield child, entry_is_dir, entry_is_file


def collect_skill_files(directory: Path, *, include_root_files: bool = True) -> list[Path]:
    """Skill files under *directory*, by pi's rules.

    A directory holding a ``SKILL.md`` is one skill and is not searched further; other
    directories are searched recursively; ``.md`` files directly in *directory* are skills too
    when *include_root_files* (pi's ``skills/`` directories; not ``.agents/skills``). Dot
    entries, ``node_modules`` and paths excluded by ``.gitignore`` / ``.ignore`` / ``.fdignore``
    are skipped; symlinks are followed, once.
    """
    found: list[Path] = []
    if not is_dir(directory):
        return found
    _walk_skills(directory, directory, include_root_files, IgnoreRules(), set(), found)
    return found


def _walk_skills(
    directory: Path,
    root: Path,
    include_root_files: bool,
    rules: IgnoreRules,
    visited: set[str],
    found: list[Path],
) -> None:
    if not _enter(directory, root, rules, visited):
        return
    skill_file = directory / "SKILL.md"
    if is_file(skill_file) and not rules.ignores(relative_posix(skill_file, root)):
        found.append(skill_file)
        return
    for child, entry_is_dir, entry_is_file in _children(directory, root, rules):
        if entry_is_dir:
            _walk_skills(child, root, False, rules, visited, found)
        elif entry_is_file and include_root_files and child.name.endswith(".md"):
            found.append(child)


def collect_prompt_files(directory: Path, *, recursive: bool = False) -> list[Path]:
    """``.md`` files in *directory* (also in subdirectories when *recursive*).

    Auto-discovered ``prompts/`` directories are read non-recursively; directories listed in
    settings are read recursively, as in pi. Dot entries, ``node_modules`` and ignored paths are
    skipped.
    """
    found: list[Path] = []
    if is_dir(directory):
        _walk_prompts(directory, directory, recursive, IgnoreRules(), set(), found)
    return found


def _walk_prompts(
    directory: Path, root: Path, recursive: bool, rules: IgnoreRules, visited: set[str], found: list[Path]
) -> None:
    if not _enter(directory, root, rules, visited):
        return
    for child, entry_is_dir, entry_is_file in _children(directory, root, rules):
        if entry_is_dir and recursive:
            _walk_prompts(child, root, recursive, rules, visited, found)
        elif entry_is_file and child.name.endswith(".md"):
            found.append(child)


def find_git_root(start: Path) -> Path | None:
    """The nearest directory at or above *start* that contains ``.git``."""
    directory = Path(os.path.abspath(start))
    while True:
        if exists(directory / ".git"):
            return directory
        if directory.parent == directory:
            return None
        directory = directory.parent


def ancestor_agents_skill_dirs(cwd: Path, *, home: Path | None = None) -> list[Path]:
    """``.agents/skills`` of *cwd* and its ancestors up to the git root (or ``/``), nearest first.

    The user's own ``~/.agents/skills`` is left out: it is a user resource, not a project one.
    """
    start = Path(os.path.abspath(cwd))
    git_root = find_git_root(start)
    user_dir = Path(os.path.abspath((home or Path.home()) / ".agents" / "skills"))
    dirs: list[Path] = []
    directory = start
    while True:
        candidate = directory / ".agents" / "skills"
        if candidate != user_dir:
            dirs.append(candidate)
        if git_root is not None and directory == git_root:
            break
        if directory.parent == directory:
            break
        directory = directory.parent
    return dirs


def _files_from_entry(path: Path, kind: ResourceKind) -> list[Path]:
    entry_is_dir, entry_is_file = _entry_kind(path)
    if entry_is_file:
        return [path]
    if entry_is_dir:
        if kind == "skills":
            return collect_skill_files(path)
        return collect_prompt_files(path, recursive=True)
    return []


_PATTERN_PREFIXES = ("!", "+", "-")


def _is_pattern(entry: str) -> bool:
    return entry.startswith(_PATTERN_PREFIXES) or "*" in entry or "?" in entry


@dataclass
class _Candidate:
    scope: ResourceScope
    rank: int
    enabled: bool


def resolve_resource_files(
    kind: ResourceKind,
    *,
    cwd: Path,
    agent_dir: Path,
    project_trusted: bool,
    global_entries: Sequence[str] = (),
    project_entries: Sequence[str] = (),
    home: Path | None = None,
) -> list[DiscoveredFile]:
    """The enabled resource files of *kind* from settings entries and the default directories.

    Entries are paths (``~`` expanded; relative to the agent directory for global settings,
    to ``<cwd>/.pi`` for project settings), globs that filter the files those paths give,
    ``!glob`` exclusions, and ``+path`` / ``-path`` exact force-include / force-exclude; the
    ``!``/``+``/``-`` entries also filter the auto-discovered files of their scope. Project
    entries and directories count only when the project is trusted.

    The result is in precedence order (project settings, project directories, user settings,
    user directories) with duplicates (by real path) removed.
    """
    home_dir = home or Path.home()
    project_base = project_config_dir(cwd)
    candidates: dict[Path, _Candidate] = {}

    def add(paths: Sequence[Path], scope: ResourceScope, rank: int, enabled_paths: set[Path] | None) -> None:
        for path in paths:
            if path not in candidates:
                enabled = True if enabled_paths is None else path in enabled_paths
                candidates[path] = _Candidate(scope, rank, enabled)

    def add_local(entries: Sequence[str], base: Path, scope: ResourceScope, rank: int) -> None:
        plain = [e for e in entries if not _is_pattern(e)]
        patterns = [e for e in entries if _is_pattern(e)]
        files: list[Path] = []
        for entry in plain:
            files.extend(_files_from_entry(resolve_user_path(entry, base), kind))
        add(files, scope, rank, apply_patterns(files, patterns, base))

    def add_auto(
        paths: Sequence[Path], entries: Sequence[str], base: Path, scope: ResourceScope, rank: int
    ) -> None:
        enabled = {p for p in paths if is_enabled_by_overrides(p, entries, base)}
        add(paths, scope, rank, enabled)

    if project_trusted:
        add_local(project_entries, project_base, "project", 0)
    add_local(global_entries, agent_dir, "user", 2)

    if kind == "skills":
        if project_trusted:
            project_auto = collect_skill_files(project_base / "skills")
            for directory in ancestor_agents_skill_dirs(cwd, home=home_dir):
                project_auto += collect_skill_files(directory, include_root_files=False)
            add_auto(project_auto, project_entries, project_base, "project", 1)
        user_auto = collect_skill_files(agent_dir / "skills")
        user_auto += collect_skill_files(home_dir / ".agents" / "skills", include_root_files=False)
        add_auto(user_auto, global_entries, agent_dir, "user", 3)
    else:
        if project_trusted:
            add_auto(
                collect_prompt_files(project_base / "prompts"), project_entries, project_base, "project", 1
            )
        add_auto(collect_prompt_files(agent_dir / "prompts"), global_entries, agent_dir, "user", 3)

    ordered = sorted(candidates.items(), key=lambda item: item[1].rank)
    seen: set[str] = set()
    result: list[DiscoveredFile] = []
    for path, candidate in ordered:
        real = canonical_path(path)
        if real in seen:
            continue
        seen.add(real)
        if candidate.enabled:
            result.append(DiscoveredFile(path, candidate.scope))
    return result
