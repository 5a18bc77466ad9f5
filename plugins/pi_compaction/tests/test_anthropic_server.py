"""pi-compaction over real HTTP: the Anthropic provider against a local server that answers
"prompt is too long" — compact (the summary is a real request too), then retry once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pi_compaction

from pi_host.runtime import AgentSession, SessionOptions, create_session
from tests.fakeservers import AnthropicServer, anthropic_error, anthropic_reply

TOO_LONG = "prompt is too long: 210000 tokens > 200000 maximum"


async def session_on(server: AnthropicServer, agent_dir: Path) -> AgentSession:
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "fake": {
                        "baseUrl": server.base_url,
                        "api": "anthropic-messages",
                        "apiKey": "test",
                        "models": [{"id": "fake-claude", "contextWindow": 200_000, "maxTokens": 4096}],
                    }
                }
            }
        )
    )
    (agent_dir / "settings.json").write_text(
        json.dumps({"compaction": {"keepRecentTokens": 10}, "retry": {"baseDelayMs": 1}})
    )
    return await create_session(
        SessionOptions(
            provider="fake",
            model="fake-claude",
            agent_dir=str(agent_dir),
            cwd=str(agent_dir),
            session_dir=str(agent_dir / "sessions"),
        )
    )


def compaction_events(events: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (e.type, e.reason)
        if e.type == "compaction_start"
        else (e.type, e.reason, e.will_retry, e.error_message)
        for e in events
        if e.type in ("compaction_start", "compaction_end")
    ]


def system_text(body: dict[str, Any]) -> str:
    system = body.get("system", "")
    return system if isinstance(system, str) else "".join(block["text"] for block in system)


async def test_overflow_compacts_and_retries_once(tmp_path: Path) -> None:
    with AnthropicServer(
        [
            anthropic_reply("first answer " * 50),
            anthropic_error(400, TOO_LONG),
            anthropic_reply("## Goal\nsummary from the server"),
            anthropic_reply("answer after compaction"),
        ]
    ) as server:
        session = await session_on(server, tmp_path)
        events: list[Any] = []
        session.subscribe(events.append)
        await session.prompt("first question " * 50)
        await session.prompt("second question " * 50)
    assert compaction_events(events) == [
        ("compaction_start", "overflow"),
        ("compaction_end", "overflow", True, None),
    ]
    # The retry plugin leaves overflow to compaction: no auto_retry events.
    assert not [e for e in events if e.type.startswith("auto_retry")]
    bodies = [request.json() for request in server.requests]
    assert len(bodies) == 4
    summary_request = bodies[2]
    assert system_text(summary_request) == pi_compaction.SUMMARY_SYSTEM_PROMPT
    assert summary_request["max_tokens"] == 4096  # min(0.8 * 16384, the model's 4096)
    assert "tools" not in summary_request
    retried = bodies[3]
    assert system_text(retried) == system_text(bodies[0])
    first_text = json.dumps(retried["messages"][0])
    assert "summary from the server" in first_text
    assert session.messages[-1].content[0].text == "answer after compaction"


async def test_a_second_overflow_is_not_retried_again(tmp_path: Path) -> None:
    with AnthropicServer(
        [
            anthropic_reply("first answer " * 50),
            anthropic_error(400, TOO_LONG),
            anthropic_reply("## Goal\nsummary"),
            anthropic_error(400, TOO_LONG),
        ]
    ) as server:
        session = await session_on(server, tmp_path)
        events: list[Any] = []
        session.subscribe(events.append)
        await session.prompt("first question " * 50)
        await session.prompt("second question " * 50)
    assert compaction_events(events) == [
        ("compaction_start", "overflow"),
        ("compaction_end", "overflow", True, None),
        ("compaction_end", "overflow", False, pi_compaction.OVERFLOW_RECOVERY_FAILED),
    ]
    assert len(server.requests) == 4
    assert session.messages[-1].stop_reason == "error"
