"""Layer 5 building blocks: the system prompt and the files that shape it.

Pure, synchronous functions and small classes that the session runtime calls: settings
(``settings.json``), project trust (``trust.json``), context files (``AGENTS.md``), skills
(``SKILL.md``), prompt templates, ``SYSTEM.md`` / ``APPEND_SYSTEM.md`` and the prompt itself.
Every file format is pi's, so a pi user's files work unchanged. Nothing here raises on a bad
file: problems come back as diagnostics for the user interface to show.
"""

from __future__ import annotations

from ._context_files import CONTEXT_FILE_NAMES, ContextFile, ContextFilesResult, load_context_files
from ._diagnostics import ResourceCollision, ResourceDiagnostic
from ._discovery import ResourceScope
from ._frontmatter import Frontmatter, FrontmatterError, parse_frontmatter, strip_frontmatter
from ._loader import ResourceOptions, Resources, load_resources
from ._paths import AGENT_DIR_ENV, CONFIG_DIR_NAME, agent_dir, expand_home, project_config_dir
from ._settings import (
    BranchSummarySettings,
    CompactionSettings,
    DefaultProjectTrust,
    ImageSettings,
    MarkdownSettings,
    PluginSettings,
    ProviderRetrySettings,
    QueueMode,
    RetrySettings,
    Settings,
    SettingsIssue,
    SettingsManager,
    SettingsScope,
    TerminalSettings,
    ThinkingBudgets,
    ThinkingLevel,
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
