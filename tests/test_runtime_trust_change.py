"""Changing a project's trust during a session (``/trust``): what it allows comes and goes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pi_host import hookimpl
from pi_host.plugin import PluginControls
from pi_host.runtime import Host, SessionOptions, create_session

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


def project(tmp_path: Path) -> tuple[Path, Path]:
    agent = tmp_path / "agent"
    agent.mkdir()
    root = tmp_path / "project"
    pi = root / ".pi"
    (pi / "prompts").mkdir(parents=True)
    (pi / "plugins").mkdir()
    (pi / "settings.json").write_text(json.dumps({"steeringMode": "all", "compaction": {"enabled": False}}))
    (pi / "prompts" / "review.md").write_text("---\ndescription: Review\n---\nReview the code.\n")
    (pi / "APPEND_SYSTEM.md").write_text("PROJECT RULES APPLY.")
    (pi / "plugins" / "local_tools.py").write_text(LOCAL_PLUGIN)
    return agent, root


async def start(agent: Path, root: Path, *plugins: object) -> Any:
    host = Host.load(controls=PluginControls(allow=frozenset()), extra_plugins=list(plugins))
    options = SessionOptions(cwd=str(root), agent_dir=str(agent), provider="faux", no_session=True)
    return await create_session(options, host=host)


def trust_file(agent: Path) -> dict[str, bool]:
    return json.loads((agent / "trust.json").read_text())  # type: ignore[no-any-return]


async def test_trusting_loads_the_project_and_untrusting_drops_it(tmp_path: Path) -> None:
    agent, root = project(tmp_path)
    events: list[str] = []

    class Watcher:
        @hookimpl
        def pi_session_shutdown(self, reason: str) -> None:
            events.append(f"shutdown:{reason}")

        @hookimpl
        def pi_session_start(self, reason: str) -> None:
            events.append(f"start:{reason}")

    session = await start(agent, root, Watcher())
    assert not session.project_trusted
    assert session.setting_value("compaction.enabled", True) is not False
    assert "project_tool" not in session.host.tools
    assert "PROJECT RULES" not in session.agent.state.system_prompt
    description = session.project.describe(session.project_trusted)
    assert not description.trusted and description.changeable
    assert description.reason == "not decided yet"

    trust = session.project.trust
    option = trust.options(str(root))[0]  # "Trust": remembered in trust.json
    assert option.label == "Trust"
    trust.choose(str(root), option)
    await session.set_project_trusted(True)

    assert trust_file(agent) == {str(root): True}
    assert session.project_trusted
    assert session.setting_value("compaction.enabled") is False
    assert session.agent.steering_mode == "all"
    assert "review" in [template.name for template in session.prompt_templates]
    assert "project_tool" in session.host.tools and "project_tool" in session.active_tool_names
    assert "PROJECT RULES APPLY." in session.agent.state.system_prompt
    assert events == ["shutdown:reload", "start:reload"]
    assert "remembered in" in session.project.describe(True).reason

    untrust = next(o for o in trust.options(str(root)) if o.label == "Do not trust (this session only)")
    trust.choose(str(root), untrust)
    await session.set_project_trusted(False)

    assert trust_file(agent) == {str(root): True}  # a session-only answer is not saved
    assert not session.project_trusted
    assert session.setting_value("compaction.enabled", True) is not False
    assert "review" not in [template.name for template in session.prompt_templates]
    assert "project_tool" not in session.host.tools
    assert session.host.plugin_manager.get_plugin("local_tools") is None
    assert "PROJECT RULES" not in session.agent.state.system_prompt
    assert session.project.describe(False).reason == "for this session only"

    # Trusted again: the project's plugin file is imported anew.
    trust.choose(str(root), trust.options(str(root))[0])
    await session.set_project_trusted(True)
    assert "project_tool" in session.host.tools


async def test_the_command_line_decides_for_the_whole_run(tmp_path: Path) -> None:
    agent, root = project(tmp_path)
    host = Host.load(controls=PluginControls(allow=frozenset()))
    options = SessionOptions(
        cwd=str(root), agent_dir=str(agent), provider="faux", no_session=True, approve=False
    )
    session = await create_session(options, host=host)
    description = session.project.describe(session.project_trusted)
    assert description.reason == "decided by --no-approve for this run"
    assert not description.changeable


async def test_a_project_without_resources_needs_no_trust(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    root = tmp_path / "plain"
    root.mkdir()
    session = await start(agent, root)
    description = session.project.describe(session.project_trusted)
    assert description.trusted and not description.needs_trust and not description.changeable


async def test_a_malformed_trust_file_is_kept_and_reported(tmp_path: Path) -> None:
    agent, root = project(tmp_path)
    (agent / "trust.json").write_text("{not json")
    session = await start(agent, root)
    trust = session.project.trust
    trusted = trust.choose(str(root), trust.options(str(root))[0])
    await session.set_project_trusted(trusted)
    assert session.project_trusted  # for this session
    assert (agent / "trust.json").read_text() == "{not json"
    assert any("not valid JSON" in issue for issue in trust.issues)
