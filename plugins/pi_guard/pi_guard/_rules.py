"""Permission rules: ``tool`` or ``tool(specifier)``, as written in ``permissions.allow|ask|deny``.

The syntax follows Claude Code's rules so existing lists mostly carry over:

- ``bash``, ``write``, ``mcp_search`` — every call of that tool (names compare case-insensitively,
  so ``Bash`` works); ``*`` is every tool, and ``*`` in a name is a wildcard. MCP tools
  (pi-mcp's ``mcp__server__tool``) take Claude Code's forms: ``mcp__server`` or
  ``mcp__server__*`` for every tool of a server, ``mcp__server__tool`` for one.
- ``read(PATH-GLOB)`` — file tools by path. ``read`` rules also cover ``grep``, ``find`` and ``ls``
  (they read too), ``edit`` and ``write`` rules cover both ``edit`` and ``write``; any other
  tool with a ``path`` argument takes path rules under its own name.
- ``bash(COMMAND-PATTERN)`` — shell commands: ``*`` matches anything, a trailing ``:*`` means
  "this command, with any arguments" (``bash(npm run test:*)``).

Path globs, matched against the resolved real path (see :mod:`pi_guard._paths`):

- ``/abs/**`` absolute, ``~/x`` under the home directory, ``./x`` or any pattern holding a
  ``/`` relative to the project (the working directory), a pattern without ``/`` (``.env``,
  ``*.pem``) matches that name at any depth anywhere;
- ``*`` and ``?`` stay within one path segment, ``**`` crosses segments, ``[abc]`` is a class;
- a rule matching a directory covers everything below it (``deny: ["edit(/etc)"]``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Literal, TypeAlias

from ._paths import expand_user_path

__all__ = [
    "EDIT_TOOLS",
    "READ_TOOLS",
    "Decision",
    "PathGlob",
    "Rule",
    "RuleError",
    "RuleScope",
    "ancestors",
    "compile_path_glob",
    "escape_pattern",
    "parse_rule",
    "rule_covers_tool",
]

Decision: TypeAlias = Literal["allow", "ask", "deny"]
RuleScope: TypeAlias = Literal["global", "project", "grant", "session"]

READ_TOOLS = frozenset({"read", "grep", "find", "ls"})
"""The built-in tools that only read; ``read(...)`` rules cover them all."""

EDIT_TOOLS = frozenset({"edit", "write"})
"""The built-in tools that change files; ``edit(...)`` and ``write(...)`` rules cover both."""

_RULE = re.compile(r"^\s*([A-Za-z0-9_*][A-Za-z0-9_:.\-*]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)


class RuleError(ValueError):
    """A rule string that cannot be parsed; the message names it and says what is expected."""


def rule_covers_tool(rule_tool: str, tool_name: str) -> bool:
    """Whether a rule written for ``rule_tool`` applies to calls of ``tool_name``."""
    rule_tool, tool_name = rule_tool.lower(), tool_name.lower()
    if rule_tool in ("*", tool_name):
        return True
    if rule_tool.startswith("mcp__"):
        # Claude Code's MCP rules: ``mcp__server`` is every tool of that server, and
        # ``mcp__server__*`` (any ``*`` pattern) matches tool names.
        if rule_tool.count("__") == 1 and "*" not in rule_tool:
            return tool_name.startswith(rule_tool + "__")
        return fnmatchcase(tool_name, rule_tool.replace("[", "[[]"))
    if "*" in rule_tool:
        return fnmatchcase(tool_name, rule_tool.replace("[", "[[]"))
    if rule_tool == "read":
        return tool_name in READ_TOOLS
    if rule_tool in EDIT_TOOLS:
        return tool_name in EDIT_TOOLS
    return False


def _glob_to_regex(pattern: str) -> str:
    """A glob as a regular expression over a whole path (``**`` crosses ``/``, ``*`` does not)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            if pattern.startswith("**", i):
                i += 2
                if i < n and pattern[i] == "/":
                    out.append("(?:.*/)?")  # "**/" is zero or more whole segments
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))  # "\*" is a literal star
            i += 1
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _static_prefix(pattern: str) -> tuple[str, str]:
    """Split an absolute glob into its literal directory prefix and the rest."""
    parts = pattern.split("/")
    for index, part in enumerate(parts):
        if any(c in part for c in "*?["):
            return "/".join(parts[:index]) or "/", "/".join(parts[index:])
    return pattern, ""


@dataclass(frozen=True)
class PathGlob:
    """A compiled path pattern.

    :ivar expressions: regular expressions over a whole absolute path.
    :ivar bases: the literal directories an anchored pattern starts from (empty when the
        pattern matches a name anywhere).
    """

    expressions: tuple[re.Pattern[str], ...]
    bases: tuple[str, ...] = ()


def compile_path_glob(pattern: str, project_dir: str, *, home: str | None = None) -> PathGlob:
    """Compile a path rule's glob into the regular expressions a real path is matched with.

    An anchored pattern yields two expressions: one as written and one with its literal
    prefix resolved through symlinks, so ``/tmp/x`` still matches when ``/tmp`` is a link.

    :raises RuleError: for an empty pattern.
    """
    text = pattern.strip()
    if not text:
        raise RuleError("an empty path pattern matches nothing; write a glob like 'src/**' or '.env'")
    text = expand_user_path(text, home)
    if text.endswith("/") and len(text) > 1:
        text = text.rstrip("/")
    anchored = text.startswith("/") or "/" in text
    if not anchored:
        return PathGlob((re.compile("(?:.*/)?" + _glob_to_regex(text)),))
    if not text.startswith("/"):
        text = os.path.join(project_dir, text[2:] if text.startswith("./") else text)
    prefix, rest = _static_prefix(text)
    written = os.path.normpath(prefix)
    resolved = os.path.realpath(prefix)
    bases = tuple(dict.fromkeys((written, resolved)))
    expressions = []
    for base in bases:
        full = base if not rest else (base.rstrip("/") + "/" + rest)
        expressions.append(re.compile(_glob_to_regex(full)))
    return PathGlob(tuple(expressions), bases)


def ancestors(path: str) -> list[str]:
    """``path`` and each directory above it, up to ``/``."""
    found = [path]
    index = len(path)
    while True:
        index = path.rfind("/", 0, index)
        if index <= 0:
            break
        found.append(path[:index])
    if path != "/" and path.startswith("/"):
        found.append("/")
    return found


def _command_body(text: str) -> str:
    """A command pattern as a regex body: ``*`` is anything, ``\\x`` is a literal ``x``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            out.append(re.escape(text[i + 1]))
            i += 2
            continue
        out.append(".*" if char == "*" else re.escape(char))
        i += 1
    return "".join(out)


def _command_regex(pattern: str) -> re.Pattern[str]:
    text = " ".join(pattern.split())
    if text.endswith(":*") and not text.endswith("\\:*"):
        return re.compile(_command_body(text[:-2]) + r"(?:\s.*)?", re.DOTALL)
    return re.compile(_command_body(text), re.DOTALL)


def escape_pattern(text: str) -> str:
    """``text`` as a pattern matching only itself (for grants of one exact path or command)."""
    return re.sub(r"([\\*?\[\]])", r"\\\1", text)


@dataclass(frozen=True)
class Rule:
    """One parsed rule.

    :ivar text: the rule as written (what messages and the audit trail show).
    :ivar decision: ``allow``, ``ask`` or ``deny``.
    :ivar tool: the tool name (lowercase) or ``*``.
    :ivar specifier: the text inside the parentheses, ``None`` for a whole-tool rule.
    :ivar scope: where the rule came from: global or project settings, a saved project grant,
        or a grant for this session.
    """

    text: str
    decision: Decision
    tool: str
    specifier: str | None
    scope: RuleScope
    _paths: PathGlob | None = field(default=None, repr=False, compare=False)
    _command: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    def covers(self, tool_name: str) -> bool:
        return rule_covers_tool(self.tool, tool_name)

    @property
    def whole_tool(self) -> bool:
        return self.specifier is None or self.specifier.strip() in ("", "*", "**")

    def matches_path(self, candidates: Sequence[str]) -> bool:
        """Whether any candidate path (or a directory above it) matches the rule's glob."""
        return self.matches_any(path for candidate in candidates for path in ancestors(candidate))

    def matches_any(self, paths: Iterable[str]) -> bool:
        """Whether any of ``paths`` (taken as they are, ancestors already included) matches."""
        if self._paths is None:
            return self.whole_tool
        expressions = self._paths.expressions
        return any(expression.fullmatch(path) for path in paths for expression in expressions)

    def path_inside(self, directory: str) -> bool:
        """Whether the rule protects ``directory`` itself or something below it (a search root)."""
        if self._paths is None:
            return self.whole_tool
        root = directory.rstrip("/") or "/"
        prefix = root.rstrip("/") + "/"
        return any(base == root or base.startswith(prefix) for base in self._paths.bases)

    def command_program(self) -> str | None:
        """The program a ``bash(…)`` rule names (its first word, when plain), else ``None``."""
        if self._command is None or self.specifier is None:
            return None
        words = self.specifier.split()
        first = words[0] if words else ""
        if first.endswith(":*"):
            first = first[:-2]
        if not first or any(ch in first for ch in "*?[]\\"):
            return None
        return first.rsplit("/", 1)[-1]

    def matches_command(self, command: str) -> bool:
        if self._command is None:
            return self.whole_tool
        return self._command.fullmatch(" ".join(command.split())) is not None


def parse_rule(
    text: str, decision: Decision, scope: RuleScope, project_dir: str, *, home: str | None = None
) -> Rule:
    """Parse one rule string.

    :raises RuleError: when ``text`` is not ``tool`` or ``tool(specifier)``.
    """
    if not isinstance(text, str):
        raise RuleError(f'rule {text!r} is not a string; write rules like "bash(git status)" or "read(.env)"')
    match = _RULE.match(text)
    if match is None:
        raise RuleError(
            f"cannot parse rule {text!r}: write a tool name, optionally with a pattern in "
            f'parentheses, like "bash(git status:*)" or "edit(src/**)"'
        )
    tool = match.group(1).lower()
    specifier = match.group(2)
    paths: PathGlob | None = None
    command = None
    if specifier is not None and not specifier.strip():
        raise RuleError(
            f"rule {text!r} has an empty pattern; write {tool!r} alone for every call of the tool, "
            f"or a pattern like {tool}(src/**)"
        )
    if specifier is not None and specifier.strip() not in ("*", "**"):
        if tool == "bash":
            command = _command_regex(specifier)
        else:
            paths = compile_path_glob(specifier, project_dir, home=home)
    return Rule(
        text=text.strip(),
        decision=decision,
        tool=tool,
        specifier=specifier,
        scope=scope,
        _paths=paths,
        _command=command,
    )
