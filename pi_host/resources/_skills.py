"""Skills: ``SKILL.md`` capability packages the model loads on demand (the Agent Skills standard).

Only each skill's name, description and location go into the system prompt; the model reads
the file when a task matches. ``/skill:name args`` puts the whole skill into the user's message.
Validation is lenient like pi's: problems are warnings and the skill still loads, except that a
skill without a description is skipped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from ._diagnostics import collision_diagnostic, diagnostic
from ._discovery import ResourceScope, collect_skill_files, resolve_resource_files
from ._paths import canonical_path, exists, is_dir, is_file, resolve_user_path

if TYPE_CHECKING:
    from ._diagnostic_models import ResourceDiagnostic

__all__ = [
    "MAX_SKILL_DESCRIPTION_LENGTH",
    "MAX_SKILL_NAME_LENGTH",
    "Skill",
    "SkillExpansionError",
    "SkillsResult",
    "discover_skills",
    "expand_skill_command",
    "format_skills_for_prompt",
    "load_skill_file",
    "load_skills",
    "load_skills_from_dir",
]

MAX_SKILL_NAME_LENGTH = 64
MAX_SKILL_DESCRIPTION_LENGTH = 1024
_NAME_RE = r"[a-z0-9-]+"  # compiled (and cached by re) with the first skill


class Skill(BaseModel):
    """One loaded skill.

    :ivar name: the frontmatter ``name``, else the skill directory's name.
    :ivar description: what the skill does and when to use it (shown to the model).
    :ivar file_path: the skill file (``SKILL.md`` or a root ``.md``), absolute.
    :ivar base_dir: the directory relative references in the skill resolve against.
    :ivar disable_model_invocation: hidden from the system prompt; only ``/skill:name`` runs it.
    :ivar scope: ``"project"``, ``"user"`` or ``"temporary"`` (an explicit path).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    description: str
    file_path: str
    base_dir: str
    disable_model_invocation: bool = False
    scope: ResourceScope = "temporary"


@dataclass(frozen=True)
class SkillsResult:
    """Skills in precedence order, and what went wrong finding them."""

    skills: tuple[Skill, ...] = ()
    diagnostics: tuple[ResourceDiagnostic, ...] = ()

    def get(self, name: str) -> Skill | None:
        """The skill called *name*, if loaded."""
        return next((s for s in self.skills if s.name == name), None)


class SkillExpansionError(OSError):
    """A ``/skill:`` command named a skill whose file can no longer be read or parsed."""

    def __init__(self, skill: Skill, cause: Exception) -> None:
        super().__init__(f"Could not expand /skill:{skill.name}: {skill.file_path}: {cause}")
        self.skill = skill
        self.cause = cause


def _validate_name(name: str, parent_dir_name: str) -> list[str]:
    errors: list[str] = []
    if name != parent_dir_name:
        errors.append(f'name "{name}" does not match parent directory "{parent_dir_name}"')
    if len(name) > MAX_SKILL_NAME_LENGTH:
        errors.append(f"name exceeds {MAX_SKILL_NAME_LENGTH} characters ({len(name)})")
    if not re.fullmatch(_NAME_RE, name):
        errors.append("name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)")
    if name.startswith("-") or name.endswith("-"):
        errors.append("name must not start or end with a hyphen")
    if "--" in name:
        errors.append("name must not contain consecutive hyphens")
    return errors


def _validate_description(description: Any) -> list[str]:
    if description is None or (isinstance(description, str) and not description.strip()):
        return ["description is required"]
    if not isinstance(description, str):
        return ["description must be text"]
    if len(description) > MAX_SKILL_DESCRIPTION_LENGTH:
        return [f"description exceeds {MAX_SKILL_DESCRIPTION_LENGTH} characters ({len(description)})"]
    return []


def _read_text(path: Path) -> str:
    # Invalid UTF-8 becomes U+FFFD, as Node's utf-8 decoding does; a stray byte never hides a skill.
    return path.read_text(encoding="utf-8", errors="replace")


def load_skill_file(
    path: str | os.PathLike[str], *, scope: ResourceScope = "temporary"
) -> tuple[Skill | None, list[ResourceDiagnostic]]:
    """Load one skill file; ``(None, diagnostics)`` when it cannot be used.

    Name and description problems are warnings (the skill loads); a missing description, an
    unreadable file or invalid frontmatter YAML skip the skill.
    """
    # The frontmatter parser is imported with the first skill file: most projects have none.
    from ._frontmatter import FrontmatterError, parse_frontmatter

    file_path = Path(path)
    diagnostics: list[ResourceDiagnostic] = []
    try:
        frontmatter = parse_frontmatter(_read_text(file_path)).data
    except (OSError, FrontmatterError) as exc:
        return None, [diagnostic("warning", str(exc), file_path)]
    skill_dir = file_path.parent
    parent_dir_name = skill_dir.name
    description = frontmatter.get("description")
    for error in _validate_description(description):
        diagnostics.append(diagnostic("warning", error, file_path))
    raw_name = frontmatter.get("name")
    if raw_name is not None and not isinstance(raw_name, str):
        diagnostics.append(diagnostic("warning", "name must be text; using the directory name", file_path))
        raw_name = None
    name = raw_name or parent_dir_name
    for error in _validate_name(name, parent_dir_name):
        diagnostics.append(diagnostic("warning", error, file_path))
    if not isinstance(description, str) or not description.strip():
        return None, diagnostics
    skill = Skill(
        name=name,
        description=description,
        file_path=os.fspath(file_path),
        base_dir=os.fspath(skill_dir),
        disable_model_invocation=frontmatter.get("disable-model-invocation") is True,
        scope=scope,
    )
    return skill, diagnostics


def load_skills_from_dir(
    directory: str | os.PathLike[str], *, scope: ResourceScope = "temporary"
) -> SkillsResult:
    """Load every skill under *directory* (see :func:`collect_skill_files` for the rules).

    A missing directory gives an empty result, without diagnostics.
    """
    skills: list[Skill] = []
    diagnostics: list[ResourceDiagnostic] = []
    for file_path in collect_skill_files(Path(directory)):
        skill, problems = load_skill_file(file_path, scope=scope)
        diagnostics.extend(problems)
        if skill is not None:
            skills.append(skill)
    return SkillsResult(tuple(skills), tuple(diagnostics))


class _SkillSet:
    """Skills by name: the first wins, later ones become collision diagnostics."""

    def __init__(self) -> None:
        self.by_name: dict[str, Skill] = {}
        self.real_paths: set[str] = set()
        self.diagnostics: list[ResourceDiagnostic] = []
        self.collisions: list[ResourceDiagnostic] = []

    def add(self, skills: Iterable[Skill]) -> None:
        for skill in skills:
            real = canonical_path(skill.file_path)
            if real in self.real_paths:
                continue  # the same file again, through a symlink
            existing = self.by_name.get(skill.name)
            if existing is not None:
                self.collisions.append(
                    collision_diagnostic("skill", skill.name, existing.file_path, skill.file_path)
                )
                continue
            self.by_name[skill.name] = skill
            self.real_paths.add(real)

    def add_path(
        self, path: Path, scope: ResourceScope, *, missing: Literal["warning", "error"] = "warning"
    ) -> None:
        if not exists(path):
            self.diagnostics.append(diagnostic(missing, "skill path does not exist", path))
            return
        if is_dir(path):
            result = load_skills_from_dir(path, scope=scope)
            self.diagnostics.extend(result.diagnostics)
            self.add(result.skills)
        elif is_file(path) and path.name.endswith(".md"):
            skill, problems = load_skill_file(path, scope=scope)
            self.diagnostics.extend(problems)
            if skill is not None:
                self.add([skill])
        else:
            self.diagnostics.append(diagnostic("warning", "skill path is not a markdown file", path))

    def result(self) -> SkillsResult:
        return SkillsResult(tuple(self.by_name.values()), (*self.diagnostics, *self.collisions))


def load_skills(
    paths: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str],
    scope: ResourceScope = "temporary",
) -> SkillsResult:
    """Load skills from explicit files and directories (pi's ``--skill``).

    Paths are ``~``-expanded and resolved against *cwd*. A missing path, a file that is not
    Markdown and name collisions are reported as diagnostics.
    """
    skill_set = _SkillSet()
    for raw in paths:
        skill_set.add_path(resolve_user_path(os.fspath(raw), cwd), scope)
    return skill_set.result()


def discover_skills(
    *,
    cwd: str | os.PathLike[str],
    agent_dir: str | os.PathLike[str],
    project_trusted: bool,
    global_entries: Sequence[str] = (),
    project_entries: Sequence[str] = (),
    extra_paths: Sequence[str | os.PathLike[str]] = (),
    include_defaults: bool = True,
    home: str | os.PathLike[str] | None = None,
) -> SkillsResult:
    """Find and load all skills, as pi does at startup and on ``/reload``.

    Sources in precedence order (the first skill with a name wins):

    1. project ``skills`` settings entries (``<cwd>/.pi/settings.json``), then ``<cwd>/.pi/skills/``
       and ``.agents/skills/`` in *cwd* and its ancestors up to the git root — all only when
       *project_trusted*;
    2. user ``skills`` settings entries, then ``<agent_dir>/skills/`` and ``~/.agents/skills/``;
    3. *extra_paths* (``--skill``), which load even when *include_defaults* is false
       (``--no-skills`` turns off 1 and 2).

    :param global_entries: the ``skills`` list of the global settings (paths relative to the
        agent directory; globs and ``!``/``+``/``-`` overrides as in pi).
    :param project_entries: the ``skills`` list of the project settings (relative to ``.pi``).
    :param home: the home directory (default: the current user's), for ``~/.agents/skills``.
    """
    cwd_path = Path(os.path.abspath(cwd))
    skill_set = _SkillSet()
    if include_defaults:
        for found in resolve_resource_files(
            "skills",
            cwd=cwd_path,
            agent_dir=Path(agent_dir),
            project_trusted=project_trusted,
            global_entries=global_entries,
            project_entries=project_entries,
            home=Path(home) if home is not None else None,
        ):
            skill_set.add_path(found.path, found.scope)
    for raw in extra_paths:
        skill_set.add_path(resolve_user_path(os.fspath(raw), cwd_path), "temporary", missing="error")
    return skill_set.result()


def _escape_xml(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def format_skills_for_prompt(skills: Iterable[Skill]) -> str:
    """The system prompt's skills section (empty when no skill is visible to the model).

    Uses the Agent Skills XML format with pi's introduction, which models are used to; skills
    with ``disable-model-invocation`` are left out. The text starts with a blank line so it can
    be appended to the prompt directly.
    """
    visible = [s for s in skills if not s.disable_model_invocation]
    if not visible:
        return ""
    lines = [
        "\n\nThe following skills provide specialized instructions for specific tasks.",
        "Use the read tool to load a skill's file when the task matches its description.",
        "When a skill file references a relative path, resolve it against the skill directory "
        "(parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines.append("  <skill>")
        lines.append(f"    <name>{_escape_xml(skill.name)}</name>")
        lines.append(f"    <description>{_escape_xml(skill.description)}</description>")
        lines.append(f"    <location>{_escape_xml(skill.file_path)}</location>")
        lines.append("  </skill>")
    lines.append("</available_skills>")
    return "\n".join(lines)


def expand_skill_command(text: str, skills: Iterable[Skill]) -> str:
    """Expand ``/skill:name args`` into the skill's content; other text comes back unchanged.

    The result is pi's block, ``<skill name="…" location="…">``, a line saying where references
    resolve, the skill body without frontmatter, ``</skill>``, then the arguments (if any) after
    a blank line. An unknown skill name leaves the text as it is.

    :raises SkillExpansionError: the skill's file cannot be read or parsed any more; the caller
        reports it (pi emits an extension error) and sends the text unexpanded.
    """
    if not text.startswith("/skill:"):
        return text
    space = text.find(" ")
    name = text[7:] if space == -1 else text[7:space]
    args = "" if space == -1 else text[space + 1 :].strip()
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        return text
    from ._frontmatter import FrontmatterError, strip_frontmatter

    try:
        body = strip_frontmatter(_read_text(Path(skill.file_path))).strip()
    except (OSError, FrontmatterError) as exc:
        raise SkillExpansionError(skill, exc) from exc
    block = (
        f'<skill name="{skill.name}" location="{skill.file_path}">\n'
        f"References are relative to {skill.base_dir}.\n\n{body}\n</skill>"
    )
    return f"{block}\n\n{args}" if args else block
