"""Context cost: 200 tools over 4 servers go to the model as one search tool, loaded on use."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pi_mcp
import pytest
import pytest_asyncio

from pi_host import hookimpl
from pi_host.testing import IsolatedHost, RecordingUI, build_host, reply, tool_call

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVERS = ("alpha", "beta", "gamma", "delta")


class Capture:
    """Hands the test the session's MCP manager."""

    manager: Any = None

    @hookimpl(trylast=True)
    def pi_before_agent_start(self, ctx: Any) -> None:
        self.manager = pi_mcp.manager_of(ctx)


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("search")
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("PI_HOST"):
                patch.delenv(name)
        for sub in ("home", "agent", "project"):
            (root / sub).mkdir()
        patch.setenv("HOME", str(root / "home"))
        patch.setenv("PI_HOST_DIR", str(root / "agent"))
        yield root


@pytest.fixture(scope="module")
def capture() -> Capture:
    return Capture()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def host(environment: Path, demo: Any, capture: Capture) -> AsyncIterator[IsolatedHost]:
    servers = {name: demo.stdio(name, "--tools", "50", allowedTools=["t*"]) for name in SERVERS}
    built = build_host(
        [pi_mcp, capture],
        cwd=environment / "project",
        agent_dir=environment / "agent",
        settings={"mcp": {"servers": servers, "toolSearchThreshold": 40}},
        ui=RecordingUI(),
        session_options={"mode": "tui"},
    )
    try:
        yield built
    finally:
        await built.close()


def spec_chars(specs: list[Any]) -> int:
    return sum(len(json.dumps(spec.model_dump(), separators=(",", ":"))) for spec in specs)


async def test_the_first_request_carries_a_tenth_of_the_schemas(host: IsolatedHost, capture: Capture) -> None:
    (await host.run("hello", replies=["hi"])).assert_ok()
    manager = capture.manager
    assert len(manager.tools) == 200
    everything = spec_chars([tool.spec() for tool in manager.tools.values()])
    sent = [spec for spec in host.provider.requests[-1].context.tools or () if spec.name.startswith("mcp")]
    assert [spec.name for spec in sent] == ["mcp_tool_search", "mcp_read_resource"]
    assert spec_chars(sent) < everything / 10
    await host.run("/mcp")
    assert "sent to the model" in host.ui.notifications[-1][0]


async def test_search_ranks_every_tool_first_by_its_server_and_name(capture: Capture) -> None:
    manager = capture.manager
    for name in manager.tools:
        _, server, tool = name.split("__")
        assert manager.search(f"{server} {tool}", 5)[0].name == name


@pytest.mark.parametrize(
    ("server", "tool"), [("alpha", "t000"), ("beta", "t037"), ("gamma", "t049"), ("delta", "t025")]
)
async def test_the_model_finds_and_calls_a_tool(host: IsolatedHost, server: str, tool: str) -> None:
    name = f"mcp__{server}__{tool}"
    outcome = await host.run(
        f"use {tool}",
        replies=[
            tool_call("mcp_tool_search", query=f"{server} {tool}"),
            reply(tool_calls=[tool_call(name, query="blue", limit=3)]),
            "done",
        ],
    )
    outcome.assert_ok()
    found, called = outcome.tool_results
    assert name in found.details["loaded"]
    assert called.content[0].text == f"{server}/{tool}: blue (limit 3)"
    # The loaded schema went to the model with the request that called it.
    assert name in host.provider.requests[-2].tool_names
