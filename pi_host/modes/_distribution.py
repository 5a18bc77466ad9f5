"""Agent distributions: pi-host under another command name, with its own plugins, defaults and files.

A distribution is a Python package that depends on pi-host and a chosen set of plugins and
installs a console script pointing at :meth:`Distribution.main`::

    # code_reviewer/__init__.py
    from pi_host import Distribution

    DISTRIBUTION = Distribution(
        name="code-reviewer",
        plugins={"tools_fs"},
        plugin_modules=("code_reviewer.policy",),
        tools=("read", "grep", "find", "ls"),
        system_prompt="You review code. You never change files.",
    )


    def main() -> int:
        return DISTRIBUTION.main()

    # pyproject.toml
    [project.scripts]
    code-reviewer = "code_reviewer:main"

The command then behaves like ``pi-host`` (same flags, modes and file formats) with these
differences: its agent directory (settings, sessions, models.json, auth.json) is its own; only
the plugins it allows load, plus its own plugin modules, which are registered directly and so
are invisible to a plain ``pi-host`` installed in the same environment; and its defaults apply
wherever the user gave no flag of their own.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Iterable, Mapping, MutableMapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pi_host.runtime import SessionOptions

__all__ = ["Distribution"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_PLUGINS_ENV = "PI_HOST_PLUGINS"
_DISABLE_ENV = "PI_HOST_DISABLE_PLUGINS"
_AGENT_DIR_ENV = "PI_HOST_DIR"


def _names(value: Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError(f"expected a collection of plugin names, not the string {value!r}")
    return frozenset(value)


@dataclass(frozen=True)
class Distribution:
    """What makes an agent distribution different from a plain ``pi-host``.

    Provisional public API (agent distributions): it may change before pi-host 1.0.

    :ivar name: the command name (``code-reviewer``); used in ``--help`` and ``--version``.
    :ivar version: printed by ``--version`` (default: pi-host's version).
    :ivar agent_dir_name: the agent directory under the home directory (default: ``.<name>``).
    :ivar agent_dir_env: the variable that moves it (default: ``<NAME>_DIR``, e.g.
        ``CODE_REVIEWER_DIR``); ``PI_HOST_DIR`` does not apply to a distribution.
    :ivar plugins: the installed plugins (entry-point names) it may load; ``None`` allows every
        installed plugin. ``PI_HOST_PLUGINS`` can narrow this further (``""`` is safe mode),
        never widen it.
    :ivar disabled_plugins: installed plugins it never loads (added to
        ``PI_HOST_DISABLE_PLUGINS`` and the settings' ``plugins.disable``).
    :ivar plugin_modules: modules with hook implementations of its own, imported and registered
        for this command only (not entry points, so a plain ``pi-host`` never loads them).
    :ivar default_model: ``provider/model`` used when neither ``--model`` nor ``--provider`` is
        given, no session is resumed, and the settings name no default model.
    :ivar system_prompt: replaces the default system prompt unless ``--system-prompt`` is given.
    :ivar append_system_prompt: text appended to the system prompt (before the user's own
        ``--append-system-prompt`` texts).
    :ivar tools: the active tools unless ``--tools`` is given; ``None`` keeps pi's default set.
    """

    name: str
    version: str | None = None
    agent_dir_name: str | None = None
    agent_dir_env: str | None = None
    plugins: AbstractSet[str] | None = None
    disabled_plugins: AbstractSet[str] = field(default_factory=frozenset)
    plugin_modules: tuple[str, ...] = ()
    default_model: str | None = None
    system_prompt: str | None = None
    append_system_prompt: tuple[str, ...] = ()
    tools: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"invalid distribution name {self.name!r}: use letters, digits, '-', '_' or '.'")
        object.__setattr__(self, "plugins", _names(self.plugins))
        object.__setattr__(self, "disabled_plugins", _names(self.disabled_plugins) or frozenset())
        for attribute in ("plugin_modules", "append_system_prompt"):
            value = getattr(self, attribute)
            if isinstance(value, str):
                raise TypeError(f"Distribution.{attribute} must be a sequence of strings, not a string")
            object.__setattr__(self, attribute, tuple(value))
        if self.tools is not None:
            if isinstance(self.tools, str):
                raise TypeError("Distribution.tools must be a sequence of tool names, not a string")
            object.__setattr__(self, "tools", tuple(self.tools))
        if self.default_model is not None and "/" not in self.default_model:
            raise ValueError(
                f"Distribution.default_model must be 'provider/model', not {self.default_model!r}"
            )

    # -- where its files live --------------------------------------------------------------------

    @property
    def agent_dir_variable(self) -> str:
        """The environment variable that moves the agent directory (``CODE_REVIEWER_DIR``)."""
        if self.agent_dir_env:
            return self.agent_dir_env
        return re.sub(r"[^A-Za-z0-9]", "_", self.name).upper() + "_DIR"

    def agent_dir(self, environ: Mapping[str, str] | None = None) -> Path:
        """The agent directory: ``$<NAME>_DIR`` when set, else ``~/.<name>``."""
        env = os.environ if environ is None else environ
        configured = env.get(self.agent_dir_variable, "").strip()
        if configured:
            return Path(os.path.expanduser(configured)).resolve()
        return Path.home() / (self.agent_dir_name or f".{self.name}")

    # -- applying it -----------------------------------------------------------------------------

    def apply_environment(self, environ: MutableMapping[str, str] | None = None) -> None:
        """Point every part of pi-host in this process at the distribution's files and plugins.

        Sets ``PI_HOST_DIR`` to :meth:`agent_dir`, narrows ``PI_HOST_PLUGINS`` to
        :attr:`plugins` and adds :attr:`disabled_plugins` to ``PI_HOST_DISABLE_PLUGINS``, so
        the session, ``plugins list`` and ``--list-models`` all see the same set. Child
        processes (tools) inherit these values.
        """
        env = os.environ if environ is None else environ
        env[_AGENT_DIR_ENV] = str(self.agent_dir(env))
        if self.plugins is not None:
            user = env.get(_PLUGINS_ENV)
            allowed = self.plugins
            if user is not None:
                allowed = allowed & {name.strip() for name in user.split(",") if name.strip()}
            env[_PLUGINS_ENV] = ",".join(sorted(allowed))
        if self.disabled_plugins:
            existing = {name.strip() for name in env.get(_DISABLE_ENV, "").split(",") if name.strip()}
            env[_DISABLE_ENV] = ",".join(sorted(existing | self.disabled_plugins))

    def load_plugin_modules(self) -> list[ModuleType]:
        """Import :attr:`plugin_modules`.

        :raises ImportError: naming the module and the distribution (a broken distribution
            is a packaging defect, not a plugin to skip).
        """
        modules = []
        for module_name in self.plugin_modules:
            try:
                modules.append(importlib.import_module(module_name))
            except ImportError as exc:
                raise ImportError(
                    f"distribution {self.name!r} cannot import its plugin module {module_name!r}: {exc}"
                ) from exc
        return modules

    def session_options(self, options: SessionOptions) -> SessionOptions:
        """``options`` with the distribution's defaults filled in where the user set nothing."""
        changes: dict[str, object] = {}
        if self.tools is not None and options.tools is None:
            changes["tools"] = list(self.tools)
        if self.system_prompt is not None and options.system_prompt is None:
            changes["system_prompt"] = self.system_prompt
        if self.append_system_prompt:
            changes["append_system_prompt"] = [
                *self.append_system_prompt,
                *(options.append_system_prompt or ()),
            ]
        if self.default_model is not None and self._wants_default_model(options):
            changes["model"] = self.default_model
        return replace(options, **changes) if changes else options  # type: ignore[arg-type]

    def _wants_default_model(self, options: SessionOptions) -> bool:
        if options.model or options.provider:
            return False
        if options.session or options.continue_session or options.fork:
            return False  # the resumed session's model comes first (pi's order)
        from pi_host.resources import SettingsManager

        root = Path(options.agent_dir) if options.agent_dir else self.agent_dir()
        settings = SettingsManager.load(options.cwd, root, project_trusted=False).settings
        return not (settings.default_provider and settings.default_model)

    def render_help(self, text: str) -> str:
        """pi-host's ``--help`` text, retold for this command."""
        directory = self.agent_dir_name or f".{self.name}"
        text = text.replace(
            "PI_HOST_DIR                    Agent directory (default: ~/.pi-host)",
            f"{self.agent_dir_variable:<31}Agent directory (default: ~/{directory})",
        )
        return text.replace("pi-host", self.name)

    def main(self, argv: list[str] | None = None) -> int:
        """Run the command (``argv`` defaults to ``sys.argv[1:]``); returns the exit status."""
        from ._cli import main

        return main(argv, distribution=self)
