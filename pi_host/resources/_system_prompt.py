"""The system prompt: pi's layout, with pi-host's identity and documentation.

The default prompt is: an identity line, the active tools' one-line snippets, the guidelines
(file-exploration advice for the active tools, each active tool's guidelines, two fixed rules),
where to find pi-host's documentation, then anything appended (``APPEND_SYSTEM.md``,
``--append-system-prompt``). A custom prompt (``SYSTEM.md``, ``--system-prompt``) replaces that
body. Either way the context files, the skills list (when the ``read`` tool is active), the date
and the working directory follow, in pi's format, which models tuned on pi know.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ._context_files import ContextFile
from ._diagnostics import diagnostic
from ._paths import exists, project_config_dir
from ._skills import Skill, format_skills_for_prompt

if TYPE_CHECKING:
    from ._diagnostic_models import ResourceDiagnostic

__all__ = [
    "DEFAULT_IDENTITY",
    "DocsPaths",
    "PromptTool",
    "SystemPromptSources",
    "build_system_prompt",
    "find_docs",
    "load_system_prompt_sources",
    "resolve_prompt_input",
]

#: The first line of the default prompt. Distributions pass their own to ``build_system_prompt``.
DEFAULT_IDENTITY = (
    "You are an expert coding assistant running inside pi-host, a plugin-based coding agent. "
    "You help the user by reading files, running commands, editing code and writing new files."
)

_OTHER_TOOLS_NOTE = (
    "In addition to the tools above, you may have access to other custom tools depending on the project."
)
_BASH_ONLY_GUIDELINE = "Use bash for file operations like ls, rg, find"
_PREFER_TOOLS_GUIDELINE = (
    "Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)"
)
_FIXED_GUIDELINES = ("Be concise in your responses", "Show file paths clearly when working with files")


class PromptTool(Protocol):
    """What the system prompt needs from a tool; :class:`pi_host.Tool` fits."""

    @property
    def name(self) -> str: ...

    @property
    def prompt_snippet(self) -> str | None: ...

    @property
    def prompt_guidelines(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class DocsPaths:
    """Where pi-host's documentation lives, for the prompt's documentation section.

    Missing entries are left out of the prompt; with none, the section is omitted.
    """

    readme: Path | None = None
    docs: Path | None = None
    examples: Path | None = None


@functools.lru_cache(maxsize=1)
def find_docs() -> DocsPaths:
    """pi-host's installed documentation: ``README.md``, ``docs/``, ``examples/``.

    Looked up inside the package first, then in the source checkout the package was imported
    from (the directory holding ``pyproject.toml`` next to ``pi_host/``). Only paths that exist
    are returned. Looked up once per process.
    """
    package_dir = Path(__file__).resolve().parent.parent
    roots = [package_dir]
    checkout = package_dir.parent
    if (checkout / "pyproject.toml").is_file():
        roots.append(checkout)

    def first(name: str, *, is_dir: bool) -> Path | None:
        for root in roots:
            candidate = root / name
            if candidate.is_dir() if is_dir else candidate.is_file():
                return candidate
        return None

    return DocsPaths(
        readme=first("README.md", is_dir=False),
        docs=first("docs", is_dir=True),
        examples=first("examples", is_dir=True),
    )


def _docs_section(docs: DocsPaths) -> str:
    lines: list[str] = []
    if docs.readme is not None:
        lines.append(f"- Main documentation: {docs.readme}")
    if docs.docs is not None:
        lines.append(f"- Additional docs: {docs.docs}")
    if docs.examples is not None:
        lines.append(f"- Examples: {docs.examples} (plugins, custom tools, distributions)")
    if not lines:
        return ""
    return (
        "\n\npi-host documentation (read it only when the user asks about pi-host itself: its plugins, "
        "hooks, settings, skills or prompt templates):\n"
        + "\n".join(lines)
        + "\n- Read the relevant .md files completely and follow their cross-references "
        "before building on pi-host"
    )


def _one_line(text: str | None) -> str | None:
    if not text:
        return None
    collapsed = re.sub(r"\s+", " ", text).strip()
    return collapsed or None


def _context_section(context_files: Sequence[ContextFile]) -> str:
    if not context_files:
        return ""
    section = "\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n"
    for context_file in context_files:
        section += f"## {context_file.path}\n\n{context_file.content}\n\n"
    return section


def build_system_prompt(
    *,
    cwd: str | os.PathLike[str],
    tools: Sequence[PromptTool] = (),
    custom_prompt: str | None = None,
    append_system_prompt: str | Sequence[str] | None = None,
    context_files: Iterable[ContextFile] = (),
    skills: Iterable[Skill] = (),
    today: date | None = None,
    identity: str = DEFAULT_IDENTITY,
    docs: DocsPaths | None = None,
) -> str:
    """Build the system prompt for the active *tools*.

    :param cwd: the working directory, shown last (with ``/`` separators).
    :param tools: the active tools, in order. A tool is listed under "Available tools" only if it
        has a ``prompt_snippet`` (whitespace collapsed to one line); its ``prompt_guidelines``
        (trimmed, duplicates dropped) join the guidelines. With ``bash`` active and none of
        ``grep``/``find``/``ls``, the guidelines advise bash for file operations; with some of
        them, they advise preferring those tools.
    :param custom_prompt: replaces the default body (``SYSTEM.md`` or ``--system-prompt``
        text); an empty string counts as none.
    :param append_system_prompt: text added after the body; several pieces are joined with a
        blank line.
    :param context_files: ``AGENTS.md``-style files, under a ``# Project Context`` heading.
    :param skills: listed (those the model may invoke) only when ``read`` is active, since the
        model reads a skill's file to use it.
    :param today: the date to show; defaults to today's local date.
    :param identity: the default body's first line (a distribution's own agent name).
    :param docs: documentation paths; ``None`` looks up pi-host's own (:func:`find_docs`).
    """
    if isinstance(append_system_prompt, str):
        appended = append_system_prompt
    else:
        appended = "\n\n".join(append_system_prompt or ())
    append_section = f"\n\n{appended}" if appended else ""
    names = [tool.name for tool in tools]
    has_read = "read" in names
    files = list(context_files)
    skill_list = list(skills)
    day = today or date.today()

    if custom_prompt:
        prompt = custom_prompt + append_section
    else:
        snippets = [(tool.name, _one_line(tool.prompt_snippet)) for tool in tools]
        visible = [f"- {name}: {snippet}" for name, snippet in snippets if snippet]
        tools_list = "\n".join(visible) if visible else "(none)"
        guidelines: list[str] = []

        def add_guideline(text: str) -> None:
            if text not in guidelines:
                guidelines.append(text)

        has_bash = "bash" in names
        explorers = any(name in names for name in ("grep", "find", "ls"))
        if has_bash and not explorers:
            add_guideline(_BASH_ONLY_GUIDELINE)
        elif has_bash:
            add_guideline(_PREFER_TOOLS_GUIDELINE)
        for tool in tools:
            for guideline in tool.prompt_guidelines:
                normalized = guideline.strip()
                if normalized:
                    add_guideline(normalized)
        for guideline in _FIXED_GUIDELINES:
            add_guideline(guideline)
        prompt = (
            f"{identity}\n\nAvailable tools:\n{tools_list}\n\n{_OTHER_TOOLS_NOTE}\n\n"
            "Guidelines:\n" + "\n".join(f"- {g}" for g in guidelines)
        )
        prompt += _docs_section(find_docs() if docs is None else docs)
        prompt += append_section

    prompt += _context_section(files)
    if has_read and skill_list:
        prompt += format_skills_for_prompt(skill_list)
    display_cwd = os.fspath(cwd).replace("\\", "/")
    prompt += f"\nCurrent date: {day.isoformat()}"
    prompt += f"\nCurrent working directory: {display_cwd}"
    return prompt


def resolve_prompt_input(value: str, *, cwd: str | os.PathLike[str] | None = None) -> str:
    """The text of a ``--system-prompt`` / ``--append-system-prompt`` value.

    As in pi, a value naming an existing file (relative to *cwd*) means that file's content;
    anything else is the text itself.

    :raises OSError: the file exists but cannot be read.
    """
    base = os.fspath(cwd) if cwd is not None else os.getcwd()
    candidate = Path(base, value)
    # Text too long or with a NUL byte for a path simply does not exist as one.
    if not exists(candidate):
        return value
    return candidate.read_text(encoding="utf-8", errors="replace")


@dataclass(frozen=True)
class SystemPromptSources:
    """Where the prompt's replaceable parts come from, resolved to text.

    :ivar custom_prompt: the text replacing the default body, if any.
    :ivar append: texts to append, in order (joined with blank lines by
        :func:`build_system_prompt`).
    :ivar diagnostics: files that exist but could not be read.
    """

    custom_prompt: str | None = None
    append: tuple[str, ...] = ()
    diagnostics: tuple[ResourceDiagnostic, ...] = field(default=())


def _discover(cwd: Path, agent_dir: Path, name: str, project_trusted: bool) -> Path | None:
    candidates = [project_config_dir(cwd) / name] if project_trusted else []
    candidates.append(agent_dir / name)
    return next((p for p in candidates if exists(p)), None)


def load_system_prompt_sources(
    *,
    cwd: str | os.PathLike[str],
    agent_dir: str | os.PathLike[str],
    project_trusted: bool,
    system_prompt: str | None = None,
    append_system_prompt: Sequence[str] | None = None,
) -> SystemPromptSources:
    """Resolve the custom and appended prompt texts, as pi does.

    - custom prompt: *system_prompt* (``--system-prompt``: text or a file), else
      ``<cwd>/.pi/SYSTEM.md`` when the project is trusted, else ``<agent_dir>/SYSTEM.md``;
    - appended: *append_system_prompt* (each ``--append-system-prompt``: text or a file) when
      given, else the first of ``<cwd>/.pi/APPEND_SYSTEM.md`` (trusted projects only) and
      ``<agent_dir>/APPEND_SYSTEM.md``.

    A file that exists but cannot be read is reported and its name used as text, like pi.
    """
    cwd_path = Path(os.path.abspath(cwd))
    agent_path = Path(agent_dir)
    diagnostics: list[ResourceDiagnostic] = []

    def read(value: str, what: str) -> str:
        try:
            return resolve_prompt_input(value, cwd=cwd_path)
        except OSError as exc:
            diagnostics.append(diagnostic("warning", f"Could not read {what} file {value}: {exc}", value))
            return value

    custom: str | None = None
    source = system_prompt
    if source is None:
        found = _discover(cwd_path, agent_path, "SYSTEM.md", project_trusted)
        source = str(found) if found is not None else None
    if source is not None:
        custom = read(source, "system prompt")

    if append_system_prompt is not None:
        append_sources = list(append_system_prompt)
    else:
        found = _discover(cwd_path, agent_path, "APPEND_SYSTEM.md", project_trusted)
        append_sources = [str(found)] if found is not None else []
    appended = tuple(read(value, "append system prompt") for value in append_sources)
    return SystemPromptSources(custom, appended, tuple(diagnostics))
