"""Local fake model servers speaking the real wire formats, for tests and benchmarks.

In a test::

    from tests.fakeservers import AnthropicServer, anthropic_reply

    with AnthropicServer([anthropic_reply("Hello!")]) as server:
        ...  # point a model's base_url at server.base_url
        body = server.requests[0].json()

From the command line (CLI tests, benchmarks, manual runs)::

    python -m tests.fakeservers.anthropic --port 0 --script replies.json
    python -m tests.fakeservers.openai --port 8080 --script replies.json --repeat

The script is a JSON list of steps, one per request (see ``AnthropicServer.render`` and
``OpenAIServer.render``). The server prints ``listening on http://127.0.0.1:<port>`` and
serves until interrupted.
"""

from __future__ import annotations

from ._anthropic import AnthropicServer, anthropic_error, anthropic_events, anthropic_reply, sse_event
from ._openai import OpenAIServer, openai_chunks, openai_error, openai_reply
from ._server import FakeServer, RecordedRequest, Reply, Responder

__all__ = [
    "AnthropicServer",
    "FakeServer",
    "OpenAIServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "anthropic_error",
    "anthropic_events",
    "anthropic_reply",
    "openai_chunks",
    "openai_error",
    "openai_reply",
    "sse_event",
]
