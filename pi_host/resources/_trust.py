"""Project trust: a repository's own configuration runs only after the user agreed to it.

A project can carry settings, skills, prompt templates, a system prompt and plugins in
``<cwd>/.pi`` (and skills in ``.agents/skills``). Those can change what the agent does and run
code, so pi-host loads them only for a trusted project, as pi does:

1. ``--approve`` / ``--no-approve`` (the *override*) decide outright;
2. a project with none of those resources needs no decision (it is treated as trusted);
3. a decision made earlier this session, or remembered in ``<agent_dir>/trust.json`` for the
   directory or its nearest ancestor that has one, applies;
4. the global ``defaultProjectTrust`` setting: ``always`` or ``never``;
5. otherwise the project is *undecided*: interactive mode asks the user; every other mode
   treats it as untrusted and never prompts.

``trust.json`` is pi's file: a JSON object from canonical directory paths to ``true``/``false``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._discovery import ancestor_agents_skill_dirs
from ._jsonfile import file_lock, write_json_atomic
from ._paths import CONFIG_DIR_NAME, canonical_path, exists, is_dir
from ._settings import DefaultProjectTrust

__all__ = [
    "TRUST_FILE_NAME",
    "TRUST_REQUIRING_PROJECT_RESOURCES",
    "TRUST_REQUIRING_ROOT_FILES",
    "ProjectTrust",
    "ProjectTrustStore",
    "TrustEntry",
    "TrustOption",
    "TrustStoreError",
    "has_trust_requiring_resources",
    "trust_prompt_text",
]

TRUST_FILE_NAME = "trust.json"

#: Entries of ``<cwd>/.pi`` that make a project need trust (pi's list, plus pi-host's plugins).
TRUST_REQUIRING_PROJECT_RESOURCES = (
    "settings.json",
    "extensions",
    "skills",
    "prompts",
    "themes",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
    "plugins",
    "mcp.json",
    "agents",
)

#: Files at the project root that make a project need trust: an MCP server list starts
#: programs (Claude Code's ``.mcp.json``, which pi-mcp reads); Claude Code's agent
#: definitions are system prompts and tool lists (``.claude/agents``, which pi-subagents reads).
TRUST_REQUIRING_ROOT_FILES = (".mcp.json", ".claude/agents")


class TrustStoreError(Exception):
    """``trust.json`` cannot be read or is not pi's format; the message names the file and the fix."""


@dataclass(frozen=True)
class TrustEntry:
    """A remembered decision and the directory it was recorded for."""

    path: str
    trusted: bool


@dataclass(frozen=True)
class TrustOption:
    """One answer to the trust question, with what it remembers.

    :ivar label: the text to show (pi's labels).
    :ivar trusted: whether the project is trusted with this answer.
    :ivar updates: ``(directory, decision)`` pairs written to ``trust.json`` (``None`` deletes);
        empty for the session-only answers.
    :ivar saved_path: the directory the decision is recorded for, if it is recorded.
    """

    label: str
    trusted: bool
    updates: tuple[tuple[str, bool | None], ...] = ()
    saved_path: str | None = None


def _normalize(directory: str | os.PathLike[str]) -> str:
    return canonical_path(os.path.abspath(directory))


class ProjectTrustStore:
    """The remembered decisions in ``<agent_dir>/trust.json``."""

    def __init__(self, agent_dir: str | os.PathLike[str]) -> None:
        self._path = Path(agent_dir) / TRUST_FILE_NAME

    @property
    def path(self) -> Path:
        """The ``trust.json`` file."""
        return self._path

    def _read(self) -> dict[str, bool]:
        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            raise TrustStoreError(f"Cannot read the trust store {self._path}: {exc}") from exc
        if not text.strip():
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TrustStoreError(
                f"The trust store {self._path} is not valid JSON ({exc.msg} at line {exc.lineno}, "
                f"column {exc.colno}); fix or delete it"
            ) from exc
        if not isinstance(data, dict):
            raise TrustStoreError(f"The trust store {self._path} must hold a JSON object; fix or delete it")
        entries: dict[str, bool] = {}
        for key, value in data.items():
            if value is None:
                continue
            if not isinstance(value, bool):
                raise TrustStoreError(
                    f"The trust store {self._path} has {value!r} for {key!r}; "
                    "values must be true, false or null"
                )
            entries[key] = value
        return entries

    def entries(self) -> dict[str, bool]:
        """Every remembered decision, by directory.

        :raises TrustStoreError: the file is unreadable or malformed.
        """
        return self._read()

    def get_entry(self, cwd: str | os.PathLike[str]) -> TrustEntry | None:
        """The decision for *cwd*: its own, else its nearest ancestor's; ``None`` if none.

        :raises TrustStoreError: the file is unreadable or malformed.
        """
        data = self._read()
        directory = _normalize(cwd)
        while True:
            value = data.get(directory)
            if value is not None:
                return TrustEntry(directory, value)
            parent = os.path.dirname(directory)
            if parent == directory:
                return None
            directory = parent

    def get(self, cwd: str | os.PathLike[str]) -> bool | None:
        """``True``/``False`` as remembered for *cwd* (or an ancestor), ``None`` if undecided.

        :raises TrustStoreError: the file is unreadable or malformed.
        """
        entry = self.get_entry(cwd)
        return None if entry is None else entry.trusted

    def set(self, cwd: str | os.PathLike[str], trusted: bool | None) -> None:
        """Remember (or with ``None`` forget) the decision for *cwd*.

        :raises TrustStoreError: the existing file is malformed; it is left untouched.
        :raises OSError: the file cannot be written.
        """
        self.set_many([(cwd, trusted)])

    def set_many(self, updates: Iterable[tuple[str | os.PathLike[str], bool | None]]) -> None:
        """Apply several decisions in one locked write (see :meth:`set`)."""
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(self._path):
            data = self._read()
            for directory, trusted in updates:
                key = _normalize(directory)
                if trusted is None:
                    data.pop(key, None)
                else:
                    data[key] = trusted
            write_json_atomic(self._path, dict(sorted(data.items())))


def has_trust_requiring_resources(
    cwd: str | os.PathLike[str], *, home: str | os.PathLike[str] | None = None
) -> bool:
    """Whether *cwd* has project resources that only load when trusted.

    True when ``<cwd>/.pi`` holds one of :data:`TRUST_REQUIRING_PROJECT_RESOURCES`, when *cwd*
    holds one of :data:`TRUST_REQUIRING_ROOT_FILES` (``.mcp.json``), or when
    *cwd* or an ancestor (up to the git root) has ``.agents/skills`` — other than the user's own
    ``~/.agents/skills``. Context files (``AGENTS.md``) do not count, as in pi.
    """
    directory = Path(_normalize(cwd))
    config_dir = directory / CONFIG_DIR_NAME
    if any(exists(config_dir / entry) for entry in TRUST_REQUIRING_PROJECT_RESOURCES):
        return True
    if any(exists(directory / name) for name in TRUST_REQUIRING_ROOT_FILES):
        return True
    home_path = Path(home) if home is not None else Path.home()
    return any(is_dir(d) for d in ancestor_agents_skill_dirs(directory, home=home_path))


def trust_prompt_text(cwd: str | os.PathLike[str]) -> str:
    """The question interactive mode asks about an undecided project."""
    return (
        f"Trust project folder?\n{os.fspath(cwd)}\n\n"
        f"This lets pi-host load the project's {CONFIG_DIR_NAME} settings, skills, prompts and "
        "system prompt, and run its project plugins."
    )


class ProjectTrust:
    """Trust decisions for projects, per pi's rules (see the module docs for the order).

    :param agent_dir: where ``trust.json`` lives.
    :param default: the global ``defaultProjectTrust`` setting (never the project's own).
    :param override: ``True`` for ``--approve``, ``False`` for ``--no-approve``.
    :param home: the home directory, whose ``.agents/skills`` is a user resource.
    """

    def __init__(
        self,
        agent_dir: str | os.PathLike[str],
        *,
        default: DefaultProjectTrust = "ask",
        override: bool | None = None,
        home: str | os.PathLike[str] | None = None,
    ) -> None:
        self.store = ProjectTrustStore(agent_dir)
        self.default: DefaultProjectTrust = default
        self.override = override
        self._home = home
        self._session: dict[str, bool] = {}
        self._issues: list[str] = []

    @property
    def issues(self) -> tuple[str, ...]:
        """Problems with ``trust.json`` met so far (the affected decisions count as undecided)."""
        return tuple(self._issues)

    def _report(self, message: str) -> None:
        if message not in self._issues:
            self._issues.append(message)

    def decision(self, cwd: str | os.PathLike[str]) -> bool | None:
        """``True``/``False`` when decided, ``None`` when the user would have to be asked."""
        if self.override is not None:
            return self.override
        key = _normalize(cwd)
        if key in self._session:
            return self._session[key]
        if not has_trust_requiring_resources(key, home=self._home):
            return True
        try:
            remembered = self.store.get(key)
        except TrustStoreError as exc:
            self._report(str(exc))
            remembered = None
        if remembered is not None:
            return remembered
        if self.default == "always":
            return True
        if self.default == "never":
            return False
        return None

    def session_decision(self, cwd: str | os.PathLike[str]) -> bool | None:
        """The answer given for *cwd* during this session (remembered or not), if any."""
        return self._session.get(_normalize(cwd))

    def remembered_entry(self, cwd: str | os.PathLike[str]) -> TrustEntry | None:
        """The decision ``trust.json`` holds for *cwd* or its nearest ancestor; a malformed
        file counts as none and is reported in :attr:`issues`."""
        try:
            return self.store.get_entry(cwd)
        except TrustStoreError as exc:
            self._report(str(exc))
            return None

    def is_trusted(self, cwd: str | os.PathLike[str]) -> bool:
        """Whether to load *cwd*'s project resources now; undecided means no.

        Non-interactive modes use this alone and so never prompt.
        """
        return self.decision(cwd) is True

    def needs_prompt(self, cwd: str | os.PathLike[str]) -> bool:
        """Whether interactive mode should ask the user about *cwd*."""
        return self.decision(cwd) is None

    def set_trusted(self, cwd: str | os.PathLike[str], trusted: bool, *, remember: bool = True) -> bool:
        """Record a decision for *cwd*: for this session, and in ``trust.json`` if *remember*.

        :returns: whether the decision was saved (``False`` for session-only decisions and
            when ``trust.json`` is malformed or unwritable, which is reported in :attr:`issues`;
            the decision still holds for this session).
        """
        self._session[_normalize(cwd)] = trusted
        if not remember:
            return False
        return self._save([(cwd, trusted)])

    def _save(self, updates: Sequence[tuple[str | os.PathLike[str], bool | None]]) -> bool:
        try:
            self.store.set_many(updates)
        except TrustStoreError as exc:
            self._report(f"{exc} (the decision holds for this session only)")
            return False
        except OSError as exc:
            self._report(f"Cannot write the trust store {self.store.path}: {exc}")
            return False
        return True

    def options(self, cwd: str | os.PathLike[str], *, include_session_only: bool = True) -> list[TrustOption]:
        """The answers interactive mode offers, in pi's order and with pi's labels."""
        path = _normalize(cwd)
        parent = os.path.dirname(path)
        options = [TrustOption("Trust", True, ((path, True),), path)]
        if parent != path:
            options.append(
                TrustOption(f"Trust parent folder ({parent})", True, ((parent, True), (path, None)), parent)
            )
        if include_session_only:
            options.append(TrustOption("Trust (this session only)", True))
        options.append(TrustOption("Do not trust", False, ((path, False),), path))
        if include_session_only:
            options.append(TrustOption("Do not trust (this session only)", False))
        return options

    def choose(self, cwd: str | os.PathLike[str], option: TrustOption) -> bool:
        """Apply the user's answer: it holds for the session and its updates are saved."""
        self._session[_normalize(cwd)] = option.trusted
        if option.updates:
            self._save(option.updates)
        return option.trusted

    def resolve(
        self,
        cwd: str | os.PathLike[str],
        *,
        ask: Callable[[str, list[TrustOption]], TrustOption | None] | None = None,
    ) -> bool:
        """Decide *cwd*'s trust, asking through *ask* only if undecided and *ask* is given.

        *ask* receives :func:`trust_prompt_text` and :meth:`options`, and returns the chosen
        option or ``None`` (dismissed, which means not trusted for now). Without *ask*
        (non-interactive modes) an undecided project is untrusted.
        """
        decided = self.decision(cwd)
        if decided is not None:
            return decided
        if ask is None:
            return False
        choice = ask(trust_prompt_text(cwd), self.options(cwd))
        if choice is None:
            return False
        return self.choose(cwd, choice)
