"""The guard's hooks: a ``--permission-mode`` flag, a ``/permissions`` command, and the veto.

Everything happens in ``pi_tool_call``, marked ``trylast`` so the guard judges the arguments
the tool will really receive, after every other plugin has rewritten them. The arguments are
also validated through the tool itself first (as the runtime does with a rewrite), so the
guard checks exactly what the tool will read. At session start the guard warns when another
plugin's ``pi_tool_call`` would still run after it (another ``trylast`` implementation
registered later: pluggy calls the last-registered ``trylast`` implementation last), since
that plugin could change arguments the guard already approved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from pi_host import agent_dir, hookimpl
from pi_host.hookspecs import Command, Flag, StashKey, ToolCallBlock

from ._audit import AUDIT_ENTRY_TYPE, audit_target, redact
from ._config import GRANTS_FILE_NAME, GrantStore, GuardSettings, load_settings
from ._policy import MODES, CallTarget, Mode, Policy, Verdict, describe_call, normalize_mode, targets_of
from ._rules import Rule, escape_pattern, parse_rule

if TYPE_CHECKING:
    from pi_host.hookspecs import CommandContext, PluginContext

__all__ = [
    "ALLOW_ONCE",
    "ALLOW_PROJECT",
    "ALLOW_SESSION",
    "DENY",
    "DENY_WITH_REASON",
    "FLAG_NAME",
    "GuardState",
    "guard_state",
    "pi_register_commands",
    "pi_register_flags",
    "pi_session_start",
    "pi_tool_call",
]

logger = logging.getLogger("pi_guard")

FLAG_NAME = "permission-mode"

ALLOW_ONCE = "Allow once"
ALLOW_SESSION = "Always allow this session"
ALLOW_PROJECT = "Always allow in this project"
DENY = "Deny"
DENY_WITH_REASON = "Deny with a reason"

_MODE_HELP: dict[Mode, str] = {
    "default": "ask before edits, commands and other tools",
    "read-only": "only tools that read; everything else is refused",
    "accept-edits": "edits inside the project without asking; commands still ask",
    "yolo": "allow everything except deny rules",
}

_STATE = StashKey["GuardState"]()
# How the session's plugin list names the guard's own pi_tool_call.
_OWN_TOOL_CALL = f"{__name__}.pi_tool_call"


@dataclass
class GuardState:
    """The guard's state in one session (kept in ``ctx.stash``).

    :ivar settings: the configuration read at session start (or ``/permissions reload``).
    :ivar mode: the mode in force.
    :ivar active: whether the guard judges calls: settings have a ``permissions`` section,
        ``--permission-mode`` was given, or the user picked a mode with ``/permissions``.
    :ivar picked: the mode was picked with ``/permissions`` (a reload keeps it).
    :ivar session_rules: "always allow this session" grants.
    """

    settings: GuardSettings
    mode: Mode
    active: bool
    cwd: str
    picked: bool = False
    session_rules: list[Rule] = field(default_factory=list)

    _policy: Policy | None = field(default=None, repr=False)
    _policy_key: tuple[Mode, int] | None = field(default=None, repr=False)

    @property
    def policy(self) -> Policy:
        """The policy for the current mode and grants (rebuilt only when they change)."""
        key = (self.mode, len(self.session_rules))
        if self._policy is None or self._policy_key != key:
            policy = self.settings.policy(self.mode, self.cwd)
            policy.rules = [*policy.rules, *self.session_rules]
            self._policy, self._policy_key = policy, key
        return self._policy


def _flag_mode(ctx: PluginContext, problems: list[str]) -> Mode | None:
    value = ctx.get_flag(FLAG_NAME)
    if value is None or value is False:
        return None
    mode = normalize_mode(value)
    if mode is None:
        problems.append(
            f"--{FLAG_NAME} {value!r} is not a mode; using the default mode. "
            f"Choose one of: {', '.join(MODES)}"
        )
        return "default"
    return mode


def _load_state(ctx: PluginContext, previous: GuardState | None = None) -> GuardState:
    """Read the configuration; with ``previous`` (a reload) keep its grants and a picked mode."""
    settings = load_settings(ctx.cwd, trusted=ctx.is_project_trusted())
    flag_mode = _flag_mode(ctx, settings.problems)
    mode = flag_mode or settings.mode or "default"
    state = GuardState(
        settings=settings, mode=mode, active=settings.configured or flag_mode is not None, cwd=ctx.cwd
    )
    if previous is not None:
        state.session_rules = list(previous.session_rules)
        if previous.picked:
            state.mode, state.active, state.picked = previous.mode, True, True
    return state


def guard_state(ctx: PluginContext) -> GuardState:
    """The session's guard state, loaded on first use."""
    state = ctx.stash.get(_STATE, None)
    if state is None:
        state = _load_state(ctx)
        ctx.stash[_STATE] = state
    return state


def _audit(ctx: PluginContext, data: dict[str, Any]) -> None:
    if isinstance(data.get("reason"), str):
        data = {**data, "reason": redact(data["reason"])}
    try:
        ctx.append_entry(AUDIT_ENTRY_TYPE, data)
    except Exception:  # the audit trail must never turn an allowed call into a failure
        logger.exception("pi-guard could not write its audit entry")


def _show_status(ctx: PluginContext, state: GuardState) -> None:
    if state.active:
        ctx.ui.set_status("pi-guard", f"guard: {state.mode}")


def _report_problems(ctx: PluginContext, state: GuardState) -> None:
    for problem in state.settings.problems:
        logger.warning("pi-guard: %s", problem)
        ctx.ui.notify(f"pi-guard: {problem}", "warning")
    state.settings.problems.clear()


def _plugins_after_guard(ctx: PluginContext) -> list[str]:
    """Plugins of this session whose ``pi_tool_call`` runs after the guard's.

    Asked of the session itself: sessions in one process each have their own plugins.
    """
    order = ctx.hook_implementations("pi_tool_call")
    positions = [i for i, impl in enumerate(order) if impl.function == _OWN_TOOL_CALL]
    if not positions:
        return []
    return list(dict.fromkeys(impl.plugin for impl in order[positions[0] + 1 :]))


# -- hooks -----------------------------------------------------------------------------------


@hookimpl
def pi_register_flags(register: Callable[[Flag], None]) -> None:
    """``--permission-mode MODE``."""
    register(
        Flag(
            name=FLAG_NAME,
            type="string",
            default=None,
            description="pi-guard permission mode: default, read-only, accept-edits or yolo",
        )
    )


@hookimpl
def pi_register_commands(register: Callable[[Command], None]) -> None:
    """``/permissions [MODE|rules|reload]``."""
    register(
        Command(
            name="permissions",
            description="Show or switch the permission mode (default, read-only, accept-edits, yolo)",
            handler=_permissions_command,
        )
    )


@hookimpl
def pi_session_start(reason: str, ctx: PluginContext) -> None:
    """Read the permissions configuration for the new session; report problems and plugin order."""
    previous = ctx.stash.get(_STATE, None)
    # a reload keeps what the user decided in this session; a new or other session starts over
    state = _load_state(ctx, previous if reason == "reload" else None)
    ctx.stash[_STATE] = state
    _report_problems(ctx, state)
    _show_status(ctx, state)
    if state.active:
        later = _plugins_after_guard(ctx)
        if later:
            message = (
                f"pi-guard: {', '.join(later)} run pi_tool_call after pi-guard (trylast, registered "
                "later), so the guard cannot see arguments they rewrite. Remove trylast from them "
                "or disable them."
            )
            logger.warning(message)
            ctx.ui.notify(message, "warning")
            _audit(ctx, {"event": "order", "after": later})


def _final_arguments(ctx: PluginContext, tool_name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as the tool will parse them (the runtime validates rewrites the same way)."""
    for tool in ctx.get_all_tools():
        if tool.name == tool_name:
            try:
                parsed = tool.validate_arguments(dict(arguments))
            except Exception:
                break  # the runtime refuses invalid arguments; judge them as written
            dumped: dict[str, Any] = parsed.model_dump(mode="json", by_alias=True)
            return dumped
    return dict(arguments)


def _target_fields(tool_name: str, target: CallTarget) -> dict[str, Any]:
    if target.command is not None:
        return audit_target(command=target.command.text)
    if target.paths:
        return audit_target(path=target.paths[0].shown)
    return {}


def _grant_text(tool_name: str, target: CallTarget) -> str:
    if target.command is not None:
        return f"{tool_name}({escape_pattern(target.command.text)})"
    if target.paths:
        return f"{tool_name}({escape_pattern(target.paths[0].real)})"
    return tool_name


@hookimpl(trylast=True)
async def pi_tool_call(
    tool_call_id: str, tool_name: str, input: Mapping[str, Any], ctx: PluginContext
) -> ToolCallBlock | None:
    """Allow, ask about or refuse the call, judging its final arguments."""
    state = guard_state(ctx)
    if not state.active:
        return None
    arguments = _final_arguments(ctx, tool_name, input)
    target = targets_of(tool_name, arguments, ctx.cwd)
    verdict = state.policy.decide(tool_name, target)
    entry: dict[str, Any] = {
        "event": "decision",
        "toolName": tool_name,
        "toolCallId": tool_call_id,
        **_target_fields(tool_name, target),
        "mode": state.mode,
    }
    if verdict.rule is not None:
        entry["rule"] = verdict.rule.text
        entry["ruleScope"] = verdict.rule.scope
    if verdict.decision == "allow":
        if state.settings.audit == "all":
            _audit(ctx, {**entry, "decision": "allow", "basis": verdict.basis})
        return None
    if verdict.decision == "deny":
        _audit(ctx, {**entry, "decision": "deny", "basis": verdict.basis, "reason": verdict.reason})
        return ToolCallBlock(
            reason=f"pi-guard: {verdict.reason}. Do not retry it; choose another approach, or ask the "
            "user to change the permissions (/permissions)."
        )
    return await _ask(ctx, state, tool_name, target, verdict, entry)


async def _ask(
    ctx: PluginContext,
    state: GuardState,
    tool_name: str,
    target: CallTarget,
    verdict: Verdict,
    entry: dict[str, Any],
) -> ToolCallBlock | None:
    what = describe_call(tool_name, target)
    if not ctx.has_ui:
        if state.settings.non_interactive == "allow":
            _audit(ctx, {**entry, "decision": "allow", "basis": "nonInteractive", "reason": verdict.reason})
            return None
        _audit(ctx, {**entry, "decision": "deny", "basis": "nonInteractive", "reason": verdict.reason})
        return ToolCallBlock(
            reason=f"pi-guard: {verdict.reason}, and nobody can approve it: pi-host runs in {ctx.mode} "
            "mode without a user to ask. Do not retry it. (To allow such calls, the user can add a "
            "rule to permissions.allow in settings.json, run with --permission-mode accept-edits or yolo, "
            'or set permissions.nonInteractive to "allow".)'
        )

    options = [ALLOW_ONCE]
    if verdict.basis != "unicode":  # never remember a path spelled with look-alikes
        options += [ALLOW_SESSION, ALLOW_PROJECT]
    options += [DENY, DENY_WITH_REASON]
    choice: str | None = None
    with anyio.move_on_after(state.settings.ask_timeout):
        choice = await ctx.ui.select(f"pi-guard: {verdict.reason}. Allow {what}?", options)
    if choice in (ALLOW_ONCE, ALLOW_SESSION, ALLOW_PROJECT):
        record: dict[str, Any] = {**entry, "decision": "allow", "basis": "user", "answer": choice}
        if choice != ALLOW_ONCE:
            text = _grant_text(tool_name, target)
            rule = parse_rule(text, "allow", "session" if choice == ALLOW_SESSION else "grant", state.cwd)
            state.session_rules.append(rule)
            record["grant"] = {"scope": rule.scope}
            if choice == ALLOW_PROJECT:
                _save_grant(ctx, state, text)
        _audit(ctx, record)
        return None
    reason: str | None = None
    if choice == DENY_WITH_REASON:
        with anyio.move_on_after(state.settings.ask_timeout):
            reason = await ctx.ui.input("Why? (the model reads this)", "reason")
        reason = (reason or "").strip() or None
    if choice is None:
        waited = state.settings.ask_timeout
        why = f"no answer within {waited:g} s" if waited else "the prompt was dismissed"
        _audit(ctx, {**entry, "decision": "deny", "basis": "user", "answer": None, "reason": why})
        return ToolCallBlock(reason=f"pi-guard: the user did not approve {what} ({why}). Do not retry it.")
    _audit(ctx, {**entry, "decision": "deny", "basis": "user", "answer": choice, "reason": reason})
    said = f": {reason}" if reason else ""
    return ToolCallBlock(reason=f"pi-guard: the user denied {what}{said}. Do not retry it without asking.")


def _save_grant(ctx: PluginContext, state: GuardState, text: str) -> None:
    try:
        GrantStore(agent_dir() / GRANTS_FILE_NAME).add(state.cwd, text)
    except (OSError, ValueError) as exc:
        message = f"pi-guard: could not save the grant for this project ({exc}); it holds for this session"
        logger.warning(message)
        ctx.ui.notify(message, "warning")


# -- /permissions ------------------------------------------------------------------------------


def _status_lines(state: GuardState) -> list[str]:
    if not state.active:
        return [
            "pi-guard is off: no settings file has a permissions section.",
            f"Turn it on with /permissions MODE ({', '.join(MODES)}), --permission-mode, "
            'or "permissions": {} in settings.json.',
        ]
    counts = {d: sum(1 for r in state.policy.rules if r.decision == d) for d in ("deny", "ask", "allow")}
    return [
        f"pi-guard mode: {state.mode} ({_MODE_HELP[state.mode]})",
        f"rules: {counts['deny']} deny, {counts['ask']} ask, {counts['allow']} allow "
        f"({len(state.session_rules)} granted this session)",
    ]


def _switch(ctx: PluginContext, state: GuardState, mode: Mode) -> None:
    previous = state.mode if state.active else "off"
    state.mode, state.active, state.picked = mode, True, True
    _audit(ctx, {"event": "mode", "from": previous, "to": mode})
    _show_status(ctx, state)
    ctx.ui.notify(f"pi-guard mode: {mode} ({_MODE_HELP[mode]})", "info")


async def _permissions_command(args: str, ctx: CommandContext) -> None:
    state = guard_state(ctx)
    word = args.strip()
    if word == "rules":
        lines = [f"{r.decision:5} {r.text}  [{r.scope}]" for r in state.policy.rules] or ["no rules"]
        ctx.ui.notify("\n".join(lines), "info")
        return
    if word == "reload":
        state = _load_state(ctx, state)
        ctx.stash[_STATE] = state
        _report_problems(ctx, state)
        ctx.ui.notify("\n".join(_status_lines(state)), "info")
        return
    if word:
        mode = normalize_mode(word)
        if mode is None:
            ctx.ui.notify(
                f"pi-guard: unknown mode {word!r}. Use /permissions with one of: {', '.join(MODES)}, "
                "or 'rules', or 'reload'.",
                "error",
            )
            return
        _switch(ctx, state, mode)
        return
    ctx.ui.notify("\n".join(_status_lines(state)), "info")
    if not ctx.has_ui:
        return
    labels = {f"{mode} — {_MODE_HELP[mode]}": mode for mode in MODES}
    picked = await ctx.ui.select("Permission mode", list(labels))
    if picked is not None:
        _switch(ctx, state, labels[picked])
