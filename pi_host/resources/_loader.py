"""Everything the system prompt and the prompt pipeline need from disk, loaded in one call.

The session runtime calls :func:`load_resources` at startup and on ``/reload``, and
:meth:`Resources.system_prompt` whenever the active tools change.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from ._context_files import ContextFile, load_context_files
from ._settings import SettingsManager
from ._skills import Skill, discover_skills, expand_skill_command
from ._system_prompt import (
    DEFAULT_IDENTITY,
    DocsPaths,
    PromptTool,
    build_system_prompt,
    load_system_prompt_sources,
)
from ._templates import PromptTemplate, discover_prompt_templates, expand_prompt_template

if TYPE_CHECKING:
    from ._diagnostic_models import ResourceDiagnostic

__all__ = ["ResourceOptions", "Resources", "load_resources"]


@dataclass(frozen=True)
class ResourceOptions:
    """The command-line switches that shape resource loading (pi's flags).

    :ivar context_files: ``False`` for ``--no-context-files`` / ``-nc``.
    :ivar skills: ``False`` for ``--no-skills`` (``skill_paths`` still load).
    :ivar prompt_templates: ``False`` for ``--no-prompt-templates`` (explicit paths still load).
    :ivar skill_paths: ``--skill`` values.
    :ivar prompt_template_paths: ``--prompt-template`` values.
    :ivar system_prompt: ``--system-prompt`` (text or a file).
    :ivar append_system_prompt: ``--append-system-prompt`` values (text or files); ``None``
        means "not given", so ``APPEND_SYSTEM.md`` is used.
    """

    context_files: bool = True
    skills: bool = True
    prompt_templates: bool = True
    skill_paths: tuple[str, ...] = ()
    prompt_template_paths: tuple[str, ...] = ()
    system_prompt: str | None = None
    append_system_prompt: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Resources:
    """The loaded context files, skills, templates and prompt texts for one working directory."""

    cwd: str
    context_files: tuple[ContextFile, ...] = ()
    skills: tuple[Skill, ...] = ()
    prompt_templates: tuple[PromptTemplate, ...] = ()
    custom_prompt: str | None = None
    append_system_prompt: tuple[str, ...] = ()
    diagnostics: tuple[ResourceDiagnostic, ...] = field(default=())

    def system_prompt(
        self,
        tools: Sequence[PromptTool],
        *,
        today: date | None = None,
        identity: str = DEFAULT_IDENTITY,
        docs: DocsPaths | None = None,
    ) -> str:
        """The system prompt for the active *tools* (see :func:`build_system_prompt`)."""
        return build_system_prompt(
            cwd=self.cwd,
            tools=tools,
            custom_prompt=self.custom_prompt,
            append_system_prompt=self.append_system_prompt,
            context_files=self.context_files,
            skills=self.skills,
            today=today,
            identity=identity,
            docs=docs,
        )

    def expand_input(self, text: str) -> str:
        """Expand ``/skill:name`` and then ``/template`` commands in user input, as pi does.

        :raises SkillExpansionError: a named skill's file cannot be read any more.
        """
        return expand_prompt_template(expand_skill_command(text, self.skills), self.prompt_templates)


def load_resources(
    *,
    cwd: str | os.PathLike[str],
    agent_dir: str | os.PathLike[str],
    settings: SettingsManager,
    options: ResourceOptions | None = None,
    home: str | os.PathLike[str] | None = None,
) -> Resources:
    """Load context files, skills, prompt templates and the prompt texts for *cwd*.

    Project resources (``.pi/skills``, ``.pi/prompts``, ``.pi/SYSTEM.md`` …) are used when
    *settings* was loaded for a trusted project (:attr:`SettingsManager.project_trusted`), so
    trust is decided in one place. Problems are collected in :attr:`Resources.diagnostics`.
    """
    opts = options or ResourceOptions()
    cwd_path = Path(os.path.abspath(cwd))
    trusted = settings.project_trusted
    context = load_context_files(cwd_path, agent_dir, enabled=opts.context_files)
    global_skills, project_skills = settings.resource_entries("skills")
    skills = discover_skills(
        cwd=cwd_path,
        agent_dir=agent_dir,
        project_trusted=trusted,
        global_entries=global_skills,
        project_entries=project_skills,
        extra_paths=opts.skill_paths,
        include_defaults=opts.skills,
        home=home,
    )
    global_prompts, project_prompts = settings.resource_entries("prompts")
    templates = discover_prompt_templates(
        cwd=cwd_path,
        agent_dir=agent_dir,
        project_trusted=trusted,
        global_entries=global_prompts,
        project_entries=project_prompts,
        extra_paths=opts.prompt_template_paths,
        include_defaults=opts.prompt_templates,
    )
    sources = load_system_prompt_sources(
        cwd=cwd_path,
        agent_dir=agent_dir,
        project_trusted=trusted,
        system_prompt=opts.system_prompt,
        append_system_prompt=opts.append_system_prompt,
    )
    return Resources(
        cwd=str(cwd_path),
        context_files=context.files,
        skills=skills.skills,
        prompt_templates=templates.templates,
        custom_prompt=sources.custom_prompt,
        append_system_prompt=sources.append,
        diagnostics=(*context.diagnostics, *skills.diagnostics, *templates.diagnostics, *sources.diagnostics),
    )
