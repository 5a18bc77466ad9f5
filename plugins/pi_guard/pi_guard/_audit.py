"""The audit trail: what the guard decided, as ``custom`` session entries, without secrets.

Entries record the tool, the path or the command, the decision, what decided it and the
user's reason; never a file's content, an edit's text or any other argument. Commands are
stored with anything that looks like a credential replaced by ``***`` and cut to 300
characters, plus a SHA-256 digest of the full command so two entries can still be compared.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

__all__ = ["AUDIT_ENTRY_TYPE", "audit_target", "redact"]

AUDIT_ENTRY_TYPE = "pi-guard"
"""The ``customType`` of the guard's session entries."""

_MAX_COMMAND = 300

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Authorization: Bearer x, Basic x
    (re.compile(r"(?i)\b((?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1***"),
    # -p secret, --password=secret, --token secret
    (
        re.compile(
            r"(?i)(--?(?:pass(?:word|wd)?|token|secret|api[-_]?key|auth|key|credentials?)(?:=|\s+))(\S+)"
        ),
        r"\1***",
    ),
    # NAME_TOKEN=value, API_KEY=value
    (
        re.compile(
            r"(?i)\b([A-Z0-9_]*(?:PASS(?:WORD|WD)?|TOKEN|SECRET|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|AUTH)"
            r"[A-Z0-9_]*\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)"
        ),
        r"\1***",
    ),
    # credentials in URLs
    (re.compile(r"(://)[^/\s:@]+:[^/\s@]+@"), r"\1***@"),
    # well-known token shapes
    (
        re.compile(
            r"\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
            r"|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|glpat-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{30,})"
        ),
        "***",
    ),
)

_LONG_RUN = re.compile(r"(?<![A-Za-z0-9+_-])[A-Za-z0-9+_-]{32,}={0,2}(?![A-Za-z0-9+_-])")


def _high_entropy(match: re.Match[str]) -> str:
    """Long runs mixing digits, upper- and lower-case letters read as keys; words and paths do not."""
    run = match.group(0)
    mixed = any(c.isdigit() for c in run) and any(c.isupper() for c in run) and any(c.islower() for c in run)
    return "***" if mixed else run


def redact(text: str) -> str:
    """``text`` with credential-looking parts replaced by ``***``."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return _LONG_RUN.sub(_high_entropy, text)


def audit_target(path: str | None = None, command: str | None = None) -> dict[str, Any]:
    """The part of an audit entry that says what a call touched."""
    if command is not None:
        shown = redact(command)
        if len(shown) > _MAX_COMMAND:
            shown = shown[: _MAX_COMMAND - 3] + "..."
        return {
            "command": shown,
            "commandSha256": hashlib.sha256(command.encode("utf-8", "replace")).hexdigest(),
        }
    if path is not None:
        return {"path": path}
    return {}
