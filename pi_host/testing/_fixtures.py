"""The pytest fixtures of the testing kit: ``make_host`` and ``run_cli`` (the only part that needs pytest)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pi_host.providers._env_keys import ENV_API_KEYS

from ._cli import CliRunner
from ._factory import HostFactory
from ._host import IsolatedHost, build_host

__all__ = ["HostFactory", "make_host", "pi_host_factory", "run_cli"]


def _isolate(monkeypatch: pytest.MonkeyPatch, home: Path, agent_dir: Path) -> None:
    provider_keys = {name for names in ENV_API_KEYS.values() for name in names}
    for name in list(os.environ):
        if name.startswith("PI_HOST") or name in provider_keys:
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    # Parts of the runtime (the session cache) find the agent directory through the environment.
    monkeypatch.setenv("PI_HOST_DIR", str(agent_dir))


@pytest.fixture
def make_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HostFactory:
    """Build an isolated host: ``h = make_host(my_plugin, replies=["hi"]); out = await h.run("x")``.

    Every host gets a fresh plugin manager with the essentials, the plugins passed as
    arguments (modules, classes' instances, any object with ``@hookimpl`` functions) and the
    installed plugins named in ``load`` (entry-point names: ``load=["tools_fs"]``); nothing
    else is loaded, whatever is installed. It gets its own temporary ``HOME``, agent
    directory and working directory (the test's cwd), with every ``PI_HOST_*`` variable and
    provider API key removed from the environment.

    A plugin that fails to load, or implements a hook that does not exist (a misspelt
    ``pi_tool_cal``), fails the test, unless ``strict=False``.

    :param replies: the scripted model's replies (see :class:`ScriptedProvider`).
    :param respond: computes replies once ``replies`` are used up.
    :param provider: a :class:`ScriptedProvider` of your own (``replies`` are added to it).
    :param settings: written to the agent directory's ``settings.json``.
    :param files: files to create in the working directory (``{"src/a.py": "..."}``).
    :param tools: the active tools (default: every tool the loaded plugins registered).
    :param system_prompt: replaces the default system prompt.
    :param session_options: more :class:`~pi_host.SessionOptions` fields (``{"mode": "rpc"}``
        makes ``ctx.has_ui`` true).
    :param ui: a :class:`RecordingUI` with scripted dialog answers (default: an empty one,
        available as ``host.ui``).
    :param distribution: build the host as that :class:`~pi_host.Distribution` runs: its
        plugins and plugin modules, tools, system prompt (the scripted model stays).
    :param trace: print every dispatch to stderr (``PI_HOST_TRACE_HOOKS``).
    """
    counter = 0

    # The keywords are HostFactory's (the type the fixture is declared with) and build_host's.
    def factory(*plugins: object, **options: Any) -> IsolatedHost:
        nonlocal counter
        counter += 1
        root = tmp_path / f"pi-host-{counter}"
        home, agent_dir, cwd = root / "home", root / "agent", root / "project"
        for directory in (home, agent_dir, cwd):
            directory.mkdir(parents=True, exist_ok=True)
        _isolate(monkeypatch, home, agent_dir)
        monkeypatch.chdir(cwd)
        try:
            return build_host(plugins, cwd=cwd, agent_dir=agent_dir, **options)
        except AssertionError as exc:
            pytest.fail(str(exc), pytrace=False)

    return factory


@pytest.fixture
def pi_host_factory(make_host: HostFactory) -> HostFactory:
    """Another name for :func:`make_host`, for suites that already have a ``make_host``."""
    return make_host


@pytest.fixture
def run_cli(tmp_path: Path) -> CliRunner:
    """Run ``pi-host`` in a subprocess: ``result = run_cli("-p", "hi", replies=["hello"])``.

    Each runner has its own ``HOME``, agent directory (``run_cli.agent_dir``) and working
    directory (``run_cli.cwd``); ``PI_HOST_*`` variables and provider keys are removed, so
    only what the test passes reaches the command. Pass ``--provider faux`` and ``replies``
    for a scripted model.
    """
    return CliRunner(tmp_path / "cli")
