"""Agent definitions: Claude Code's ``agents/*.md`` files, and the built-in general-purpose agent.

A definition is a Markdown file whose YAML frontmatter names the agent and whose body is its
system prompt::

    ---
    name: code-reviewer
    description: Reviews a change for bugs and style. Use after writing code.
    tools: Read, Grep, Glob        # or a YAML list; leave out for the parent's tools
    model: sonnet                  # provider/id, an alias (sonnet, opus, haiku), or inherit
    isolation: worktree            # optional: run in a fresh git worktree
    ---
    You are a careful reviewer ...

Files come from ``<agent dir>/agents/``, then (trusted projects only) ``<project>/.claude/agents/``
and ``<project>/.pi/agents/``; a later one with the same name wins. A file that cannot be read
as a definition is a :class:`DefinitionProblem` naming the file and line, and is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from pi_host import FrontmatterError, parse_frontmatter

__all__ = [
    "BUILTIN_AGENT",
    "CLAUDE_MODEL_ALIASES",
    "CLAUDE_TOOL_NAMES",
    "PROJECT_DIRS",
    "USER_DIR",
    "AgentDefinition",
    "DefinitionProblem",
    "LoadedDefinitions",
    "is_tool_pattern",
    "load_definitions",
    "parse_definition",
]

USER_DIR = "agents"
"""Under the agent directory."""

PROJECT_DIRS = (".claude/agents", ".pi/agents")
"""Under a trusted project, in increasing precedence."""

CLAUDE_TOOL_NAMES: dict[str, str] = {
    "Read": "read",
    "Write": "write",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Bash": "bash",
    "Grep": "grep",
    "Glob": "find",
    "LS": "ls",
    "Task": "task",
}
"""Claude Code's tool names and pi-host's tools that do the same work."""

CLAUDE_MODEL_ALIASES: dict[str, str] = {
    "sonnet": "anthropic/sonnet",
    "opus": "anthropic/opus",
    "haiku": "anthropic/haiku",
}
"""Claude Code's model aliases as pi-host model patterns (the newest matching Anthropic model)."""

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")

Source = Literal["builtin", "user", "project"]


class AgentDefinition(BaseModel):
    """One agent a ``task`` call may name as its ``subagent_type``.

    :ivar tools: the pi-host tool names the child may use, or patterns of them (``mcp__db__*``);
        an allow-list that holds for tools plugins register while the child runs too.
        ``None`` for the parent's tools.
    :ivar model: a ``provider/id`` pattern (aliases already mapped); ``None`` for the parent's.
    :ivar max_turns: a turn budget of the definition's own (``maxTurns``), ``None`` for the
        settings' budget.
    :ivar path: the file, ``None`` for the built-in agent.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    system_prompt: str
    tools: tuple[str, ...] | None = None
    model: str | None = None
    isolation: Literal["worktree"] | None = None
    max_turns: int | None = None
    source: Source = "user"
    path: str | None = None

    @property
    def where(self) -> str:
        return self.path or "built in"


class DefinitionProblem(BaseModel):
    """A file that is not a usable definition: skipped, and reported with its place."""

    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class LoadedDefinitions(BaseModel):
    """The definitions in force (by name) and the files that were skipped."""

    model_config = ConfigDict(frozen=True)

    agents: dict[str, AgentDefinition]
    problems: tuple[DefinitionProblem, ...] = ()
    untrusted_dirs: tuple[str, ...] = ()


BUILTIN_AGENT = AgentDefinition(
    name="general-purpose",
    description=(
        "General-purpose agent for researching complex questions, searching for code, and "
        "executing multi-step tasks. Use it when a search or a piece of work would flood your "
        "context, or when several independent pieces of work can run at once."
    ),
    system_prompt=(
        "You are an agent working on a task handed to you by another agent. Use the tools "
        "available to you to complete it. Do what has been asked; nothing more, nothing less. "
        "Your final message is all the other agent sees: when you are done, reply with a "
        "concise, complete report of what you found or did, naming files and lines where it "
        "helps."
    ),
    source="builtin",
)


def _key_line(text: str, key: str) -> int:
    """The file line of ``key:`` in the frontmatter (1 when it is not there)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith(f"{key}:"):
            return number
        if number > 1 and line.rstrip() == "---":
            break
    return 1


def _tools(value: Any) -> tuple[str, ...] | str:
    """The ``tools`` value as pi-host names, or what is wrong with it."""
    if isinstance(value, str):
        names = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        names = [item.strip() for item in value if item.strip()]
    else:
        return "tools must be a comma-separated string or a list of tool names"
    if names == ["*"]:
        return "*"
    return tuple(dict.fromkeys(_pi_name(name) for name in names))


def _pi_name(name: str) -> str:
    """A ``tools:`` entry as pi-host names it: Claude Code's tool names mapped, and a bare
    ``mcp__server`` (Claude Code's way to name every tool of a server) as ``mcp__server__*``."""
    if name.startswith("mcp__") and "__" not in name[len("mcp__") :]:
        return f"{name}__*"
    return CLAUDE_TOOL_NAMES.get(name, name)


def is_tool_pattern(name: str) -> bool:
    """Whether a ``tools:`` entry is a pattern (``mcp__db__*``) rather than one tool's name."""
    return any(char in name for char in "*?[")


def parse_definition(text: str, path: str, source: Source = "user") -> AgentDefinition | DefinitionProblem:
    """Read one agent file's text."""
    try:
        parsed = parse_frontmatter(text)
    except FrontmatterError as exc:
        return DefinitionProblem(path=path, line=exc.line, message=f"invalid YAML frontmatter: {exc.reason}")
    data = parsed.data
    if not data:
        return DefinitionProblem(
            path=path,
            line=1,
            message="no YAML frontmatter: an agent file starts with '---', then name: and description:",
        )

    def problem(key: str, message: str) -> DefinitionProblem:
        return DefinitionProblem(path=path, line=_key_line(text, key), message=message)

    name = data.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return problem("name", f"name must be lowercase letters, digits, '-' or '_', not {name!r}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        return problem("description", "description is missing: say when the agent should be used")
    tools: tuple[str, ...] | None = None
    if data.get("tools") is not None:
        found = _tools(data["tools"])
        if isinstance(found, str) and found != "*":
            return problem("tools", found)
        tools = None if found == "*" else tuple(found)
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        return problem(
            "model", f"model must be provider/id, an alias (sonnet, opus, haiku) or inherit: {model!r}"
        )
    if isinstance(model, str):
        model = (
            None
            if model.strip() in ("", "inherit")
            else CLAUDE_MODEL_ALIASES.get(model.strip(), model.strip())
        )
    isolation = data.get("isolation")
    if isolation is not None and isolation != "worktree":
        return problem("isolation", f"isolation can only be 'worktree', not {isolation!r}")
    max_turns = data.get("maxTurns")
    if max_turns is not None and (
        not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1
    ):
        return problem("maxTurns", f"maxTurns must be a whole number >= 1, not {max_turns!r}")
    if not parsed.body.strip():
        return DefinitionProblem(path=path, line=1, message="the body (the agent's system prompt) is empty")
    return AgentDefinition(
        name=name,
        description=description.strip(),
        system_prompt=parsed.body.strip(),
        tools=tools,
        model=model,
        isolation=isolation,
        max_turns=max_turns,
        source=source,
        path=path,
    )


def _files(directory: Path) -> Iterable[Path]:
    try:
        return sorted(p for p in directory.iterdir() if p.suffix == ".md" and p.is_file())
    except OSError:
        return ()


def load_definitions(*, agent_dir: Path, cwd: str, trusted: bool) -> LoadedDefinitions:
    """The built-in agent, the user's agents, then (when trusted) the project's, later ones winning.

    An untrusted project's agent directories are not read; they are listed in
    ``untrusted_dirs`` so the user can be told why their agents are missing.
    """
    agents: dict[str, AgentDefinition] = {BUILTIN_AGENT.name: BUILTIN_AGENT}
    problems: list[DefinitionProblem] = []
    untrusted: list[str] = []
    places: list[tuple[Path, Source]] = [(agent_dir / USER_DIR, "user")]
    for relative in PROJECT_DIRS:
        directory = Path(cwd) / relative
        if not trusted:
            if any(True for _ in _files(directory)):
                untrusted.append(str(directory))
            continue
        places.append((directory, "project"))
    for directory, source in places:
        for path in _files(directory):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(DefinitionProblem(path=str(path), line=1, message=f"cannot read: {exc}"))
                continue
            found = parse_definition(text, str(path), source)
            if isinstance(found, DefinitionProblem):
                problems.append(found)
            else:
                agents[found.name] = found
    return LoadedDefinitions(agents=agents, problems=tuple(problems), untrusted_dirs=tuple(untrusted))
