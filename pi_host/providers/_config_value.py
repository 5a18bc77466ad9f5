"""Resolve configured secrets and header values: shell commands, environment variables, literals.

``models.json`` (``apiKey``, ``headers``) and ``auth.json`` (``key``) accept, in this order:

- ``"!command"``: run through the shell; its stripped standard output is the value (a failing
  command, a 10 s timeout or empty output resolve to nothing);
- ``"NAME"``: the value of environment variable ``NAME`` when it is set and not empty (pi 0.73);
- text containing ``$``: ``$NAME`` and ``${NAME}`` are replaced by environment variables,
  ``$$`` stands for ``$`` and ``$!`` for ``!`` (so ``"$!x"`` is the literal ``!x``, not a command);
- anything else: the literal text.

Commands in ``models.json`` run at request time, every time (the user wraps a slow one in a
caching script); ``auth.json`` keys run once per process, as pi documents.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = [
    "ConfigValueError",
    "clear_command_cache",
    "is_command",
    "resolve_config_value",
    "resolve_config_value_or_raise",
    "resolve_headers",
    "resolve_headers_or_raise",
]

_COMMAND_TIMEOUT_S = 10.0
# Compiled (and cached by re) by the first value with a "$" in it: most values have none.
_DOLLAR = r"\$(?:(\$)|(!)|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))"
_command_cache: dict[str, str | None] = {}


class ConfigValueError(ValueError):
    """A configured value could not be resolved; the message names the setting and the cause."""


class _MissingVariable(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def is_command(value: str) -> bool:
    """Whether ``value`` is a ``!command`` (resolving it would run a program)."""
    return value.startswith("!")


def clear_command_cache() -> None:
    """Forget cached command outputs (tests, and ``/login`` after a key change)."""
    _command_cache.clear()


def resolve_config_value(
    value: str, *, env: Mapping[str, str] | None = None, cache_commands: bool = False
) -> str | None:
    """The resolved value, or ``None`` when a command fails or a ``$NAME`` is not set."""
    try:
        return _resolve(value, os.environ if env is None else env, cache_commands)
    except _MissingVariable:
        return None


def resolve_config_value_or_raise(
    value: str, description: str, *, env: Mapping[str, str] | None = None, cache_commands: bool = False
) -> str:
    """Like :func:`resolve_config_value`, but explain a failure.

    :param description: what the value is, for the message (``'API key for provider "x"'``).
    :raises ConfigValueError: naming ``description`` and the command or variable at fault.
    """
    try:
        resolved = _resolve(value, os.environ if env is None else env, cache_commands)
    except _MissingVariable as missing:
        raise ConfigValueError(
            f"Failed to resolve {description}: environment variable {missing.name} is not set"
        ) from None
    if resolved is not None:
        return resolved
    if is_command(value):
        raise ConfigValueError(f"Failed to resolve {description} from shell command: {value[1:]}")
    raise ConfigValueError(f"Failed to resolve {description}")


def resolve_headers(
    headers: Mapping[str, str] | None, *, env: Mapping[str, str] | None = None, cache_commands: bool = False
) -> dict[str, str] | None:
    """Resolve each header value; headers that resolve to nothing are left out."""
    if not headers:
        return None
    resolved: dict[str, str] = {}
    for name, value in headers.items():
        result = resolve_config_value(value, env=env, cache_commands=cache_commands)
        if result:
            resolved[name] = result
    return resolved or None


def resolve_headers_or_raise(
    headers: Mapping[str, str] | None, description: str, *, env: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """Resolve each header value, raising :class:`ConfigValueError` for the first failure."""
    if not headers:
        return None
    resolved = {
        name: resolve_config_value_or_raise(value, f'{description} header "{name}"', env=env)
        for name, value in headers.items()
    }
    return resolved or None


def _resolve(value: str, env: Mapping[str, str], cache_commands: bool) -> str | None:
    if is_command(value):
        return _run_command(value[1:], cache_commands)
    from_env = env.get(value)
    if from_env:
        return from_env
    if "$" in value:
        return _interpolate(value, env)
    return value


def _interpolate(value: str, env: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        dollar, bang, braced, bare = match.groups()
        if dollar:
            return "$"
        if bang:
            return "!"
        name = braced or bare
        resolved = env.get(name)
        if resolved is None:
            raise _MissingVariable(name)
        return resolved

    return re.sub(_DOLLAR, replace, value)


def _run_command(command: str, cache: bool) -> str | None:
    if cache and command in _command_cache:
        return _command_cache[command]
    import subprocess

    try:
        completed = subprocess.run(
            command,
            shell=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=_COMMAND_TIMEOUT_S,
            text=True,
            check=False,
        )
        result = (completed.stdout.strip() or None) if completed.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        result = None
    if cache:
        _command_cache[command] = result
    return result
