"""Every simple command a shell line runs, found with a real bash parser (``bashlex``).

Deny and ask rules must see ``cat f`` in ``/bin/cat f``, ``(cat f)``, ``{ cat f; }``,
``if true; then cat f; fi``, loops, functions, ``$(cat f)``, ``sh -c 'cat f'`` and
``timeout 5 cat f``. The parser gives the tree; this module walks it, reduces each program path
to its name, looks through the common wrappers (with their own options and arguments) and
recurses into the scripts given to ``sh -c``, ``bash -lc``, ``eval`` and ``env -S``.

bashlex does not know every bash construct (``case``, ``[[ … ]]``, ``$(( … ))``, the ``time``
keyword, ``select``, ``coproc``). For such a line :func:`simple_commands` returns ``None`` and
the caller fails closed: see :func:`mentioned_programs`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

__all__ = ["mentioned_programs", "simple_commands"]

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
# Wrappers: options that take a value, and how many plain words come before the command.
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "-o"}), 0),
    "nice": (frozenset({"-n"}), 0),
    "timeout": (frozenset({"-s", "-k"}), 1),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "sudo": (frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "-C", "-S"}), 0),
    "xargs": (frozenset({"-a", "-d", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "-P", "-s"}), 0),
    "setsid": (frozenset(), 0),
    "ionice": (frozenset({"-c", "-n", "-p", "-P", "-u"}), 0),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset(), 1),
    "flock": (frozenset({"-w", "-E", "-c"}), 1),
    "unbuffer": (frozenset(), 0),
    "watch": (frozenset({"-n", "-d"}), 0),
}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_MAX_DEPTH = 8


def _bashlex() -> Any:
    # Imported on first use: building its parser tables takes a good part of a second, which
    # loading the plugin must not pay (most runs check no shell command, or check it later).
    import bashlex  # type: ignore[import-untyped]

    return bashlex


def _children(node: object) -> Iterator[object]:
    node_type = _bashlex().ast.node
    for value in vars(node).values():
        if isinstance(value, node_type):
            yield value
        elif isinstance(value, list):
            yield from (item for item in value if isinstance(item, node_type))


def _program(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _unwrap(words: list[str], depth: int, found: list[list[str]]) -> None:
    """Record ``words`` (one simple command) and the commands its wrappers and shells run."""
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words:
        return
    program = _program(words[0])
    found.append([program, *words[1:]])
    if words[0] != program:
        found.append(words)  # the written path too, for rules that name it
    if depth >= _MAX_DEPTH:
        return
    rest = words[1:]
    if program in _SHELLS:
        script = _shell_script(rest)
        if script is not None:
            _parse_into(script, depth + 1, found)
        return
    if program == "eval":
        _parse_into(" ".join(rest), depth + 1, found)
        return
    wrapper = _WRAPPERS.get(program)
    if wrapper is None:
        return
    with_value, positional = wrapper
    index = 0
    while index < len(rest):
        word = rest[index]
        if word == "--":
            index += 1
            break
        if program == "env" and _ASSIGNMENT.match(word):
            index += 1
            continue
        if not word.startswith("-") or word == "-":
            break
        if program == "env" and word in ("-S", "--split-string") and index + 1 < len(rest):
            _parse_into(rest[index + 1], depth + 1, found)
        if program == "nice" and word[1:].isdigit():
            index += 1
            continue
        name = word.split("=", 1)[0]
        # ``-n 5`` takes the next word; ``-n5``, ``--opt=value`` and flags do not.
        index += 2 if name in with_value and "=" not in word and len(word) == 2 else 1
    index += positional
    if index < len(rest):
        _unwrap(rest[index:], depth + 1, found)


def _shell_script(args: list[str]) -> str | None:
    """The script of ``sh -c SCRIPT`` (also ``-lc``, ``-ec``, ``-o opt -c``), if any."""
    for index, word in enumerate(args):
        if word == "--" or not word.startswith(("-", "+")):
            return None
        if not word.startswith("--") and "c" in word[1:]:
            following = [w for w in args[index + 1 :] if not w.startswith(("-", "+"))]
            return following[0] if following else None
    return None


def _walk(node: object, depth: int, found: list[list[str]]) -> None:
    kind = getattr(node, "kind", None)
    if kind == "command":
        words = [part.word for part in node.parts if part.kind == "word"]  # type: ignore[attr-defined]
        _unwrap(words, depth, found)
    for child in _children(node):
        _walk(child, depth, found)


def _parse_into(text: str, depth: int, found: list[list[str]]) -> None:
    commands = _simple(text, depth)
    if commands is None:
        # A nested script the parser cannot read: its words still count as one command,
        # and the caller's fail-closed check sees them through the outer text.
        found.append(text.split())
    else:
        found.extend(commands)


def _simple(text: str, depth: int) -> list[list[str]] | None:
    try:
        trees = _bashlex().parse(text)
    except Exception:  # bashlex raises errors of several kinds, NotImplementedError among them
        return None
    found: list[list[str]] = []
    for tree in trees:
        _walk(tree, depth, found)
    return found


def simple_commands(text: str) -> list[list[str]] | None:
    """The words of every simple command ``text`` runs, however nested; ``None`` when bash
    syntax the parser does not know makes the line unreadable.

    Program paths are reduced to names (``/bin/cat`` → ``cat``, the written path is kept as
    a second entry), leading ``VAR=value`` words dropped, and the command behind a wrapper
    (``timeout 5 cat f`` → ``cat f``) or inside ``sh -c`` / ``eval`` added as its own entry.
    """
    if not text.strip():
        return []
    return _simple(text, 0)


_TOKEN = re.compile(r"[^\s;&|()<>`'\"$={}\[\]!]+")


def mentioned_programs(text: str) -> frozenset[str]:
    """Every word of ``text`` that could name a program (paths reduced to names): what a
    deny rule is checked against, failing closed, when the line cannot be parsed."""
    return frozenset(_program(token) for token in _TOKEN.findall(text))
