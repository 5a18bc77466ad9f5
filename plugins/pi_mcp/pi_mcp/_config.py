"""Which MCP servers a session has: Claude Code's ``.mcp.json`` format, from four places.

In order, a later definition of a server name replacing an earlier one:

1. ``<agent_dir>/mcp.json`` (the user's own servers);
2. the ``mcp.servers`` object of ``settings.json`` (global, then project);
3. ``<project>/.mcp.json`` and 4. ``<project>/.pi/mcp.json`` — only once the project is
   trusted; untrusted, they are ignored with a notice.

Each file holds ``{"mcpServers": {"name": {...}}}``. A server is stdio (``command``, ``args``,
``env``) or remote (``"type": "http"`` or ``"sse"`` with ``url`` and ``headers``). Strings
in those keys expand ``${VAR}`` and ``${VAR:-default}`` from the environment, as Claude Code
does. A malformed file or server is reported naming the file and key; the others still load.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "PROJECT_FILES",
    "USER_FILE",
    "ConfigProblem",
    "LoadedConfig",
    "ServerConfig",
    "expand",
    "load_config",
    "parse_servers",
]

USER_FILE = "mcp.json"
#: Project files, relative to the project root (they need the project to be trusted).
PROJECT_FILES = (".mcp.json", ".pi/mcp.json")

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class ServerConfig(BaseModel):
    """One MCP server, validated and with its variables expanded.

    :ivar allowed_tools: when set, only tools whose name matches one of these ``fnmatch``
        patterns are offered (``allowedTools`` in the file).
    :ivar disabled_tools: tools never offered (``disabledTools``), checked after the allow list.
    :ivar source: the file (or ``settings.json``) the definition came from.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    transport: Literal["stdio", "http", "sse"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = {}
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = {}
    allowed_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    source: str = ""


@dataclass(frozen=True)
class ConfigProblem:
    """A definition that could not be used: where it is and what to change."""

    source: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}"


@dataclass
class LoadedConfig:
    """The servers of a session, the problems found, and project files left out untrusted."""

    servers: dict[str, ServerConfig] = field(default_factory=dict)
    problems: list[ConfigProblem] = field(default_factory=list)
    untrusted_files: list[str] = field(default_factory=list)


class _Invalid(ValueError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def expand(value: str, key: str, environ: Mapping[str, str]) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}`` in *value*.

    :raises ValueError: a variable without a default is not set (the message names it and *key*).
    """

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found is not None and (found != "" or default is None):
            return found
        if default is not None:
            return default
        raise _Invalid(key, f"environment variable {name} is not set; set it or write ${{{name}:-default}}")

    return _VAR.sub(replace, value)


def _string(raw: Mapping[str, Any], key: str, where: str, environ: Mapping[str, str]) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise _Invalid(f"{where}.{key}", f"must be a string, not {json.dumps(value)}")
    return expand(value, f"{where}.{key}", environ)


def _strings(raw: Mapping[str, Any], key: str, where: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Invalid(f"{where}.{key}", "must be a list of strings")
    return tuple(expand(item, f"{where}.{key}[{i}]", environ) for i, item in enumerate(value))


def _mapping(raw: Mapping[str, Any], key: str, where: str, environ: Mapping[str, str]) -> dict[str, str]:
    value = raw.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise _Invalid(f"{where}.{key}", "must be an object of strings")
    return {name: expand(item, f"{where}.{key}.{name}", environ) for name, item in value.items()}


def _server(name: str, raw: Any, source: str, environ: Mapping[str, str]) -> ServerConfig:
    where = f"mcpServers.{name}"
    if not _NAME.match(name):
        raise _Invalid(where, "server names may use letters, digits, '_', '-' and '.'")
    if not isinstance(raw, dict):
        raise _Invalid(where, "must be an object with a command or a url")
    kind = raw.get("type", "stdio" if "command" in raw else None)
    if kind == "streamable-http":
        kind = "http"
    if kind not in ("stdio", "http", "sse"):
        if kind is None:
            raise _Invalid(where, 'needs "command" (a stdio server) or "type": "http"/"sse" with "url"')
        raise _Invalid(f"{where}.type", f'must be "stdio", "http" or "sse", not {json.dumps(kind)}')
    allowed = raw.get("allowedTools")
    common: dict[str, Any] = {
        "allowed_tools": None if allowed is None else _strings(raw, "allowedTools", where, {}),
        "disabled_tools": _strings(raw, "disabledTools", where, {}),
    }
    if kind == "stdio":
        command = _string(raw, "command", where, environ)
        if not command:
            raise _Invalid(f"{where}.command", "is missing or empty: name the program that runs the server")
        cwd = raw.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise _Invalid(f"{where}.cwd", "must be a string")
        return ServerConfig(
            name=name,
            transport="stdio",
            command=command,
            args=_strings(raw, "args", where, environ),
            env=_mapping(raw, "env", where, environ),
            cwd=None if cwd is None else expand(cwd, f"{where}.cwd", environ),
            source=source,
            **common,
        )
    url = _string(raw, "url", where, environ)
    if not url.startswith(("http://", "https://")):
        raise _Invalid(f"{where}.url", f"must be an http:// or https:// URL, not {json.dumps(url)}")
    return ServerConfig(
        name=name,
        transport=kind,
        url=url,
        headers=_mapping(raw, "headers", where, environ),
        source=source,
        **common,
    )


def parse_servers(
    data: Any, source: str, environ: Mapping[str, str], into: LoadedConfig, *, key: str = "mcpServers"
) -> None:
    """Add the servers of one parsed document (``{"mcpServers": {...}}``) to *into*."""
    if not isinstance(data, dict):
        into.problems.append(
            ConfigProblem(source, "(top level)", 'must be an object like {"mcpServers": {}}')
        )
        return
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        into.problems.append(ConfigProblem(source, key, "must be an object from server names to servers"))
        return
    for name, raw in servers.items():
        try:
            into.servers[name] = _server(name, raw, source, environ)
        except _Invalid as exc:
            into.problems.append(ConfigProblem(source, exc.key, f"{exc}; server {name!r} is not started"))
            into.servers.pop(name, None)


def _read_file(path: Path, environ: Mapping[str, str], into: LoadedConfig) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError) as exc:
        into.problems.append(ConfigProblem(str(path), "(file)", f"cannot be read: {exc}"))
        return
    if not text.strip():
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        into.problems.append(
            ConfigProblem(
                str(path), "(file)", f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
            )
        )
        return
    parse_servers(data, str(path), environ, into)


def load_config(
    *,
    agent_dir: str | os.PathLike[str],
    cwd: str | os.PathLike[str],
    trusted: bool,
    settings_servers: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Read every source (see the module docs); nothing here raises for bad input."""
    env = os.environ if environ is None else environ
    loaded = LoadedConfig()
    _read_file(Path(agent_dir) / USER_FILE, env, loaded)
    if settings_servers:
        parse_servers({"mcpServers": dict(settings_servers)}, "settings.json", env, loaded, key="mcp.servers")
    for relative in PROJECT_FILES:
        path = Path(cwd) / relative
        if not path.is_file():
            continue
        if trusted:
            _read_file(path, env, loaded)
        else:
            loaded.untrusted_files.append(str(path))
    return loaded
