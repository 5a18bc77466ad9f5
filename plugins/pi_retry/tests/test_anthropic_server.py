"""pi-retry over real HTTP: the Anthropic provider against a local server answering 529 / 429.

A ``models.json`` in the temporary agent directory points a custom provider
(``anthropic-messages``) at the fake server, as a user would point pi at a proxy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pi_host.runtime import AgentSession, SessionOptions, create_session
from tests.fakeservers import AnthropicServer, anthropic_error, anthropic_reply


async def session_on(server: AnthropicServer, agent_dir: Path, settings: dict[str, Any]) -> AgentSession:
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
    (agent_dir / "settings.json").write_text(json.dumps(settings))
    return await create_session(
        SessionOptions(
            provider="fake",
            model="fake-claude",
            agent_dir=str(agent_dir),
            cwd=str(agent_dir),
            no_session=True,
            disabled_plugins=["compaction"],
        )
    )


def retry_events(events: list[Any]) -> list[tuple[Any, ...]]:
    summary: list[tuple[Any, ...]] = []
    for event in events:
        if event.type == "auto_retry_start":
            summary.append(("start", event.attempt, event.delay_ms, event.error_message))
        elif event.type == "auto_retry_end":
            summary.append(("end", event.success, event.attempt))
        elif event.type == "agent_end":
            summary.append(("agent_end", event.will_retry))
    return summary


async def test_overloaded_529_is_retried(tmp_path: Path) -> None:
    with AnthropicServer(
        [anthropic_error(529, "Overloaded"), anthropic_reply("Hello after the overload")]
    ) as server:
        session = await session_on(
            server, tmp_path, {"retry": {"baseDelayMs": 1, "provider": {"maxRetries": 0}}}
        )
        events: list[Any] = []
        session.subscribe(events.append)
        await session.prompt("hi")
    assert len(server.requests) == 2
    (start,) = [e for e in retry_events(events) if e[0] == "start"]
    assert start[:3] == ("start", 1, 1)
    assert "Overloaded" in start[3]
    assert retry_events(events)[-2:] == [("end", True, 1), ("agent_end", False)]
    assert session.messages[-1].content[0].text == "Hello after the overload"
    # Both requests carried the same conversation: the failed reply never reached the model.
    first, second = (request.json() for request in server.requests)
    assert first["messages"] == second["messages"]


async def test_rate_limit_429_waits_as_long_as_the_server_asks(tmp_path: Path) -> None:
    with AnthropicServer(
        [
            anthropic_error(429, "Rate limited", headers={"retry-after": "1"}),
            anthropic_reply("ok"),
        ]
    ) as server:
        session = await session_on(
            server, tmp_path, {"retry": {"baseDelayMs": 1, "provider": {"maxRetries": 0}}}
        )
        events: list[Any] = []
        session.subscribe(events.append)
        await session.prompt("hi")
    (start,) = [e for e in retry_events(events) if e[0] == "start"]
    # retry-after: 1 (seconds) is longer than the 1 ms backoff, and under the 60 s cap.
    assert start[:3] == ("start", 1, 1000)
    assert len(server.requests) == 2
    assert session.messages[-1].content[0].text == "ok"


async def test_persistent_overload_gives_up_after_max_retries(tmp_path: Path) -> None:
    with AnthropicServer([anthropic_error(529, "Overloaded") for _ in range(3)]) as server:
        session = await session_on(
            server, tmp_path, {"retry": {"baseDelayMs": 1, "maxRetries": 2, "provider": {"maxRetries": 0}}}
        )
        events: list[Any] = []
        session.subscribe(events.append)
        await session.prompt("hi")
    assert len(server.requests) == 3
    assert retry_events(events)[-1] == ("end", False, 2)
    assert session.messages[-1].stop_reason == "error"
