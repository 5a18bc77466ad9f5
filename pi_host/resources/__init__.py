"""Layer 5 building blocks: the system prompt and the files that shape it.

Pure, synchronous functions and small classes that the session runtime calls: settings
(``settings.json``), project trust (``trust.json``), context files (``AGENTS.md``), skills
(``SKILL.md``), prompt templates, ``SYSTEM.md`` / ``APPEND_SYSTEM.md`` and the prompt itself.
Every file format is pi's, so a pi user's files work unchanged. Nothing here raises on a bad
file: problems come back as diagnostics for the user interface to show.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._context_files import CONTEXT_FILE_NAMES, ContextFile, ContextFilesResult, load_context_files
    from ._diagnostic_models import ResourceCollision, ResourceDiagnostic
    from ._discovery import ResourceScope
    from ._frontmatter import Frontmatter, FrontmatterError, parse_frontmatter, strip_frontmatter
    from ._loader import ResourceOptions, Resources, load_resources
    from ._paths import AGENT_DIR_ENV, CONFIG_DIR_NAME, agent_dir, expand_home, project_config_dir
    from ._settings import (
        DefaultProjectTrust,
        QueueMode,
        SettingsManager,
        SettingsScope,
        ThinkingLevel,
    )
    from ._settings_models import (
        BranchSummarySettings,
        CompactionSettings,
        ImageSettings,
        MarkdownSettings,
        PluginSettings,
        ProviderRetrySettings,
        RetrySettings,
        Settings,
        SettingsIssue,
        TerminalSettings,
        ThinkingBudgets,
        WarningSettings,
    )
    from ._skills import (
        Skill,
        SkillExpansionError,
        SkillsResult,
        discover_skills,
        expand_skill_command,
        format_skills_for_prompt,
        load_skill_file,
        load_skills,
        load_skills_from_dir,
    )
    from ._system_prompt import (
        DEFAULT_IDENTITY,
        DocsPaths,
        PromptTool,
        SystemPromptSources,
        build_system_prompt,
        find_docs,
        load_system_prompt_sources,
        resolve_prompt_input,
    )
    from ._templates import (
        PromptTemplate,
        PromptTemplatesResult,
        discover_prompt_templates,
        expand_prompt_template,
        load_prompt_template,
        load_prompt_templates,
        parse_command_args,
        substitute_args,
    )
    from ._trust import (
        TRUST_FILE_NAME,
        TRUST_REQUIRING_PROJECT_RESOURCES,
        ProjectTrust,
        ProjectTrustStore,
        TrustEntry,
        TrustOption,
        TrustStoreError,
        has_trust_requiring_resources,
        trust_prompt_text,
    )

__all__ = [
    "AGENT_DIR_ENV",
    "CONFIG_DIR_NAME",
    "CONTEXT_FILE_NAMES",
    "DEFAULT_IDENTITY",
    "TRUST_FILE_NAME",
    "TRUST_REQUIRING_PROJECT_RESOURCES",
    "BranchSummarySettings",
    "CompactionSettings",
    "ContextFile",
    "ContextFilesResult",
    "DefaultProjectTrust",
    "DocsPaths",
    "Frontmatter",
    "FrontmatterError",
    "ImageSettings",
    "MarkdownSettings",
    "PluginSettings",
    "ProjectTrust",
    "ProjectTrustStore",
    "PromptTemplate",
    "PromptTemplatesResult",
    "PromptTool",
    "ProviderRetrySettings",
    "QueueMode",
    "ResourceCollision",
    "ResourceDiagnostic",
    "ResourceOptions",
    "ResourceScope",
    "Resources",
    "RetrySettings",
    "Settings",
    "SettingsIssue",
    "SettingsManager",
    "SettingsScope",
    "Skill",
    "SkillExpansionError",
    "SkillsResult",
    "SystemPromptSources",
    "TerminalSettings",
    "ThinkingBudgets",
    "ThinkingLevel",
    "TrustEntry",
    "TrustOption",
    "TrustStoreError",
    "WarningSettings",
    "agent_dir",
    "build_system_prompt",
    "discover_prompt_templates",
    "discover_skills",
    "expand_home",
    "expand_prompt_template",
    "expand_skill_command",
    "find_docs",
    "format_skills_for_prompt",
    "has_trust_requiring_resources",
    "load_context_files",
    "load_prompt_template",
    "load_prompt_templates",
    "load_resources",
    "load_skill_file",
    "load_skills",
    "load_skills_from_dir",
    "load_system_prompt_sources",
    "parse_command_args",
    "parse_frontmatter",
    "project_config_dir",
    "resolve_prompt_input",
    "strip_frontmatter",
    "substitute_args",
    "trust_prompt_text",
]

# Names are imported on first access (PEP 562): a session uses what its options ask for,
# and ``pi-host --help`` only the settings and trust modules.
_EXPORTS: dict[str, str] = {
    "AGENT_DIR_ENV": "_paths",
    "BranchSummarySettings": "_settings_models",
    "CONFIG_DIR_NAME": "_paths",
    "CONTEXT_FILE_NAMES": "_context_files",
    "CompactionSettings": "_settings_models",
    "ContextFile": "_context_files",
    "ContextFilesResult": "_context_files",
    "DEFAULT_IDENTITY": "_system_prompt",
    "DefaultProjectTrust": "_settings",
    "DocsPaths": "_system_prompt",
    "Frontmatter": "_frontmatter",
    "FrontmatterError": "_frontmatter",
    "ImageSettings": "_settings_models",
    "MarkdownSettings": "_settings_models",
    "PluginSettings": "_settings_models",
    "ProjectTrust": "_trust",
    "ProjectTrustStore": "_trust",
    "PromptTemplate": "_templates",
    "PromptTemplatesResult": "_templates",
    "PromptTool": "_system_prompt",
    "ProviderRetrySettings": "_settings_models",
    "QueueMode": "_settings",
    "ResourceCollision": "_diagnostic_models",
    "ResourceDiagnostic": "_diagnostic_models",
    "ResourceOptions": "_loader",
    "ResourceScope": "_discovery",
    "Resources": "_loader",
    "RetrySettings": "_settings_models",
    "Settings": "_settings_models",
    "SettingsIssue": "_settings_models",
    "SettingsManager": "_settings",
    "SettingsScope": "_settings",
    "Skill": "_skills",
    "SkillExpansionError": "_skills",
    "SkillsResult": "_skills",
    "SystemPromptSources": "_system_prompt",
    "TRUST_FILE_NAME": "_trust",
    "TRUST_REQUIRING_PROJECT_RESOURCES": "_trust",
    "TerminalSettings": "_settings_models",
    "ThinkingBudgets": "_settings_models",
    "ThinkingLevel": "_settings",
    "TrustEntry": "_trust",
    "TrustOption": "_trust",
    "TrustStoreError": "_trust",
    "WarningSettings": "_settings_models",
    "agent_dir": "_paths",
    "build_system_prompt": "_system_prompt",
    "discover_prompt_templates": "_templates",
    "discover_skills": "_skills",
    "expand_home": "_paths",
    "expand_prompt_template": "_templates",
    "expand_skill_command": "_skills",
    "find_docs": "_system_prompt",
    "format_skills_for_prompt": "_skills",
    "has_trust_requiring_resources": "_trust",
    "load_context_files": "_context_files",
    "load_prompt_template": "_templates",
    "load_prompt_templates": "_templates",
    "load_resources": "_loader",
    "load_skill_file": "_skills",
    "load_skills": "_skills",
    "load_skills_from_dir": "_skills",
    "load_system_prompt_sources": "_system_prompt",
    "parse_command_args": "_templates",
    "parse_frontmatter": "_frontmatter",
    "project_config_dir": "_paths",
    "resolve_prompt_input": "_system_prompt",
    "strip_frontmatter": "_frontmatter",
    "substitute_args": "_templates",
    "trust_prompt_text": "_trust",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
