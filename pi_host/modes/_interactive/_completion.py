"""Editor completion: slash commands, their arguments, and ``@file`` references.

``/`` at the start of the editor lists the built-in and plugin commands; ``/model `` and
``/thinking `` complete their argument; ``@`` anywhere fuzzy-searches the files under the working
directory; Tab on a word that looks like a path completes it from the file system.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

__all__ = ["EditorCompleter", "FileIndex", "fuzzy_score"]

# Directories never worth offering: VCS data, dependency trees, caches and build output.
_SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        "dist",
        "build",
        ".idea",
    }
)
_MAX_FILES = 20_000
_MAX_RESULTS = 50


def fuzzy_score(query: str, path: str) -> float | None:
    """How well ``path`` matches ``query`` (higher is better), or ``None`` for no match.

    A contiguous match in the file name beats one anywhere in the path, which beats the query's
    letters appearing in order; shorter paths win ties.
    """
    if not query:
        return 1.0 - len(path) / 1000
    q = query.lower()
    p = path.lower()
    name = p.rstrip("/").rsplit("/", 1)[-1]
    if name.startswith(q):
        base = 4.0
    elif q in name:
        base = 3.0
    elif q in p:
        base = 2.0
    else:
        position = 0
        for char in q:
            position = p.find(char, position)
            if position < 0:
                return None
            position += 1
        base = 1.0
    return base - len(path) / 1000


class FileIndex:
    """A cached listing of the files and directories under ``root`` (refreshed every few seconds)."""

    def __init__(self, root: str, *, ttl: float = 5.0) -> None:
        self.root = root
        self._ttl = ttl
        self._paths: list[str] = []
        self._built_at = -1e9

    def paths(self) -> list[str]:
        now = time.monotonic()
        if now - self._built_at > self._ttl:
            self._paths = self._walk()
            self._built_at = now
        return self._paths

    def _walk(self) -> list[str]:
        out: list[str] = []
        stack = [""]
        while stack and len(out) < _MAX_FILES:
            relative = stack.pop()
            try:
                entries = sorted(os.scandir(os.path.join(self.root, relative)), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or entry.name in _SKIP_DIRS:
                    continue
                path = f"{relative}{entry.name}"
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    continue
                if is_dir:
                    out.append(path + "/")
                    stack.append(path + "/")
                else:
                    out.append(path)
        return out

    def search(self, query: str) -> list[str]:
        scored: list[tuple[float, str]] = []
        for path in self.paths():
            score = fuzzy_score(query, path)
            if score is not None:
                scored.append((score, path))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [path for _, path in scored[:_MAX_RESULTS]]


class EditorCompleter(Completer):
    """Completion for the prompt editor.

    :param commands: ``(name, description)`` of every command, called on each completion so
        plugin commands registered later appear.
    :param models: model references for ``/model``.
    :param thinking_levels: levels for ``/thinking``.
    """

    def __init__(
        self,
        *,
        cwd: str,
        commands: Callable[[], Sequence[tuple[str, str | None]]],
        models: Callable[[], Sequence[str]] = lambda: (),
        thinking_levels: Callable[[], Sequence[str]] = lambda: (),
    ) -> None:
        self.cwd = cwd
        self.files = FileIndex(cwd)
        self._commands = commands
        self._models = models
        self._thinking_levels = thinking_levels

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and "\n" not in before:
            if " " not in before:
                yield from self._complete_commands(before[1:])
                return
            command, _, argument = before[1:].partition(" ")
            if command == "model":
                yield from self._complete_words(argument, self._models())
                return
            if command == "thinking":
                yield from self._complete_words(argument, self._thinking_levels())
                return
        word = _current_word(before)
        if word.startswith("@"):
            yield from self._complete_reference(word)
        elif complete_event.completion_requested and _looks_like_path(word):
            yield from self._complete_path(word)

    def _complete_commands(self, typed: str) -> Iterable[Completion]:
        # Prefix matches first, in the given order (built-ins, then plugins); then fuzzy ones.
        seen: set[str] = set()
        prefix: list[tuple[str, str | None]] = []
        fuzzy: list[tuple[float, str, str | None]] = []
        for name, description in self._commands():
            if name in seen:
                continue
            seen.add(name)
            if name.lower().startswith(typed.lower()):
                prefix.append((name, description))
                continue
            score = fuzzy_score(typed, name)
            if score is not None:
                fuzzy.append((score, name, description))
        fuzzy.sort(key=lambda match: -match[0])
        for name, description in [*prefix, *((name, description) for _, name, description in fuzzy)]:
            yield Completion(
                f"/{name}",
                start_position=-len(typed) - 1,
                display=f"/{name}",
                display_meta=description or "",
            )

    def _complete_words(self, typed: str, words: Sequence[str]) -> Iterable[Completion]:
        scored = []
        for word in words:
            score = fuzzy_score(typed, word)
            if score is not None:
                scored.append((score, word))
        scored.sort(key=lambda item: -item[0])
        for _, word in scored[:_MAX_RESULTS]:
            yield Completion(word, start_position=-len(typed))

    def _complete_reference(self, word: str) -> Iterable[Completion]:
        query = word[1:]
        for path in self.files.search(query):
            # A file reference ends the word; a directory invites the next segment.
            text = f"@{path}" if path.endswith("/") else f"@{path} "
            yield Completion(text, start_position=-len(word), display=f"@{path}")

    def _complete_path(self, word: str) -> Iterable[Completion]:
        expanded = os.path.expanduser(word)
        base = Path(expanded if os.path.isabs(expanded) else os.path.join(self.cwd, expanded))
        directory, prefix = (base, "") if word.endswith("/") else (base.parent, base.name)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        head = word[: len(word) - len(prefix)]
        for entry in entries:
            if not entry.name.startswith(prefix) or (
                entry.name.startswith(".") and not prefix.startswith(".")
            ):
                continue
            suffix = "/" if entry.is_dir() else ""
            yield Completion(f"{head}{entry.name}{suffix}", start_position=-len(word))


def _current_word(text: str) -> str:
    index = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"))
    return text[index + 1 :]


def _looks_like_path(word: str) -> bool:
    return bool(word) and (word.startswith(("/", "./", "../", "~")) or "/" in word)
