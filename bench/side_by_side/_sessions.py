"""Session files in pi's JSONL v3 format, generated for the resume workloads.

The files are written from plain dicts (not from pi-host's models) so that the benchmark's input
does not depend on the code it measures; both pi 0.73 and pi-host read them. A session is a
linear conversation of realistic turns: a prompt, an assistant reply with a ``read`` tool call,
the tool result, and a closing assistant reply. Token usage stays far below the context window
so that neither agent starts an automatic compaction while resuming.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["generate_session"]

_VOCABULARY = (
    "the session entry reads a file and then edits the function so that tests pass again while "
    "the agent keeps context about modules classes imports errors paths lines tokens tool call "
    "result output summary branch compaction model provider stream delta prompt reply"
)
_WORDS = _VOCABULARY.split()


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


def _iso(millis: int) -> str:
    moment = datetime.fromtimestamp(millis / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def _usage(rng: random.Random) -> dict[str, Any]:
    tokens_in, tokens_out = rng.randint(1500, 5000), rng.randint(10, 400)
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {
        "input": tokens_in,
        "output": tokens_out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": tokens_in + tokens_out,
        "cost": zero,
    }


def generate_session(
    path: Path,
    entries: int,
    *,
    cwd: Path,
    provider: str,
    model: str,
    compaction: bool = False,
    seed: int = 7,
) -> Path:
    """Write a session of about ``entries`` entries (after the header; up to three more to end
    on a complete turn) to ``path`` and return it.

    :param compaction: put a compaction entry 40 entries before the end, keeping the last
        ~20 entries before it (from a user prompt), as pi writes one after ``/compact``.
    """
    rng = random.Random(seed)
    stamp = 1_760_000_000_000
    ids: list[str] = []
    user_ids: list[int] = []
    seen: set[str] = set()
    compaction_at = entries - 40 if compaction else -1
    step = 0
    call = 0
    lines: list[str] = []

    def new_id() -> str:
        while True:
            candidate = f"{rng.getrandbits(32):08x}"
            if candidate not in seen:
                seen.add(candidate)
                return candidate

    header = {
        "type": "session",
        "version": 3,
        "id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "timestamp": _iso(stamp),
        "cwd": str(cwd),
    }
    lines.append(json.dumps(header, separators=(",", ":")))
    parent: str | None = None
    n = -1
    # Finish the last turn past ``entries`` so the file does not end on a dangling tool call.
    while n + 1 < entries or step % 4 != 0:
        n += 1
        stamp += rng.randint(50, 3000)
        entry_id = new_id()
        base: dict[str, Any] = {"id": entry_id, "parentId": parent, "timestamp": _iso(stamp)}
        entry: dict[str, Any]
        if n == 0:
            entry = {"type": "model_change", **base, "provider": provider, "modelId": model}
        elif n == 1:
            entry = {"type": "thinking_level_change", **base, "thinkingLevel": "off"}
        elif n == compaction_at:
            kept = max(index for index in user_ids if index <= n - 20) if user_ids else n - 1
            entry = {
                "type": "compaction",
                **base,
                "summary": _text(rng, 3000),
                "firstKeptEntryId": ids[kept],
                "tokensBefore": 150_000,
                "details": {"readFiles": ["src/a.py", "src/b.py"], "modifiedFiles": ["src/c.py"]},
            }
        else:
            phase = step % 4
            step += 1
            message: dict[str, Any]
            if phase == 0:
                user_ids.append(n)
                message = {"role": "user", "content": _text(rng, rng.randint(80, 600)), "timestamp": stamp}
            elif phase in (1, 3):
                content: list[dict[str, Any]] = [{"type": "text", "text": _text(rng, rng.randint(100, 900))}]
                if phase == 1:
                    call += 1
                    content.append(
                        {
                            "type": "toolCall",
                            "id": f"toolu_{call:08d}",
                            "name": "read",
                            "arguments": {"path": f"src/mod_{call % 97}.py"},
                        }
                    )
                message = {
                    "role": "assistant",
                    "content": content,
                    "api": "anthropic-messages",
                    "provider": provider,
                    "model": model,
                    "usage": _usage(rng),
                    "stopReason": "toolUse" if phase == 1 else "stop",
                    "timestamp": stamp,
                }
            else:
                message = {
                    "role": "toolResult",
                    "toolCallId": f"toolu_{call:08d}",
                    "toolName": "read",
                    "content": [{"type": "text", "text": _text(rng, rng.choice((200, 600, 1500, 4000)))}],
                    "isError": False,
                    "timestamp": stamp,
                }
            entry = {"type": "message", **base, "message": message}
        lines.append(json.dumps(entry, separators=(",", ":")))
        ids.append(entry_id)
        parent = entry_id
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
