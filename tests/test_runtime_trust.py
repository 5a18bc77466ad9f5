"""Project trust at session start: pi's order, then installed plugins' pi_project_trust."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_host import hookimpl
from pi_host.hookspecs import ProjectTrustDecision
from pi_host.plugin import PluginControls
from pi_host.runtime import Host, SessionOptions, create_session


def project_with_settings(tmp_path: Path) -> tuple[Path, Path]:
    agent = tmp_path / "agent"
    agent.mkdir()
    project = tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text(json.dumps({"steeringMode": "all"}))
    return agent, project


async def start(
    agent: Path,
    project: Path,
    *plugins: object,
    approve: bool | None = None,
    mode: Any = "print",
    ui: Any = None,
) -> Any:
    host = Host.load(controls=PluginControls(allow=frozenset()), extra_plugins=list(plugins))
    options = SessionOptions(
        cwd=str(project),
        agent_dir=str(agent),
        provider="faux",
        no_session=True,
        approve=approve,
        mode=mode,
        ui=ui,
    )
    return await create_session(options, host=host)


class Answering:
    """A user who answers the trust question with ``answer`` (``None``: Escape)."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.asked: list[tuple[str, list[str]]] = []

    async def select(self, title: str, options: Any, *, timeout: float | None = None) -> str | None:
        self.asked.append((title, list(options)))
        return self.answer


async def test_an_undecided_project_is_untrusted_without_asking(tmp_path: Path) -> None:
    agent, project = project_with_settings(tmp_path)
    session = await start(agent, project)
    assert session.project_trusted is False
    assert session.settings.steering_mode == "one-at-a-time"


@pytest.mark.parametrize(
    ("answer", "trusted", "remembered"),
    [
        ("Trust", True, True),
        ("Trust (this session only)", True, None),
        ("Do not trust", False, False),
        ("Do not trust (this session only)", False, None),
        (None, False, None),  # dismissed
    ],
)
async def test_interactive_mode_asks_the_user(
    tmp_path: Path, answer: str | None, trusted: bool, remembered: bool | None
) -> None:
    agent, project = project_with_settings(tmp_path)
    user = Answering(answer)
    session = await start(agent, project, mode="tui", ui=user)
    [(question, options)] = user.asked
    assert question.startswith(f"Trust project folder?\n{project}\n")
    assert options == [
        "Trust",
        f"Trust parent folder ({tmp_path})",
        "Trust (this session only)",
        "Do not trust",
        "Do not trust (this session only)",
    ]
    assert session.project_trusted is trusted
    assert session.settings.steering_mode == ("all" if trusted else "one-at-a-time")
    stored = json.loads((agent / "trust.json").read_text()) if (agent / "trust.json").exists() else {}
    assert stored.get(str(project)) is remembered


async def test_only_interactive_mode_asks(tmp_path: Path) -> None:
    agent, project = project_with_settings(tmp_path)
    user = Answering("Trust")
    for mode in ("print", "json", "rpc"):
        session = await start(agent, project, mode=mode, ui=user)
        assert session.project_trusted is False
    assert user.asked == []


async def test_a_plugin_decides_before_the_user_is_asked(tmp_path: Path) -> None:
    agent, project = project_with_settings(tmp_path)
    user = Answering("Trust")

    class Distrusting:
        @hookimpl
        def pi_project_trust(self, cwd: str) -> ProjectTrustDecision:
            return ProjectTrustDecision(trusted=False, remember=False)

    session = await start(agent, project, Distrusting(), mode="tui", ui=user)
    assert session.project_trusted is False and user.asked == []


@pytest.mark.parametrize("remember", [True, False])
async def test_a_plugin_can_trust_the_project(tmp_path: Path, remember: bool) -> None:
    agent, project = project_with_settings(tmp_path)
    seen: list[tuple[str, str]] = []

    class Trusting:
        @hookimpl
        def pi_project_trust(self, cwd: str, ctx: Any) -> ProjectTrustDecision:
            seen.append((cwd, ctx.mode))
            return ProjectTrustDecision(trusted=True, remember=remember)

    session = await start(agent, project, Trusting())
    assert seen == [(str(project), "print")]
    assert session.project_trusted is True
    assert session.settings.steering_mode == "all"
    assert (agent / "trust.json").exists() is remember


async def test_pi_configure_sees_the_settings_of_the_trust_a_plugin_decided(tmp_path: Path) -> None:
    agent, project = project_with_settings(tmp_path)
    order: list[str] = []

    class Recording:
        @hookimpl
        def pi_project_trust(self, cwd: str) -> ProjectTrustDecision:
            order.append("pi_project_trust")
            return ProjectTrustDecision(trusted=True, remember=False)

        @hookimpl
        def pi_configure(self, config: Any) -> None:
            order.append(f"pi_configure steeringMode={config.settings.get('steeringMode')}")

    await start(agent, project, Recording())
    assert order == ["pi_project_trust", "pi_configure steeringMode=all"]


async def test_the_command_line_decides_before_plugins(tmp_path: Path) -> None:
    agent, project = project_with_settings(tmp_path)
    asked: list[str] = []

    class Trusting:
        @hookimpl
        def pi_project_trust(self, cwd: str) -> ProjectTrustDecision:
            asked.append(cwd)
            return ProjectTrustDecision(trusted=True)

    session = await start(agent, project, Trusting(), approve=False)
    assert asked == []
    assert session.project_trusted is False


async def test_trusted_project_settings_can_disable_a_plugin(tmp_path: Path) -> None:
    agent, project = project_with_settings(tmp_path)
    (project / ".pi" / "settings.json").write_text(json.dumps({"plugins": {"disable": ["noisy"]}}))
    calls: list[str] = []

    class Noisy:
        @hookimpl
        def pi_session_start(self) -> None:
            calls.append("start")

    host = Host.load(controls=PluginControls(allow=frozenset()))
    host.plugin_manager.register(Noisy(), name="noisy")
    options = SessionOptions(
        cwd=str(project), agent_dir=str(agent), provider="faux", no_session=True, approve=True
    )
    session = await create_session(options, host=host)
    await session.start()
    assert calls == []
    assert host.plugin_manager.get_plugin("noisy") is None


LOCAL_PLUGIN = """
from pi_host import Tool, ToolResult, hookimpl
from pydantic import BaseModel


class Params(BaseModel):
    pass


async def run(params, ctx):
    return ToolResult.text("local")


@hookimpl
def pi_register_tools(register):
    register(Tool(name="project_tool", description="From the project.", parameters=Params, execute=run))
"""


@pytest.mark.parametrize("approve", [True, False])
async def test_project_local_plugins_load_only_when_trusted(tmp_path: Path, approve: bool) -> None:
    agent, project = project_with_settings(tmp_path)
    (project / ".pi" / "plugins").mkdir()
    (project / ".pi" / "plugins" / "local_tools.py").write_text(LOCAL_PLUGIN)
    session = await start(agent, project, approve=approve)
    assert ("project_tool" in session.host.tools) is approve
