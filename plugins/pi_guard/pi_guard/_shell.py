"""Reading a shell command well enough to apply command rules — and knowing when not to trust it.

Command rules are advisory: a shell can always hide what it runs (``eval``, variables,
``$(…)``, aliases, scripts it writes first). This module therefore errs in the safe direction:

- a ``deny`` or ``ask`` rule matches when the whole command *or any simple command in it*
  matches, in its written form or with quotes removed and leading ``VAR=value`` assignments and
  wrappers (``env``, ``sudo``, ``command``, ``nohup`` …) stripped. The simple commands come from
  a bash parser (:mod:`pi_guard._simple`), so those inside subshells, groups, ``if``, loops,
  functions, substitutions and ``sh -c`` scripts count, with program paths reduced to names and
  wrappers such as ``timeout 5`` looked through;
- when the parser cannot read the line (bash syntax it lacks, such as ``case`` or ``[[``), a
  ``deny`` or ``ask`` rule fails closed: it matches when its program is any word of the line;
- an ``allow`` rule only approves a command when *every* simple command in it matches an allow
  rule as written (after quote removal), and the command holds nothing an allow rule cannot see
  through: command or process substitution, a variable as the program, redirection into a file,
  or a line the parser cannot split. Such commands fall through to the mode's default (ask).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from ._simple import mentioned_programs, simple_commands

__all__ = ["ParsedCommand", "parse_command"]

_WRAPPERS = frozenset({"env", "sudo", "doas", "command", "builtin", "exec", "nohup", "time", "nice", "xargs"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_FILE_REDIRECT = re.compile(r"(?<![0-9&<>])(?:[0-9]*|&)>>?\|?(?!&)\s*(\S+)")


@dataclass(frozen=True)
class ParsedCommand:
    """A command line split into simple commands.

    :ivar text: the whole command.
    :ivar parts: the simple commands, as written.
    :ivar opaque: why no allow rule may approve this command (``None`` when allow rules apply).
    :ivar nested: commands found inside ``$(…)``, backticks and process substitutions, parsed.
    :ivar simple: every simple command the bash parser found, however nested (program paths
        reduced to names, wrappers looked through), as words joined by spaces; ``None`` when
        the parser could not read the line.
    """

    text: str
    parts: tuple[str, ...]
    opaque: str | None = None
    nested: tuple[ParsedCommand, ...] = ()
    simple: tuple[str, ...] | None = field(default=())

    @property
    def unparsed(self) -> bool:
        """Whether the bash parser could not read the line: deny rules then fail closed."""
        return self.simple is None

    def mentions(self) -> frozenset[str]:
        """The words that could name a program (for failing closed on an unreadable line)."""
        return mentioned_programs(self.text)

    def deny_forms(self) -> list[str]:
        """Every form a deny or ask rule is tried against."""
        forms = [self.text]
        for part in self.parts:
            forms.append(part)
            words = _words(part)
            if words is not None:
                forms.append(" ".join(words))
                stripped = _strip_prefixes(words)
                if stripped:
                    forms.append(" ".join(stripped))
        for inner in self.nested:
            forms.extend(inner.deny_forms())
        forms.extend(self.simple or ())
        return list(dict.fromkeys(form for form in forms if form.strip()))

    def allow_forms(self) -> list[str] | None:
        """One form per simple command that allow rules must each match; ``None`` when opaque."""
        if self.opaque is not None:
            return None
        forms = []
        for part in self.parts:
            words = _words(part)
            if words is None:
                return None
            forms.append(" ".join(words))
        return forms or None


def _words(part: str) -> list[str] | None:
    try:
        return shlex.split(part, comments=False, posix=True)
    except ValueError:
        return None


def _strip_prefixes(words: list[str]) -> list[str]:
    """Drop leading assignments and wrapper programs (with their options): the program that runs."""
    index = 0
    while index < len(words):
        word = words[index]
        if _ASSIGNMENT.match(word):
            index += 1
        elif word.rsplit("/", 1)[-1] in _WRAPPERS:
            index += 1
            while index < len(words) and words[index].startswith("-"):
                index += 1
        else:
            break
    return words[index:]


def _split(text: str) -> tuple[list[str], str | None]:
    """Split at ``;``, ``&``, ``|``, ``&&``, ``||`` and newlines outside quotes.

    :returns: the simple commands, and the reason the command is opaque (or ``None``).
    """
    parts: list[str] = []
    current: list[str] = []
    opaque: str | None = None
    quote: str | None = None
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if quote == "'":
            current.append(char)
            if char == "'":
                quote = None
            i += 1
            continue
        if char == "\\" and i + 1 < n:
            current.append(text[i : i + 2])
            i += 2
            continue
        if char == "`" or (char == "$" and text[i + 1 : i + 2] == "("):
            opaque = opaque or "it runs a command substitution"
        elif char in "<>" and text[i + 1 : i + 2] == "(" and quote is None:
            opaque = opaque or "it uses process substitution"
        if quote == '"':
            current.append(char)
            if char == '"':
                quote = None
            i += 1
            continue
        if char in "'\"":
            quote = char
            current.append(char)
        elif char in ";&|\n":
            if char == "&" and ((i > 0 and text[i - 1] in "<>") or text[i + 1 : i + 2] == ">"):
                current.append(char)  # 2>&1, &>
            elif char == "|" and text[i - 1 : i] == ">" and i > 0:
                current.append(char)  # >| clobber
            else:
                parts.append("".join(current))
                current = []
                while i + 1 < n and text[i + 1] in "&|":
                    i += 1
        else:
            current.append(char)
        i += 1
    if quote is not None:
        opaque = opaque or "its quotes are not closed"
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()], opaque


def _substitutions(text: str) -> list[str]:
    """The bodies of ``$(…)``, ``<(…)``, ``>(…)`` and backtick substitutions (outermost first)."""
    bodies = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == "`":
            end = text.find("`", i + 1)
            if end == -1:
                bodies.append(text[i + 1 :])
                break
            bodies.append(text[i + 1 : end])
            i = end + 1
            continue
        if text[i] in "$<>" and text[i + 1 : i + 2] == "(":
            depth, j = 1, i + 2
            while j < n and depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            bodies.append(text[i + 2 : j - 1 if depth == 0 else j])
            i = j
            continue
        i += 1
    return bodies


def parse_command(command: str, *, _depth: int = 0) -> ParsedCommand:
    """Split ``command`` into simple commands and note whatever makes allow rules blind to it."""
    parts, opaque = _split(command)
    nested: tuple[ParsedCommand, ...] = ()
    if opaque is not None and _depth < 8:
        nested = tuple(parse_command(body, _depth=_depth + 1) for body in _substitutions(command))
    if opaque is None:
        for part in parts:
            words = _words(part)
            if words is None:
                opaque = "the parser cannot split it into words"
                break
            program = _strip_prefixes(words)
            if program and program[0].startswith("$"):
                opaque = "its program name is a variable"
                break
            if program and program[0] in ("eval", "source", "."):
                opaque = f"it runs code through {program[0]!r}"
                break
            for target in _FILE_REDIRECT.findall(part):
                if target not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
                    opaque = f"it redirects output into {target}"
                    break
            if opaque:
                break
    found = simple_commands(command) if _depth == 0 else []
    simple = None if found is None else tuple(" ".join(words) for words in found)
    return ParsedCommand(text=command, parts=tuple(parts), opaque=opaque, nested=nested, simple=simple)
