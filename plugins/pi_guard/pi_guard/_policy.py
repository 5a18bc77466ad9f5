"""The decision for one tool call: rules, grants and the permission mode, in a fixed order.

Order (the first step that decides wins):

1. ``deny`` rules — in every mode, against every spelling of every path the call touches,
   and against every part of a shell command;
2. the ``read-only`` mode refuses every tool that is not read-only;
3. grants the user gave from a prompt (this session, or saved for the project) and ``allow``
   rules approve — unless the call holds look-alike characters;
4. ``ask`` rules ask (``yolo`` allows instead);
5. the mode's default: reads are allowed; ``accept-edits`` allows edits inside the project;
   ``yolo`` allows everything; anything else asks.

A call whose path holds look-alike or invisible characters is never approved silently
(steps 3 and 5 ask instead, except in ``yolo``); ``deny`` rules are matched against the
skeleton of such paths, so ``.env`` spelt with a Cyrillic ``e`` (U+0435) is caught by a rule
about ``.env``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ._paths import ResolvedPath, resolve_target
from ._rules import EDIT_TOOLS, READ_TOOLS, Decision, Rule
from ._shell import ParsedCommand, parse_command

__all__ = [
    "MODES",
    "CallTarget",
    "Mode",
    "Policy",
    "Verdict",
    "describe_call",
    "normalize_mode",
    "project_root",
    "targets_of",
]

Mode: TypeAlias = Literal["default", "read-only", "accept-edits", "yolo"]
MODES: tuple[Mode, ...] = ("default", "read-only", "accept-edits", "yolo")

_MODE_ALIASES: dict[str, Mode] = {
    "default": "default",
    "read-only": "read-only",
    "readonly": "read-only",
    "plan": "read-only",
    "accept-edits": "accept-edits",
    "acceptedits": "accept-edits",
    "yolo": "yolo",
    "bypasspermissions": "yolo",
}


def normalize_mode(value: object) -> Mode | None:
    """A mode name, also in Claude Code's spelling (``acceptEdits``, ``plan``, ``bypassPermissions``)."""
    if not isinstance(value, str):
        return None
    return _MODE_ALIASES.get(value.strip().lower().replace("_", "-"))


@dataclass(frozen=True)
class CallTarget:
    """What one tool call touches: paths, a shell command, or nothing rules can see."""

    paths: tuple[ResolvedPath, ...] = ()
    command: ParsedCommand | None = None
    search: bool = False  # grep/find/ls: the path is a directory whose whole tree is read


@dataclass(frozen=True)
class Verdict:
    """The decision for a call and why.

    :ivar decision: ``allow``, ``ask`` or ``deny``.
    :ivar reason: a sentence for the model (denials) or the user (prompts).
    :ivar rule: the rule that decided, if one did.
    :ivar basis: what decided: ``rule``, ``grant``, ``mode`` or ``unicode``.
    """

    decision: Decision
    reason: str
    rule: Rule | None = None
    basis: Literal["rule", "grant", "mode", "unicode"] = "mode"


_PATH_KEYS = ("path",)


def targets_of(tool_name: str, args: Mapping[str, Any], cwd: str, *, home: str | None = None) -> CallTarget:
    """Resolve what a call touches from its (validated) arguments."""
    if tool_name == "bash":
        command = args.get("command")
        return CallTarget(command=parse_command(command if isinstance(command, str) else ""))
    paths = []
    for key in _PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            paths.append(resolve_target(value, cwd, home=home, read_variants=tool_name == "read"))
        elif value is None and tool_name in ("grep", "find", "ls"):
            paths.append(resolve_target(".", cwd, home=home))
    return CallTarget(paths=tuple(paths), search=tool_name in ("grep", "find", "ls"))


def describe_call(tool_name: str, target: CallTarget) -> str:
    """``write on "/x/y"``, ``bash "git push"``, ``mytool`` — for prompts and messages."""
    if target.command is not None:
        text = target.command.text
        shown = text if len(text) <= 200 else text[:197] + "..."
        return f'{tool_name} "{shown}"'
    if target.paths:
        return f'{tool_name} on "{target.paths[0].shown}"'
    return tool_name


def _scope_words(rule: Rule) -> str:
    return {
        "global": "the global settings",
        "project": "the project settings",
        "grant": "your saved grants for this project",
        "session": "this session's grants",
    }[rule.scope]


@dataclass
class Policy:
    """Rules and mode for one session; :meth:`decide` judges a call.

    :ivar rules: every rule, in the order read (deny, ask and allow mixed).
    :ivar mode: the permission mode.
    :ivar project_dir: the project root (the session's working directory), real path.
    :ivar extra_dirs: more directories where ``accept-edits`` allows edits.
    :ivar read_only_tools: tools besides the built-in readers that only read.
    """

    rules: list[Rule] = field(default_factory=list)
    mode: Mode = "default"
    project_dir: str = "/"
    extra_dirs: tuple[str, ...] = ()
    read_only_tools: frozenset[str] = frozenset()

    _by_tool: dict[tuple[Decision, str, int], list[Rule]] = field(default_factory=dict, repr=False)

    def _rules(self, decision: Decision, tool_name: str) -> list[Rule]:
        key = (decision, tool_name, len(self.rules))  # rules are only ever appended
        found = self._by_tool.get(key)
        if found is None:
            found = [r for r in self.rules if r.decision == decision and r.covers(tool_name)]
            self._by_tool[key] = found
        return found

    def is_read_only(self, tool_name: str) -> bool:
        return tool_name in READ_TOOLS or tool_name in self.read_only_tools

    def _inside_project(self, path: ResolvedPath) -> bool:
        roots = (self.project_dir, *self.extra_dirs)
        return all(
            any(candidate == root or candidate.startswith(root.rstrip("/") + "/") for root in roots)
            for candidate in (path.real, path.lexical, *path.variants)
        )

    def _first_match(
        self, rules: Sequence[Rule], tool_name: str, target: CallTarget, *, allow: bool, exact: bool = False
    ) -> Rule | None:
        if target.command is not None:
            if exact:
                # a grant names one whole command line, exactly as the user approved it
                return next((r for r in rules if r.matches_command(target.command.text)), None)
            if allow:
                forms = target.command.allow_forms()
                if forms is None:
                    return None
                # every simple command must be approved; report the first rule that did
                first: Rule | None = None
                for form in forms:
                    rule = next((r for r in rules if r.matches_command(form)), None)
                    if rule is None:
                        return None
                    first = first or rule
                return first
            forms = target.command.deny_forms()
            found = next((r for r in rules if any(r.matches_command(form) for form in forms)), None)
            if found is None and target.command.unparsed:
                # Fail closed: a line the parser cannot read matches a deny or ask rule whose
                # program appears anywhere in it.
                mentions = target.command.mentions()
                found = next((r for r in rules if r.command_program() in mentions), None)
            return found
        if target.paths:
            for rule in rules:
                if allow:
                    # an allow rule must hold for every spelling of every path
                    if all(rule.matches_any(a) for p in target.paths for a in p.ancestries):
                        return rule
                elif any(rule.matches_any(p.all_ancestry) for p in target.paths) or (
                    target.search and any(rule.path_inside(p.real) for p in target.paths)
                ):
                    return rule
            return None
        return next((r for r in rules if r.whole_tool), None)

    def decide(self, tool_name: str, target: CallTarget) -> Verdict:
        """Judge one call (see the module docstring for the order)."""
        what = describe_call(tool_name, target)
        suspicious = [s for p in target.paths for s in p.suspicious]

        deny = self._first_match(self._rules("deny", tool_name), tool_name, target, allow=False)
        if deny is not None:
            return Verdict(
                "deny",
                f'{what} is blocked by the deny rule "{deny.text}" in {_scope_words(deny)}',
                deny,
                "rule",
            )

        if self.mode == "read-only" and not self.is_read_only(tool_name):
            return Verdict(
                "deny",
                f"{what} is not allowed: the session is in read-only mode, which allows only "
                f"tools that read ({', '.join(sorted(READ_TOOLS | self.read_only_tools))})",
            )

        if suspicious and self.mode != "yolo":
            return Verdict(
                "ask",
                f"{what}: the path holds characters that imitate others or are invisible "
                f"({', '.join(dict.fromkeys(suspicious))})",
                basis="unicode",
            )

        allow_rules = self._rules("allow", tool_name)
        granted = [r for r in allow_rules if r.scope in ("session", "grant")]
        grant = self._first_match(granted, tool_name, target, allow=True, exact=True)
        if grant is not None:
            return Verdict(
                "allow", f'{what} is allowed by "{grant.text}" in {_scope_words(grant)}', grant, "grant"
            )

        ask = self._first_match(self._rules("ask", tool_name), tool_name, target, allow=False)
        if ask is not None:
            if self.mode == "yolo":
                return Verdict("allow", f'{what} is allowed: yolo mode overrides the ask rule "{ask.text}"')
            return Verdict(
                "ask", f'{what} needs approval: ask rule "{ask.text}" in {_scope_words(ask)}', ask, "rule"
            )

        configured = [r for r in allow_rules if r.scope not in ("session", "grant")]
        allow = self._first_match(configured, tool_name, target, allow=True)
        if allow is not None:
            return Verdict(
                "allow", f'{what} is allowed by "{allow.text}" in {_scope_words(allow)}', allow, "rule"
            )

        return self._mode_default(tool_name, target, what)

    def _mode_default(self, tool_name: str, target: CallTarget, what: str) -> Verdict:
        if self.mode == "yolo":
            return Verdict("allow", f"{what} is allowed: yolo mode")
        if self.is_read_only(tool_name):
            return Verdict("allow", f"{what} is allowed: reading needs no approval in {self.mode} mode")
        if (
            self.mode == "accept-edits"
            and tool_name in EDIT_TOOLS
            and target.paths
            and all(self._inside_project(p) for p in target.paths)
        ):
            return Verdict("allow", f"{what} is allowed: accept-edits mode allows edits inside the project")
        if self.mode == "accept-edits" and tool_name in EDIT_TOOLS:
            return Verdict("ask", f"{what} needs approval: it is outside the project ({self.project_dir})")
        if target.command is not None and target.command.opaque is not None:
            return Verdict("ask", f"{what} needs approval ({target.command.opaque})")
        return Verdict("ask", f"{what} needs approval in {self.mode} mode")


def project_root(cwd: str) -> str:
    """The directory project-relative rules and ``accept-edits`` refer to: the real working directory."""
    return os.path.realpath(cwd)
