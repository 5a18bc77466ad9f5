"""YAML frontmatter for SKILL.md files and prompt templates.

pi reads frontmatter with a full YAML parser. Skill and template headers use a small part of
YAML, so this module implements that part, strictly, instead of adding a YAML dependency:

- block mappings and block sequences (nested by indentation, ``- key: value`` items);
- plain scalars (folded over continuation lines), single- and double-quoted scalars (with
  escapes, spanning lines), literal ``|`` and folded ``>`` block scalars with chomping and
  indentation indicators;
- one-line or multi-line flow collections (``[a, b]``, ``{a: 1}``);
- comments; YAML 1.2 core-schema scalars (``true``, ``null``, ``12``, ``1.5`` …).

Anything outside that subset (anchors, aliases, tags, complex keys, multiple documents) and
anything that is not YAML at all (``description: [unclosed``, ``name: a: b``, duplicate keys,
tab indentation) raises :class:`FrontmatterError`, whose message ends ``at line L, column C``
like pi's parser errors, so a broken header is reported instead of half-read.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Frontmatter", "FrontmatterError", "parse_frontmatter", "parse_yaml", "strip_frontmatter"]


class FrontmatterError(ValueError):
    """The frontmatter is not valid YAML (or uses YAML this parser does not support).

    :ivar reason: what is wrong, without the position.
    :ivar line: 1-based line number in the file.
    :ivar column: 1-based column number.
    """

    def __init__(self, reason: str, line: int, column: int) -> None:
        super().__init__(f"{reason} at line {line}, column {column}")
        self.reason = reason
        self.line = line
        self.column = column


@dataclass(frozen=True)
class Frontmatter:
    """A Markdown file split into its frontmatter mapping and its body."""

    data: dict[str, Any]
    body: str


def _normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse_frontmatter(content: str) -> Frontmatter:
    """Split ``---``-delimited YAML frontmatter from a Markdown document.

    Follows pi exactly: newlines are normalised; without an opening ``---`` or without a
    closing ``\\n---`` the whole text is the body (untrimmed) and the mapping is empty;
    otherwise the body is the trimmed text after the closing marker. A frontmatter that is not a
    mapping (a bare scalar or list) gives an empty mapping.

    :raises FrontmatterError: the frontmatter is not valid YAML.
    """
    normalized = _normalize_newlines(content)
    if not normalized.startswith("---"):
        return Frontmatter({}, normalized)
    end = normalized.find("\n---", 3)
    if end == -1:
        return Frontmatter({}, normalized)
    yaml_text = normalized[4:end]
    body = normalized[end + 4 :].strip()
    if not yaml_text:
        return Frontmatter({}, body)
    # The YAML starts on the file's second line; report positions in file terms.
    parsed = parse_yaml(yaml_text, first_line=2)
    return Frontmatter(parsed if isinstance(parsed, dict) else {}, body)


def strip_frontmatter(content: str) -> str:
    """The body of a Markdown document without its frontmatter.

    :raises FrontmatterError: the frontmatter is not valid YAML.
    """
    return parse_frontmatter(content).body


def parse_yaml(text: str, *, first_line: int = 1) -> Any:
    """Parse the supported YAML subset; ``None`` for an empty document.

    :param first_line: the line number of the text's first line, for error positions.
    :raises FrontmatterError: invalid or unsupported YAML.
    """
    return _Parser(text, first_line).parse_document()


# --- scalars -----------------------------------------------------------------------------

_INT_RE = re.compile(r"[-+]?[0-9]+")
_OCT_RE = re.compile(r"0o[0-7]+")
_HEX_RE = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT_RE = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INF_RE = re.compile(r"[-+]?\.(?:inf|Inf|INF)")
_NAN_RE = re.compile(r"\.(?:nan|NaN|NAN)")


def _resolve_plain(text: str) -> Any:
    """Type a plain scalar by the YAML 1.2 core schema (what pi's parser uses by default)."""
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if _INT_RE.fullmatch(text):
        return int(text)
    if _OCT_RE.fullmatch(text):
        return int(text[2:], 8)
    if _HEX_RE.fullmatch(text):
        return int(text[2:], 16)
    if _FLOAT_RE.fullmatch(text):
        return float(text)
    if _INF_RE.fullmatch(text):
        return -math.inf if text.startswith("-") else math.inf
    if _NAN_RE.fullmatch(text):
        return math.nan
    return text


_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_HEX_ESCAPE_LENGTHS = {"x": 2, "u": 4, "U": 8}

# Characters that may not start a plain scalar: YAML features refused here, or reserved ones.
_UNSUPPORTED_STARTS = {
    "&": "YAML anchors are not supported",
    "*": "YAML aliases are not supported",
    "!": "YAML tags are not supported",
    "%": "YAML directives are not supported",
    "@": "A plain value cannot start with '@'; quote it",
    "`": "A plain value cannot start with '`'; quote it",
}


def _fold_lines(lines: list[str]) -> str:
    """Fold a multi-line plain scalar's lines: breaks become spaces, blank lines newlines."""
    out = ""
    pending_blank = 0
    first = True
    for line in lines:
        if line == "":
            pending_blank += 1
            continue
        if first:
            out = line
            first = False
        else:
            out += "\n" * pending_blank if pending_blank else " "
            out += line
        pending_blank = 0
    return out


@dataclass
class _Line:
    number: int  # 1-based, in file terms
    indent: int
    text: str  # the raw line

    @property
    def content(self) -> str:
        return self.text[self.indent :]

    @property
    def is_blank_or_comment(self) -> bool:
        stripped = self.text.strip()
        return stripped == "" or stripped.startswith("#")


class _Parser:
    def __init__(self, text: str, first_line: int) -> None:
        self.lines: list[_Line] = []
        for offset, raw in enumerate(_normalize_newlines(text).split("\n")):
            indent = len(raw) - len(raw.lstrip(" "))
            self.lines.append(_Line(first_line + offset, indent, raw))

    # -- helpers ---------------------------------------------------------------------

    def _error(self, reason: str, line: _Line | int, column: int = 1) -> FrontmatterError:
        number = line.number if isinstance(line, _Line) else line
        return FrontmatterError(reason, number, column)

    def _next_content(self, index: int) -> int:
        """Index of the next line that is neither blank nor a comment (or ``len(lines)``)."""
        while index < len(self.lines) and self.lines[index].is_blank_or_comment:
            index += 1
        return index

    def _check_tabs(self, line: _Line) -> None:
        if line.text[line.indent : line.indent + 1] == "\t":
            raise self._error("Tabs are not allowed as indentation", line, line.indent + 1)

    def _block_entry(self, index: int, indent: int, kind: str) -> tuple[_Line | None, int]:
        """The next entry line of the *kind* block (``"mapping"``, ``"sequence"``) at column
        *indent*, from ``lines[index]`` on, with its index; ``None`` when the block ended.

        :raises FrontmatterError: for a tab in the indentation, or a line indented deeper
            than the block's entries.
        """
        index = self._next_content(index)
        if index >= len(self.lines):
            return None, index
        line = self.lines[index]
        self._check_tabs(line)
        if line.indent < indent:
            return None, index
        if line.indent > indent:
            raise self._error(f"Bad indentation of a {kind} entry", line, line.indent + 1)
        return line, index

    # -- document and blocks ---------------------------------------------------------

    def parse_document(self) -> Any:
        index = self._next_content(0)
        if index >= len(self.lines):
            return None
        first = self.lines[index]
        self._check_tabs(first)
        if first.content.startswith("---") or first.content.startswith("..."):
            raise self._error("Multiple YAML documents are not supported", first, first.indent + 1)
        value, index = self._parse_node(index, first.indent, parent_indent=-1)
        index = self._next_content(index)
        if index < len(self.lines):
            line = self.lines[index]
            raise self._error("Unexpected content after the document", line, line.indent + 1)
        return value

    def _parse_node(self, index: int, indent: int, parent_indent: int) -> tuple[Any, int]:
        """Parse the block node whose first line is ``lines[index]`` at column *indent*."""
        content = self.lines[index].text[indent:]
        if _is_sequence_entry(content):
            return self._parse_sequence(index, indent)
        if self._find_mapping_colon(content) is not None:
            return self._parse_mapping(index, indent)
        # A bare scalar document (rare in frontmatter, but valid YAML).
        return self._parse_inline_value(index, indent, content, parent_indent)

    def _parse_mapping(self, index: int, indent: int) -> tuple[dict[str, Any], int]:
        result: dict[str, Any] = {}
        while True:
            line, index = self._block_entry(index, indent, "mapping")
            if line is None:
                return result, index
            content = line.text[indent:]
            if _is_sequence_entry(content):
                raise self._error("A block sequence may not be used as a mapping key", line, indent + 1)
            if content.startswith("? "):
                raise self._error("Complex mapping keys are not supported", line, indent + 1)
            key, value_start = self._parse_key(line, indent)
            if key in result:
                raise self._error(f"Map keys must be unique; {key!r} is repeated", line, indent + 1)
            rest = line.text[value_start:]
            value, index = self._parse_value(index, value_start, rest, indent)
            result[key] = value

    def _parse_sequence(self, index: int, indent: int) -> tuple[list[Any], int]:
        result: list[Any] = []
        while True:
            line, index = self._block_entry(index, indent, "sequence")
            if line is None:
                return result, index
            content = line.text[indent:]
            if not _is_sequence_entry(content):
                # "key:\n- a\nother: b": the sequence ended; whoever called us decides the rest.
                return result, index
            after = content[1:]
            stripped = after.lstrip(" ")
            item_column = indent + 1 + (len(after) - len(stripped))
            if stripped == "" or stripped.startswith("#"):
                value, index = self._parse_nested_or_null(index + 1, indent, in_mapping=False)
            elif _is_sequence_entry(stripped) or self._find_mapping_colon(stripped) is not None:
                # A compact nested collection ("- key: v" / "- - x"): parse it as if its first
                # line were indented to the item's column.
                saved = line.text
                line.text = " " * item_column + stripped
                line.indent = item_column
                try:
                    value, index = self._parse_node(index, item_column, indent)
                finally:
                    line.text = saved
                    line.indent = indent
            else:
                value, index = self._parse_value(index, item_column, stripped, indent)
            result.append(value)

    def _parse_nested_or_null(
        self, index: int, parent_indent: int, *, in_mapping: bool = True
    ) -> tuple[Any, int]:
        """The block value of an entry with nothing after its indicator: nested or ``None``."""
        following = self._next_content(index)
        if following >= len(self.lines):
            return None, following
        line = self.lines[following]
        self._check_tabs(line)
        if line.indent > parent_indent:
            return self._parse_node(following, line.indent, parent_indent)
        if in_mapping and line.indent == parent_indent and _is_sequence_entry(line.content):
            # YAML lets a mapping's sequence value sit at the mapping's own indentation.
            return self._parse_sequence(following, line.indent)
        return None, following

    # -- keys and values -------------------------------------------------------------

    def _find_mapping_colon(self, content: str) -> int | None:
        """Offset of the ``:`` that ends an implicit key in *content*, if it is one."""
        if content.startswith(('"', "'")):
            quote = content[0]
            end = _find_closing_quote(content, 0, quote)
            if end is None:
                return None
            after = end + 1
            while after < len(content) and content[after] == " ":
                after += 1
            if content[after : after + 1] == ":" and (
                after + 1 == len(content) or content[after + 1] in " \t"
            ):
                return after
            return None
        if content.startswith(("#", "[", "{", "|", ">")):
            return None
        for match in re.finditer(r":(?=[ \t]|$)", content):
            before = content[: match.start()]
            if " #" in before or "\t#" in before:
                return None
            return match.start()
        return None

    def _parse_key(self, line: _Line, indent: int) -> tuple[str, int]:
        content = line.text[indent:]
        colon = self._find_mapping_colon(content)
        if colon is None:
            raise self._error("Implicit map keys need to be followed by a ':' and a value", line, indent + 1)
        raw_key = content[:colon].rstrip()
        if raw_key.startswith(('"', "'")):
            key_value = self._parse_quoted_text(raw_key, line, indent)
        else:
            if not raw_key:
                raise self._error("Empty mapping key", line, indent + 1)
            if raw_key[0] in _UNSUPPORTED_STARTS:
                raise self._error(_UNSUPPORTED_STARTS[raw_key[0]], line, indent + 1)
            key_value = raw_key
        value_start = indent + colon + 1
        while value_start < len(line.text) and line.text[value_start] == " ":
            value_start += 1
        return str(key_value), value_start

    def _parse_quoted_text(self, text: str, line: _Line, column: int) -> str:
        quote = text[0]
        end = _find_closing_quote(text, 0, quote)
        if end is None or text[end + 1 :].strip():
            raise self._error("Malformed quoted key", line, column + 1)
        return self._unquote(text[1:end], quote, line, column)

    def _parse_value(self, index: int, column: int, rest: str, parent_indent: int) -> tuple[Any, int]:
        """Parse a value that starts at *column* of ``lines[index]`` (*rest* = the text there)."""
        if rest.strip() == "" or rest.lstrip().startswith("#"):
            return self._parse_nested_or_null(index + 1, parent_indent)
        return self._parse_inline_value(index, column, rest, parent_indent)

    def _parse_inline_value(self, index: int, column: int, rest: str, parent_indent: int) -> tuple[Any, int]:
        line = self.lines[index]
        first = rest[0]
        if first in "|>":
            return self._parse_block_scalar(index, column, rest, parent_indent)
        if first in "\"'":
            return self._parse_quoted_scalar(index, column, parent_indent)
        if first in "[{":
            return self._parse_flow(index, column)
        if first in _UNSUPPORTED_STARTS:
            raise self._error(_UNSUPPORTED_STARTS[first], line, column + 1)
        if first in "]},":
            raise self._error(f"Unexpected {first!r}; quote the value if it starts with it", line, column + 1)
        if _is_sequence_entry(rest):
            raise self._error("A block sequence cannot start on the line of its key", line, column + 1)
        if rest.startswith("? ") or rest == "?":
            raise self._error("Complex mapping keys are not supported", line, column + 1)
        return self._parse_plain_scalar(index, column, rest, parent_indent)

    # -- plain scalars ---------------------------------------------------------------

    def _parse_plain_scalar(self, index: int, column: int, rest: str, parent_indent: int) -> tuple[Any, int]:
        line = self.lines[index]
        text = _strip_comment(rest)
        colon = _plain_colon(text)
        if colon is not None:
            raise self._error(
                "Nested mappings are not allowed in compact mappings (quote the value if it contains ': ')",
                line,
                column + colon + 1,
            )
        parts = [text.strip()]
        ended = text != rest
        next_index = index + 1
        probe = index + 1
        pending_blank = 0
        # Continuation lines: more indented than the parent, until a comment or less indent.
        while not ended and probe < len(self.lines):
            nxt = self.lines[probe]
            stripped = nxt.text.strip()
            if stripped == "":
                pending_blank += 1
                probe += 1
                continue
            if nxt.indent <= parent_indent or stripped.startswith("#"):
                break
            self._check_tabs(nxt)
            raw = nxt.text[nxt.indent :]
            piece = _strip_comment(raw)
            if _plain_colon(piece) is not None:
                raise self._error("Implicit keys of a mapping must be on a single line", nxt, nxt.indent + 1)
            parts.extend([""] * pending_blank)
            parts.append(piece.strip())
            pending_blank = 0
            ended = piece != raw
            probe += 1
            next_index = probe
        if len(parts) == 1:
            return _resolve_plain(parts[0]), next_index
        return _fold_lines(parts), next_index

    # -- quoted scalars --------------------------------------------------------------

    def _parse_quoted_scalar(self, index: int, column: int, parent_indent: int) -> tuple[str, int]:
        start_line = self.lines[index]
        quote = start_line.text[column]
        # Gather lines until the one holding the closing quote.
        joined = start_line.text[column:]
        current = index
        while True:
            end = _find_closing_quote(joined, 0, quote)
            if end is not None:
                break
            current += 1
            if current >= len(self.lines) or (
                self.lines[current].text.strip() and self.lines[current].indent <= parent_indent
            ):
                # A quoted scalar continues only on lines indented deeper than its parent.
                raise self._error(f"Missing closing {quote} of a quoted scalar", start_line, column + 1)
            joined += "\n" + self.lines[current].text
        line_start = joined.rfind("\n", 0, end) + 1
        end_column = end - line_start + (column if current == index else 0)
        trailing = joined[end + 1 :]
        if trailing.strip():
            if not trailing.lstrip().startswith("#"):
                raise self._error(
                    "Unexpected text after a quoted scalar", self.lines[current], end_column + 2
                )
            if not trailing.startswith((" ", "\t")):
                raise self._error(
                    "A comment must be separated from a value by a space", self.lines[current], end_column + 2
                )
        return self._unquote(joined[1:end], quote, start_line, column), current + 1

    def _unquote(self, raw: str, quote: str, line: _Line, column: int) -> str:
        if quote == "'":
            return _fold_quoted_lines(raw.split("\n")).replace("''", "'")
        try:
            return _unescape_double(raw)
        except _EscapeError as exc:
            raise self._error(str(exc), line, column + 1) from None

    # -- block scalars ---------------------------------------------------------------

    def _parse_block_scalar(self, index: int, column: int, rest: str, parent_indent: int) -> tuple[str, int]:
        line = self.lines[index]
        header = _strip_comment(rest).rstrip()
        match = re.fullmatch(r"([|>])(?:([+-])([1-9])?|([1-9])([+-])?)?", header)
        if match is None:
            raise self._error("Invalid block scalar header", line, column + 1)
        style = match.group(1)
        chomp = match.group(2) or match.group(5) or ""
        explicit = match.group(3) or match.group(4)
        content_indent: int | None = (max(parent_indent, 0) + int(explicit)) if explicit else None
        body: list[str] = []
        index += 1
        while index < len(self.lines):
            nxt = self.lines[index]
            if nxt.text.strip() == "":
                body.append(nxt.text[content_indent:] if content_indent is not None else "")
                index += 1
                continue
            if content_indent is None:
                if nxt.indent <= parent_indent:
                    break
                self._check_tabs(nxt)
                content_indent = nxt.indent
                # Blank lines seen before the first content line are empty either way.
                body = ["" for _ in body]
            if nxt.indent < content_indent:
                break
            body.append(nxt.text[content_indent:])
            index += 1
        reaches_end = index == len(self.lines)
        trailing = 0
        while body and body[-1].strip() == "":
            body.pop()
            trailing += 1
        index -= trailing
        kept_breaks = trailing
        if reaches_end and trailing:
            if self.lines[-1].text == "":
                # The text ended with a line break: its last "line" is no line at all.
                kept_breaks = trailing - 1
            else:
                # The last line has no break after it, so it adds no newline to a "keep" (+)
                # scalar; an all-blank scalar still keeps the break of its first line.
                kept_breaks = trailing - 1 if body else max(trailing - 1, 1)
        text = "\n".join(body) if style == "|" else _fold_block(body)
        if chomp == "-":
            return text, index
        if chomp == "+":
            return (text + "\n" + "\n" * kept_breaks) if body else "\n" * kept_breaks, index
        return (text + "\n") if body else "", index

    # -- flow collections ------------------------------------------------------------

    def _parse_flow(self, index: int, column: int) -> tuple[Any, int]:
        start_line = self.lines[index]
        text_parts = [start_line.text[column:]]
        current = index
        while True:
            joined = "\n".join(text_parts)
            flow = _FlowParser(joined, start_line.number, column)
            try:
                value, end = flow.parse()
            except _FlowIncomplete:
                current += 1
                if current >= len(self.lines):
                    closer = "]" if start_line.text[column] == "[" else "}"
                    kind = "sequence" if closer == "]" else "mapping"
                    raise self._error(
                        f"Flow {kind} must end with a {closer}", start_line, column + 1
                    ) from None
                text_parts.append(self.lines[current].text)
                continue
            trailing = joined[end:]
            if trailing.strip() and not trailing.lstrip().startswith("#"):
                raise self._error("Unexpected text after a flow collection", self.lines[current], 1)
            return value, current + 1


class _FlowIncomplete(Exception):
    """The flow collection continues on the next line."""


class _FlowParser:
    def __init__(self, text: str, line: int, column: int) -> None:
        self.text = text
        self.pos = 0
        self.line = line
        self.column = column

    def _error(self, reason: str) -> FrontmatterError:
        consumed = self.text[: self.pos]
        line = self.line + consumed.count("\n")
        col = (self.pos - consumed.rfind("\n")) if "\n" in consumed else self.column + self.pos + 1
        return FrontmatterError(reason, line, col)

    def _skip_space(self) -> None:
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char in " \t\n":
                self.pos += 1
            elif char == "#" and (self.pos == 0 or self.text[self.pos - 1] in " \t\n"):
                newline = self.text.find("\n", self.pos)
                if newline == -1:
                    raise _FlowIncomplete
                self.pos = newline
            else:
                return
        raise _FlowIncomplete

    def parse(self) -> tuple[Any, int]:
        value = self._value()
        return value, self.pos

    def _value(self) -> Any:
        self._skip_space()
        char = self.text[self.pos]
        if char == "[":
            return self._sequence()
        if char == "{":
            return self._mapping()
        if char in "\"'":
            return self._quoted()
        if char in _UNSUPPORTED_STARTS:
            raise self._error(_UNSUPPORTED_STARTS[char])
        return self._plain()

    def _sequence(self) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        while True:
            self._skip_space()
            if self.text[self.pos] == "]":
                self.pos += 1
                return items
            item = self._value()
            self._skip_space()
            if self.text[self.pos] == ":":
                raise self._error("Mappings inside flow sequences are not supported")
            items.append(item)
            self._skip_space()
            char = self.text[self.pos]
            if char == ",":
                self.pos += 1
            elif char != "]":
                raise self._error("Expected ',' or ']' in a flow sequence")

    def _mapping(self) -> dict[str, Any]:
        self.pos += 1
        result: dict[str, Any] = {}
        while True:
            self._skip_space()
            if self.text[self.pos] == "}":
                self.pos += 1
                return result
            key = self._value()
            self._skip_space()
            value: Any = None
            if self.text[self.pos] == ":":
                self.pos += 1
                self._skip_space()
                value = None if self.text[self.pos] in ",}" else self._value()
            key_text = "null" if key is None else str(key).lower() if isinstance(key, bool) else str(key)
            if key_text in result:
                raise self._error(f"Map keys must be unique; {key_text!r} is repeated")
            result[key_text] = value
            self._skip_space()
            char = self.text[self.pos]
            if char == ",":
                self.pos += 1
            elif char != "}":
                raise self._error("Expected ',' or '}' in a flow mapping")

    def _quoted(self) -> str:
        quote = self.text[self.pos]
        end = _find_closing_quote(self.text, self.pos, quote)
        if end is None:
            raise _FlowIncomplete
        raw = self.text[self.pos + 1 : end]
        self.pos = end + 1
        if quote == "'":
            return _fold_quoted_lines(raw.split("\n")).replace("''", "'")
        try:
            return _unescape_double(raw)
        except _EscapeError as exc:
            raise self._error(str(exc)) from None

    def _plain(self) -> Any:
        start = self.pos
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char in ",[]{}":
                break
            if char == ":" and (self.pos + 1 >= len(self.text) or self.text[self.pos + 1] in " \t\n,]}"):
                break
            if char == "#" and self.text[self.pos - 1] in " \t\n":
                break
            self.pos += 1
        if self.pos >= len(self.text):
            raise _FlowIncomplete
        raw = self.text[start : self.pos]
        lines = [piece.strip() for piece in raw.split("\n")]
        text = _fold_lines(lines).strip() if len(lines) > 1 else lines[0]
        return _resolve_plain(text)


# --- small helpers ------------------------------------------------------------------------


def _plain_colon(text: str) -> int | None:
    """Offset of a ``:`` followed by a space or the end: something a plain scalar cannot hold."""
    match = re.search(r":(?=[ \t]|$)", text)
    return match.start() if match else None


def _is_sequence_entry(content: str) -> bool:
    return content == "-" or content.startswith(("- ", "-\t"))


def _strip_comment(text: str) -> str:
    """*text* without a trailing ``# comment`` (a ``#`` preceded by whitespace)."""
    match = re.search(r"[ \t]#", text)
    return text[: match.start()] if match else text


def _find_closing_quote(text: str, start: int, quote: str, *, opened: bool = False) -> int | None:
    """Index of the quote closing the one at *start* (or of the first, when *opened*)."""
    i = start if opened else start + 1
    while i < len(text):
        char = text[i]
        if quote == '"' and char == "\\":
            i += 2
            continue
        if char == quote:
            if quote == "'" and text[i + 1 : i + 2] == "'":
                i += 2
                continue
            return i
        i += 1
    return None


class _EscapeError(ValueError):
    """A bad escape sequence in a double-quoted scalar."""


def _unescape_double(raw: str) -> str:
    """The value of a double-quoted scalar's *raw* text (between the quotes, newlines kept)."""
    # A backslash at the end of a line joins it to the next without a space, so resolve those
    # joins before folding the remaining line breaks.
    lines = raw.split("\n")
    out_lines: list[str] = []
    join_next = False
    for i, piece in enumerate(lines):
        text = piece if i == 0 else piece.lstrip(" \t")
        if i < len(lines) - 1:
            text = text.rstrip(" \t")
        if join_next:
            out_lines[-1] += text
        else:
            out_lines.append(text)
        join_next = i < len(lines) - 1 and _ends_with_odd_backslashes(out_lines[-1])
        if join_next:
            out_lines[-1] = out_lines[-1][:-1]
    folded = _fold_quoted_lines(out_lines, already_trimmed=True)
    result: list[str] = []
    i = 0
    while i < len(folded):
        char = folded[i]
        if char != "\\":
            result.append(char)
            i += 1
            continue
        code = folded[i + 1 : i + 2]
        if code in _ESCAPES:
            result.append(_ESCAPES[code])
            i += 2
            continue
        length = _HEX_ESCAPE_LENGTHS.get(code, 0)
        digits = folded[i + 2 : i + 2 + length]
        if length and len(digits) == length and all(c in "0123456789abcdefABCDEF" for c in digits):
            result.append(chr(int(digits, 16)))
            i += 2 + length
            continue
        raise _EscapeError(f"Invalid escape sequence \\{code}" if code else "Incomplete escape sequence")
    return "".join(result)


def _ends_with_odd_backslashes(text: str) -> bool:
    count = len(text) - len(text.rstrip("\\"))
    return count % 2 == 1


def _fold_quoted_lines(lines: list[str], *, already_trimmed: bool = False) -> str:
    """Fold a quoted scalar's lines: inner line breaks become spaces, empty lines newlines."""
    if len(lines) == 1:
        return lines[0]
    trimmed = (
        lines
        if already_trimmed
        else [
            (line if i == 0 else line.lstrip(" \t"))
            if i == len(lines) - 1
            else (line if i == 0 else line.lstrip(" \t")).rstrip(" \t")
            for i, line in enumerate(lines)
        ]
    )
    out = trimmed[0]
    pending_blank = 0
    for line in trimmed[1:-1]:
        if line == "":
            pending_blank += 1
            continue
        out += ("\n" * pending_blank) if pending_blank else " "
        out += line
        pending_blank = 0
    last = trimmed[-1]
    out += ("\n" * pending_blank) if pending_blank else " "
    out += last
    return out


def _fold_block(lines: list[str]) -> str:
    """Fold the body of a ``>`` block scalar (more-indented lines keep their breaks)."""
    out = ""
    pending_blank = 0
    previous_more = False
    first = True
    for line in lines:
        if line.strip() == "":
            pending_blank += 1
            continue
        more = line.startswith((" ", "\t"))
        if first:
            out = "\n" * pending_blank + line
            first = False
        elif pending_blank == 0 and not more and not previous_more:
            out += " " + line
        elif not more and not previous_more:
            out += "\n" * pending_blank + line
        else:
            out += "\n" * (pending_blank + 1) + line
        previous_more = more
        pending_blank = 0
    return out
