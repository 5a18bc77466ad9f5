"""Console sessions in the docs (``$ command`` then expected output), shared by the doc tests."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["console_commands", "expect_lines"]


def console_commands(block: str) -> list[tuple[str, list[str]]]:
    """``$ command`` lines and the output lines expected after each."""
    commands: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands and line.strip():
            commands[-1][1].append(line)
    return commands


def expect_lines(output: str, expected: Sequence[str], where: str) -> None:
    """Each expected line matches an output line, in order; ``...`` matches anything.

    :raises AssertionError: naming ``where`` (the page or command) and the line not found.
    """
    lines = output.splitlines()
    position = 0
    for wanted in expected:
        if wanted.strip() == "...":
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in wanted.split("...")))
        for index in range(position, len(lines)):
            if pattern.fullmatch(lines[index]):
                position = index + 1
                break
        else:
            raise AssertionError(
                f"{where}: no output line matches {wanted!r} after line {position}:\n{output}"
            )
