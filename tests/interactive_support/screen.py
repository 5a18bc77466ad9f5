"""A small VT100 screen model, enough to read what prompt_toolkit and rich draw.

It keeps a grid of cells plus the lines scrolled off the top, understands cursor movement,
erasing, line feeds with scrolling, auto-wrap, wide characters and OSC strings (the window
title, OSC 52 clipboard writes). Of the colours it keeps only each cell's background, which is how
a menu shows its highlighted entry. ``pyte`` would do the same job; it is not
a dependency of the project, and the escape sequences prompt_toolkit emits are few.
"""

from __future__ import annotations

import re

from rich.cells import cell_len

_CSI = re.compile(r"\x1b\[([0-9;?<=>]*)([ -/]*)([@-~])")
_OSC = re.compile(r"\x1b\]([^\x07\x1b]*)(?:\x07|\x1b\\)")


class Screen:
    """Feed terminal output with :meth:`feed`; read it back with :meth:`display` / :meth:`text`."""

    def __init__(self, rows: int, columns: int) -> None:
        self.rows = rows
        self.columns = columns
        self.grid = [[" "] * columns for _ in range(rows)]
        self.backgrounds: list[list[str | None]] = [[None] * columns for _ in range(rows)]
        self.background: str | None = None  # SGR background in force: "5;24", "2;0;95;135", "44"
        self.history: list[str] = []
        self.row = 0
        self.column = 0
        self.autowrap = True
        self.pending_wrap = False
        self.titles: list[str] = []
        self.clipboard: list[str] = []
        self._saved = (0, 0)
        self._tail = ""  # an escape sequence split across reads

    # -- reading -------------------------------------------------------------------------------

    def display(self) -> list[str]:
        return ["".join(cell for cell in line).rstrip() for line in self.grid]

    def text(self) -> str:
        """Scrollback and screen, one string."""
        return "\n".join([*self.history, *self.display()])

    def screen_text(self) -> str:
        return "\n".join(self.display())

    def text_on_background(self, background: str) -> list[str]:
        """Per screen line, the characters drawn on ``background`` (lines without any left out)."""
        out = []
        for cells, backgrounds in zip(self.grid, self.backgrounds, strict=True):
            text = "".join(cell for cell, bg in zip(cells, backgrounds, strict=True) if bg == background)
            if text:
                out.append(text)
        return out

    def resize(self, rows: int, columns: int) -> None:
        """The window changed size: cells beyond the new edge are lost, as in a terminal that
        does not reflow (a program that wants its text back must draw it again)."""
        shift = max(self.rows - rows, 0)  # fewer rows: the top ones scroll off
        self.history += ["".join(line).rstrip() for line in self.grid[:shift]]
        self.grid = [(line + [" "] * columns)[:columns] for line in self.grid[shift:]]
        self.backgrounds = [(line + [None] * columns)[:columns] for line in self.backgrounds[shift:]]
        while len(self.grid) < rows:
            self.grid.append([" "] * columns)
            self.backgrounds.append([None] * columns)
        self.row = min(max(self.row - shift, 0), rows - 1)
        self.column = min(self.column, columns - 1)
        self.rows, self.columns = rows, columns
        self.pending_wrap = False

    # -- writing -------------------------------------------------------------------------------

    def feed(self, data: str) -> None:
        data = self._tail + data
        self._tail = ""
        index = 0
        length = len(data)
        while index < length:
            char = data[index]
            if char == "\x1b":
                if index + 1 >= length:
                    self._tail = data[index:]
                    return
                following = data[index + 1]
                if following == "[":
                    match = _CSI.match(data, index)
                    if match is None:
                        if re.fullmatch(r"\x1b\[[0-9;?<=>]*[ -/]*", data[index:]):
                            self._tail = data[index:]
                            return
                        index += 2
                        continue
                    self._csi(match.group(1), match.group(3))
                    index = match.end()
                    continue
                if following == "]":
                    match = _OSC.match(data, index)
                    if match is None:
                        self._tail = data[index:]
                        return
                    self._osc(match.group(1))
                    index = match.end()
                    continue
                if following == "7":
                    self._saved = (self.row, self.column)
                elif following == "8":
                    self.row, self.column = self._saved
                index += 2
                continue
            if char == "\r":
                self.column = 0
                self.pending_wrap = False
            elif char == "\n":
                self._line_feed()
            elif char == "\b":
                self.column = max(0, self.column - 1)
                self.pending_wrap = False
            elif char == "\t":
                self.column = min(self.columns - 1, (self.column // 8 + 1) * 8)
            elif char < " " or char == "\x7f":
                pass
            else:
                self._put(char)
            index += 1

    def _line_feed(self) -> None:
        self.pending_wrap = False
        if self.row == self.rows - 1:
            self.history.append("".join(self.grid.pop(0)).rstrip())
            self.grid.append([" "] * self.columns)
            self.backgrounds.pop(0)
            self.backgrounds.append([None] * self.columns)
        else:
            self.row += 1

    def _put(self, char: str) -> None:
        width = cell_len(char)
        if width == 0:
            return
        if self.pending_wrap or self.column + width > self.columns:
            if self.autowrap:
                self.column = 0
                self._line_feed()
            else:
                self.column = self.columns - width
        self.pending_wrap = False
        self.grid[self.row][self.column] = char
        self.backgrounds[self.row][self.column] = self.background
        if width == 2 and self.column + 1 < self.columns:
            self.grid[self.row][self.column + 1] = ""
            self.backgrounds[self.row][self.column + 1] = self.background
        self.column += width
        if self.column >= self.columns:
            self.column = self.columns - 1
            self.pending_wrap = True

    def _osc(self, body: str) -> None:
        code, _, value = body.partition(";")
        if code in ("0", "2"):
            self.titles.append(value)
        elif code == "52":
            self.clipboard.append(value.partition(";")[2])

    def _csi(self, params: str, final: str) -> None:
        if params.startswith("?"):
            if final in "hl" and "7" in params[1:].split(";"):
                self.autowrap = final == "h"
            return
        numbers = [int(part) if part.isdigit() else 0 for part in params.split(";")] if params else []
        if final == "m":
            self._sgr(numbers or [0])
            return
        first = numbers[0] if numbers else 0
        count = max(first, 1)
        self.pending_wrap = False
        if final == "A":
            self.row = max(0, self.row - count)
        elif final == "B":
            self.row = min(self.rows - 1, self.row + count)
        elif final == "C":
            self.column = min(self.columns - 1, self.column + count)
        elif final == "D":
            self.column = max(0, self.column - count)
        elif final == "G":
            self.column = min(self.columns - 1, count - 1)
        elif final == "d":
            self.row = min(self.rows - 1, count - 1)
        elif final in "Hf":
            row = numbers[0] if numbers else 1
            column = numbers[1] if len(numbers) > 1 else 1
            self.row = min(self.rows - 1, max(row, 1) - 1)
            self.column = min(self.columns - 1, max(column, 1) - 1)
        elif final == "J":
            if first == 0:
                self._erase_line(self.row, self.column, self.columns)
                for row in range(self.row + 1, self.rows):
                    self._erase_line(row, 0, self.columns)
            elif first == 1:
                for row in range(self.row):
                    self._erase_line(row, 0, self.columns)
                self._erase_line(self.row, 0, self.column + 1)
            elif first == 2:
                for row in range(self.rows):
                    self._erase_line(row, 0, self.columns)
            elif first == 3:
                self.history.clear()
        elif final == "K":
            if first == 0:
                self._erase_line(self.row, self.column, self.columns)
            elif first == 1:
                self._erase_line(self.row, 0, self.column + 1)
            else:
                self._erase_line(self.row, 0, self.columns)
        elif final == "X":
            self._erase_line(self.row, self.column, min(self.columns, self.column + count))

    def _sgr(self, numbers: list[int]) -> None:
        index = 0
        while index < len(numbers):
            number = numbers[index]
            if number in (0, 49):
                self.background = None
            elif 40 <= number <= 47 or 100 <= number <= 107:
                self.background = str(number)
            elif number in (38, 48) and index + 1 < len(numbers):
                size = 3 if numbers[index + 1] == 5 else 5
                if number == 48:
                    self.background = ";".join(str(n) for n in numbers[index + 1 : index + size])
                index += size - 1
            index += 1

    def _erase_line(self, row: int, start: int, end: int) -> None:
        line = self.grid[row]
        for column in range(start, end):
            self.backgrounds[row][column] = None
            line[column] = " "
