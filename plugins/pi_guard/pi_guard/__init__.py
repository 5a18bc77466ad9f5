"""pi-guard: permission rules for pi-host tool calls — allow, ask or deny, in every mode.

Install it and add a ``permissions`` section to ``settings.json`` (or pass
``--permission-mode``)::

    {"permissions": {
        "defaultMode": "default",
        "deny":  ["read(**/.env)", "edit(/etc)", "bash(rm -rf:*)"],
        "ask":   ["bash(git push:*)"],
        "allow": ["bash(git status)", "bash(npm test:*)", "edit(src/**)"]
    }}

Modes: ``default`` (reads allowed, everything else asks), ``read-only``, ``accept-edits``
(edits inside the project allowed) and ``yolo`` (all but deny rules). "Ask" becomes a prompt in
the terminal UI, an ``extension_ui_request`` over RPC, and a denial (configurable with
``permissions.nonInteractive``) in print and JSON modes. Denials reach the model as error tool
results saying why; decisions are recorded as ``pi-guard`` custom entries in the session.

See ``docs/plugins/guard.md``.
"""

from __future__ import annotations

from ._audit import AUDIT_ENTRY_TYPE, redact
from ._config import GRANTS_FILE_NAME, GrantStore, GuardSettings, load_settings
from ._paths import ResolvedPath, resolve_target, skeleton, suspicious_characters
from ._plugin import (
    ALLOW_ONCE,
    ALLOW_PROJECT,
    ALLOW_SESSION,
    DENY,
    DENY_WITH_REASON,
    FLAG_NAME,
    GuardState,
    guard_state,
    pi_register_commands,
    pi_register_flags,
    pi_session_start,
    pi_tool_call,
)
from ._policy import MODES, CallTarget, Mode, Policy, Verdict, normalize_mode, targets_of
from ._rules import Decision, Rule, RuleError, parse_rule
from ._shell import ParsedCommand, parse_command

__all__ = [
    "ALLOW_ONCE",
    "ALLOW_PROJECT",
    "ALLOW_SESSION",
    "AUDIT_ENTRY_TYPE",
    "DENY",
    "DENY_WITH_REASON",
    "FLAG_NAME",
    "GRANTS_FILE_NAME",
    "MODES",
    "CallTarget",
    "Decision",
    "GrantStore",
    "GuardSettings",
    "GuardState",
    "Mode",
    "ParsedCommand",
    "Policy",
    "ResolvedPath",
    "Rule",
    "RuleError",
    "Verdict",
    "guard_state",
    "load_settings",
    "normalize_mode",
    "parse_command",
    "parse_rule",
    "pi_register_commands",
    "pi_register_flags",
    "pi_session_start",
    "pi_tool_call",
    "redact",
    "resolve_target",
    "skeleton",
    "suspicious_characters",
    "targets_of",
]
