"""Prompt templates: Markdown snippets that ``/name args`` expands into a full prompt.

The file name (without ``.md``) is the command name. Arguments are split like a shell would,
minus escapes (pi's rules), and substituted into ``$1``, ``$@``, ``$ARGUMENTS``, ``${@:N}``,
``${@:N:L}`` and ``${N:-default}`` placeholders.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ._diagnostics import collision_diagnostic, diagnostic
from ._discovery import ResourceScope, collect_prompt_files, resolve_resource_files
from ._paths import exists, is_dir, is_file, resolve_user_path

if TYPE_CHECKING:
    from ._diagnostic_models import ResourceDiagnostic

__all__ = [
    "PromptTemplate",
    "PromptTemplatesResult",
    "discover_prompt_templates",
    "expand_prompt_template",
    "load_prompt_template",
    "load_prompt_templates",
    "parse_command_args",
    "substitute_args",
]

_DESCRIPTION_FALLBACK_LENGTH = 60


class PromptTemplate(BaseModel):
    """One prompt template.

    :ivar name: the command name (file name without ``.md``).
    :ivar description: the frontmatter ``description``, else the body's first non-empty line
        (cut at 60 characters, with ``...``).
    :ivar argument_hint: the frontmatter ``argument-hint`` (``"<file> [focus]"``), for completion.
    :ivar content: the body, frontmatter removed and trimmed.
    :ivar file_path: the template file.
    :ivar scope: ``"project"``, ``"user"`` or ``"temporary"`` (an explicit path).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    description: str
    argument_hint: str | None = None
    content: str
    file_path: str
    scope: ResourceScope = "temporary"


@dataclass(frozen=True)
class PromptTemplatesResult:
    """Templates in precedence order (names unique), and what went wrong finding them."""

    templates: tuple[PromptTemplate, ...] = ()
    diagnostics: tuple[ResourceDiagnostic, ...] = ()

    def get(self, name: str) -> PromptTemplate | None:
        """The template called *name*, if loaded."""
        return next((t for t in self.templates if t.name == name), None)


def parse_command_args(text: str) -> list[str]:
    """Split a command's argument string the way pi does.

    Spaces and tabs separate arguments; ``"…"`` and ``'…'`` group (quotes removed, other
    whitespace kept); there are no escapes, and an empty quoted argument disappears.
    """
    args: list[str] = []
    current = ""
    quote: str | None = None
    for char in text:
        if quote is not None:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char in " \t":
            if current:
                args.append(current)
                current = ""
        else:
            current += char
    if current:
        args.append(current)
    return args


# Compiled (and cached by re) with the first template expanded.
_PLACEHOLDER_RE = (
    r"\$\{@:(?P<start>\d+)(?::(?P<length>\d+))?\}"
    r"|\$\{(?P<default_index>\d+):-(?P<default>[^}]*)\}"
    r"|\$(?P<index>\d+)"
    r"|\$ARGUMENTS"
    r"|\$@"
)


def substitute_args(content: str, args: Sequence[str]) -> str:
    """Fill a template's placeholders with *args*.

    - ``$1``, ``$2`` … the positional arguments (missing ones, and ``$0``, become empty);
    - ``$@`` and ``$ARGUMENTS`` all arguments joined with spaces;
    - ``${@:N}`` the arguments from the N-th on, ``${@:N:L}`` L of them (``${@:0}`` = ``${@:1}``);
    - ``${N:-text}`` the N-th argument, or *text* when it is missing or empty (*text* may hold
      placeholders itself). This one is a pi-host addition in bash's spelling; pi 0.73 leaves it
      as it is.

    Substitution is one pass over the template: placeholders inside argument values are never
    expanded.
    """
    all_args = " ".join(args)

    def positional(number: str) -> str:
        index = int(number) - 1
        return args[index] if 0 <= index < len(args) else ""

    def replace(match: re.Match[str]) -> str:
        if match.group("start") is not None:
            start = max(int(match.group("start")) - 1, 0)
            length = match.group("length")
            selected = args[start:] if length is None else args[start : start + int(length)]
            return " ".join(selected)
        if match.group("default_index") is not None:
            value = positional(match.group("default_index"))
            return value if value else substitute_args(match.group("default"), args)
        if match.group("index") is not None:
            return positional(match.group("index"))
        return all_args

    return re.sub(_PLACEHOLDER_RE, replace, content)


def _description_from(frontmatter: dict[str, Any], body: str) -> str:
    description = frontmatter.get("description")
    if description:
        return str(description)
    first_line = next((line for line in body.split("\n") if line.strip()), None)
    if first_line is None:
        return ""
    if len(first_line) > _DESCRIPTION_FALLBACK_LENGTH:
        return first_line[:_DESCRIPTION_FALLBACK_LENGTH] + "..."
    return first_line


def load_prompt_template(
    path: str | os.PathLike[str], *, scope: ResourceScope = "temporary"
) -> tuple[PromptTemplate | None, list[ResourceDiagnostic]]:
    """Load one template file; ``(None, [warning])`` when it cannot be read or parsed.

    (pi drops such a template silently; pi-host drops it too but says why.)
    """
    # The frontmatter parser is imported with the first template file: most projects have none.
    from ._frontmatter import FrontmatterError, parse_frontmatter

    file_path = Path(path)
    try:
        parsed = parse_frontmatter(file_path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, FrontmatterError) as exc:
        return None, [diagnostic("warning", str(exc), file_path)]
    hint = parsed.data.get("argument-hint")
    name = file_path.name.removesuffix(".md")
    template = PromptTemplate(
        name=name,
        description=_description_from(parsed.data, parsed.body),
        argument_hint=str(hint) if hint else None,
        content=parsed.body,
        file_path=os.fspath(file_path),
        scope=scope,
    )
    return template, []


class _TemplateSet:
    def __init__(self) -> None:
        self.by_name: dict[str, PromptTemplate] = {}
        self.diagnostics: list[ResourceDiagnostic] = []
        self.collisions: list[ResourceDiagnostic] = []

    def add_file(self, path: Path, scope: ResourceScope) -> None:
        template, problems = load_prompt_template(path, scope=scope)
        self.diagnostics.extend(problems)
        if template is None:
            return
        existing = self.by_name.get(template.name)
        if existing is None:
            self.by_name[template.name] = template
            return
        self.collisions.append(
            collision_diagnostic(
                "prompt", template.name, existing.file_path, template.file_path, shown_as=f"/{template.name}"
            )
        )

    def add_path(self, path: Path, scope: ResourceScope) -> None:
        if not exists(path):
            self.diagnostics.append(diagnostic("error", "Prompt template path does not exist", path))
        elif is_dir(path):
            for file_path in collect_prompt_files(path):
                self.add_file(file_path, scope)
        elif is_file(path) and path.name.endswith(".md"):
            self.add_file(path, scope)
        else:
            self.diagnostics.append(
                diagnostic("warning", "prompt template path is not a markdown file", path)
            )

    def result(self) -> PromptTemplatesResult:
        return PromptTemplatesResult(tuple(self.by_name.values()), (*self.diagnostics, *self.collisions))


def load_prompt_templates(
    paths: Sequence[str | os.PathLike[str]], *, cwd: str | os.PathLike[str]
) -> PromptTemplatesResult:
    """Load templates from explicit files and directories (pi's ``--prompt-template``).

    Directories are read non-recursively. Paths are ``~``-expanded and resolved against *cwd*.
    """
    template_set = _TemplateSet()
    for raw in paths:
        template_set.add_path(resolve_user_path(os.fspath(raw), cwd), "temporary")
    return template_set.result()


def discover_prompt_templates(
    *,
    cwd: str | os.PathLike[str],
    agent_dir: str | os.PathLike[str],
    project_trusted: bool,
    global_entries: Sequence[str] = (),
    project_entries: Sequence[str] = (),
    extra_paths: Sequence[str | os.PathLike[str]] = (),
    include_defaults: bool = True,
) -> PromptTemplatesResult:
    """Find and load all prompt templates, as pi does at startup and on ``/reload``.

    Sources in precedence order (the first template with a name wins): project ``prompts``
    settings entries and ``<cwd>/.pi/prompts/*.md`` (only when *project_trusted*), user
    ``prompts`` settings entries and ``<agent_dir>/prompts/*.md``, then *extra_paths*
    (``--prompt-template``), which load even when *include_defaults* is false
    (``--no-prompt-templates``). Default directories are not searched recursively; directories
    listed in settings are.
    """
    cwd_path = Path(os.path.abspath(cwd))
    template_set = _TemplateSet()
    if include_defaults:
        for found in resolve_resource_files(
            "prompts",
            cwd=cwd_path,
            agent_dir=Path(agent_dir),
            project_trusted=project_trusted,
            global_entries=global_entries,
            project_entries=project_entries,
        ):
            template_set.add_path(found.path, found.scope)
    for raw in extra_paths:
        template_set.add_path(resolve_user_path(os.fspath(raw), cwd_path), "temporary")
    return template_set.result()


def expand_prompt_template(text: str, templates: Iterable[PromptTemplate]) -> str:
    """Expand ``/name args`` when *name* is a template; any other text comes back unchanged.

    The name ends at the first space; the rest is split with :func:`parse_command_args` and
    substituted into the template's content.
    """
    if not text.startswith("/"):
        return text
    space = text.find(" ")
    name = text[1:] if space == -1 else text[1:space]
    args_text = "" if space == -1 else text[space + 1 :]
    template = next((t for t in templates if t.name == name), None)
    if template is None:
        return text
    return substitute_args(template.content, parse_command_args(args_text))
