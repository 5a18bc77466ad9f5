"""Reading the guard's configuration: the ``permissions`` settings and the saved project grants.

Global settings (``<agent dir>/settings.json``) always count; the project's
(``<cwd>/.pi/settings.json``) only when the project is trusted. Rule lists from both files are
combined (a project cannot drop a global ``deny``); for single values the project wins.

"Always allow in this project" answers are saved in ``<agent dir>/guard-grants.json``, keyed
by the project's real path: they belong to the user, not to the repository, so a cloned
project can never arrive with approvals already given.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pi_host import SettingsManager, agent_dir

from ._policy import Mode, Policy, normalize_mode, project_root
from ._rules import Decision, Rule, RuleError, RuleScope, parse_rule

__all__ = ["GRANTS_FILE_NAME", "GrantStore", "GuardSettings", "load_settings"]

GRANTS_FILE_NAME = "guard-grants.json"
SECTION = "permissions"


@dataclass
class GuardSettings:
    """The ``permissions`` configuration in force for a session.

    :ivar configured: whether any settings file has a ``permissions`` section.
    :ivar mode: the mode the settings choose (``defaultMode``), ``None`` when unset.
    :ivar rules: rules from the settings files, then saved grants.
    :ivar non_interactive: what "ask" becomes in print and JSON modes.
    :ivar ask_timeout: seconds a prompt waits before it counts as a denial (``None``: forever).
    :ivar audit: ``"decisions"`` records prompts, denials and changes; ``"all"`` also every allow.
    :ivar problems: settings problems, reported to the user once.
    """

    configured: bool = False
    mode: Mode | None = None
    rules: list[Rule] = field(default_factory=list)
    non_interactive: Literal["deny", "allow"] = "deny"
    ask_timeout: float | None = None
    audit: Literal["decisions", "all"] = "decisions"
    extra_dirs: tuple[str, ...] = ()
    read_only_tools: frozenset[str] = frozenset()
    problems: list[str] = field(default_factory=list)

    def policy(self, mode: Mode, cwd: str) -> Policy:
        return Policy(
            rules=list(self.rules),
            mode=mode,
            project_dir=project_root(cwd),
            extra_dirs=self.extra_dirs,
            read_only_tools=self.read_only_tools,
        )


def _rules_from(
    section: Mapping[str, Any], scope: RuleScope, cwd: str, where: str, problems: list[str]
) -> list[Rule]:
    rules: list[Rule] = []
    decisions: tuple[Decision, ...] = ("deny", "ask", "allow")
    for decision in decisions:
        entries = section.get(decision, [])
        if not isinstance(entries, list):
            problems.append(
                f'{where}: permissions.{decision} must be a list of rules like "bash(git status)"'
            )
            continue
        for text in entries:
            try:
                rules.append(parse_rule(text, decision, scope, project_root(cwd)))
            except RuleError as exc:
                problems.append(f"{where}: permissions.{decision}: {exc}")
    return rules


def _section(data: Mapping[str, Any], where: str, problems: list[str]) -> dict[str, Any] | None:
    section = data.get(SECTION)
    if section is None:
        return None
    if not isinstance(section, dict):
        problems.append(f"{where}: permissions must be an object; it is ignored")
        return None
    return section


def load_settings(cwd: str, *, trusted: bool, root: str | os.PathLike[str] | None = None) -> GuardSettings:
    """Read ``permissions`` from the global and (when ``trusted``) the project settings, and the grants."""
    root_path = Path(root) if root is not None else agent_dir()
    manager = SettingsManager.load(cwd, root_path, project_trusted=trusted)
    result = GuardSettings()
    # Unreadable files and bad pi-host values are pi-host's to report (once, in every mode);
    # the guard reports only its own section's problems.
    problems = result.problems
    scopes: list[tuple[RuleScope, str]] = [("global", str(manager.global_path))]
    if trusted:
        scopes.append(("project", str(manager.project_path)))
    extra_dirs: list[str] = []
    read_only: set[str] = set()
    for scope, where in scopes:
        section = _section(manager.raw("global" if scope == "global" else "project"), where, problems)
        if section is None:
            continue
        result.configured = True
        result.rules.extend(_rules_from(section, scope, cwd, where, problems))
        raw_mode = section.get("defaultMode", section.get("mode"))
        if raw_mode is not None:
            mode = normalize_mode(raw_mode)
            if mode is None:
                problems.append(
                    f"{where}: permissions.defaultMode {raw_mode!r} is not a mode; "
                    'use "default", "read-only", "accept-edits" or "yolo"'
                )
            else:
                result.mode = mode
        non_interactive = section.get("nonInteractive")
        if non_interactive in ("deny", "allow"):
            result.non_interactive = non_interactive
        elif non_interactive is not None:
            problems.append(f'{where}: permissions.nonInteractive must be "deny" or "allow"')
        timeout = section.get("askTimeout")
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
            result.ask_timeout = float(timeout)
        elif timeout is not None:
            problems.append(f"{where}: permissions.askTimeout must be a positive number of seconds")
        audit = section.get("audit")
        if audit in ("decisions", "all"):
            result.audit = audit
        elif audit is not None:
            problems.append(f'{where}: permissions.audit must be "decisions" or "all"')
        for directory in section.get("additionalDirectories", []) or []:
            if isinstance(directory, str):
                expanded = os.path.expanduser(directory)
                extra_dirs.append(os.path.realpath(os.path.join(cwd, expanded)))
        for name in section.get("readOnlyTools", []) or []:
            if isinstance(name, str):
                read_only.add(name)
    result.extra_dirs = tuple(extra_dirs)
    result.read_only_tools = frozenset(read_only)
    store = GrantStore(root_path / GRANTS_FILE_NAME)
    for text in store.load(cwd, problems):
        try:
            result.rules.append(parse_rule(text, "allow", "grant", project_root(cwd)))
        except RuleError as exc:
            problems.append(f"{store.path}: {exc}")
    return result


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(str(path) + ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class GrantStore:
    """The user's saved "always allow in this project" rules, one list per project."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"version": 1, "projects": {}}
        if not isinstance(data, dict) or not isinstance(data.get("projects"), dict):
            raise ValueError('it does not hold {"projects": {...}}')
        return data

    def load(self, cwd: str, problems: list[str]) -> list[str]:
        try:
            data = self._read()
        except (OSError, ValueError) as exc:
            problems.append(f"{self.path}: cannot read saved grants ({exc}); fix or delete the file")
            return []
        entries = data["projects"].get(project_root(cwd), [])
        return [text for text in entries if isinstance(text, str)] if isinstance(entries, list) else []

    def add(self, cwd: str, rule_text: str) -> None:
        """Save a grant for the project (idempotent).

        :raises OSError: when the file cannot be written.
        :raises ValueError: when the file exists but is not a grants file (it is left alone).
        """
        with _locked(self.path):
            data = self._read()
            entries = data["projects"].setdefault(project_root(cwd), [])
            if rule_text not in entries:
                entries.append(rule_text)
            handle, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".guard-grants.", suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(data, out, indent=2, ensure_ascii=False)
                    out.write("\n")
                os.replace(temp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
