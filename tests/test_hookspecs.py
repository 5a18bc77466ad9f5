"""The hookspecs: every pi event has a documented hook, and every documented example works."""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pydantic
import pytest

import pi_host.hookspecs as hookspecs
from pi_host.hookspecs import (
    SPEC_MODULES,
    BeforeAgentStartResult,
    Command,
    Flag,
    HookContract,
    InputTransform,
    Stash,
    StashKey,
    Strategy,
    ToolCallBlock,
    ToolResultPatch,
    get_contract,
    hookimpl,
    hookspec,
    iter_hookspecs,
)
from pi_host.plugin import PluginManager

SPECS = [(module, function, contract) for module, function, contract in iter_hookspecs()]
SPEC_IDS = [function.__name__ for _, function, _ in SPECS]

# pi 0.73's extension events (notes §3.5, §1.2) plus project_trust: each must have a pi_<event> hook.
PI_EVENTS = [
    "project_trust",
    "resources_discover",
    "session_start",
    "session_before_switch",
    "session_before_fork",
    "session_before_compact",
    "session_compact",
    "session_before_tree",
    "session_tree",
    "session_shutdown",
    "context",
    "before_provider_request",
    "after_provider_response",
    "before_agent_start",
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "model_select",
    "thinking_level_select",
    "tool_call",
    "tool_result",
    "user_bash",
    "input",
]

HOST_HOOKS = [
    "pi_register_tools",
    "pi_register_tool_middleware",
    "pi_register_providers",
    "pi_register_commands",
    "pi_register_flags",
    "pi_register_settings",
    "pi_register_abort_scopes",
    "pi_register_shortcuts",
    "pi_register_message_renderers",
    "pi_register_tool_renderers",
    "pi_session_store",
    "pi_batch_executor",
    "pi_addhooks",
    "pi_configure",
    "pi_before_prompt",
    "pi_after_agent_run",
    "pi_will_continue_run",
    "pi_prepare_next_turn",
    "pi_summarize_branch",
]


def test_every_pi_event_has_a_hook_and_nothing_else_is_declared() -> None:
    names = {function.__name__ for _, function, _ in SPECS}
    assert {f"pi_{event}" for event in PI_EVENTS} | set(HOST_HOOKS) == names


def test_the_plugin_manager_knows_every_spec() -> None:
    pm = PluginManager()
    for _, function, contract in SPECS:
        caller = getattr(pm.hook, function.__name__)
        assert caller.spec is not None
        assert get_contract(caller.spec.function) == contract
        assert caller.is_historic() == contract.historic


def test_each_module_exports_exactly_its_hooks() -> None:
    for module in SPEC_MODULES:
        declared = [name for name, value in vars(module).items() if get_contract(value) is not None]
        assert sorted(declared) == list(module.__all__), module.__name__
        assert module.__doc__, module.__name__


def test_hooks_are_declared_in_firing_order() -> None:
    order = [function.__name__ for _, function, _ in SPECS]

    def before(*names: str) -> None:
        positions = [order.index(name) for name in names]
        assert positions == sorted(positions), names

    before(
        "pi_tool_execution_start",
        "pi_tool_call",
        "pi_tool_execution_update",
        "pi_tool_result",
        "pi_tool_execution_end",
    )
    before("pi_message_start", "pi_message_update", "pi_message_end")
    before("pi_agent_start", "pi_turn_start", "pi_turn_end", "pi_prepare_next_turn", "pi_agent_end")
    before("pi_agent_end", "pi_will_continue_run", "pi_after_agent_run")
    before("pi_input", "pi_before_prompt", "pi_before_agent_start")
    before("pi_context", "pi_before_provider_request", "pi_after_provider_response")
    before("pi_session_before_tree", "pi_summarize_branch", "pi_session_tree")
    before("pi_session_before_compact", "pi_session_compact")
    before("pi_addhooks", "pi_configure")
    before("pi_thinking_level_select", "pi_model_select")


@pytest.mark.parametrize(("module", "function", "contract"), SPECS, ids=SPEC_IDS)
def test_docstring_follows_the_template(module: Any, function: Any, contract: HookContract) -> None:
    doc = inspect.getdoc(function)
    assert doc, function.__name__
    summary = doc.splitlines()[0]
    assert summary.endswith("."), summary
    assert doc.splitlines()[1] == "", "the summary is one line"
    for argument in inspect.signature(function).parameters:
        assert f":param {argument}:" in doc, f"{function.__name__} does not document {argument}"
    assert "**Combination:**" in doc
    assert "**On error:**" in doc
    assert "Example::" in doc
    if contract.returns:
        assert ":returns:" in doc, function.__name__
    # when a hook fires, relative to its neighbours
    assert re.search(r"\bFires\b", doc), function.__name__


def _example(function: Any) -> str:
    doc = inspect.getdoc(function) or ""
    block = doc.split("Example::", 1)[1]
    lines = []
    for line in block.splitlines()[1:]:
        if line and not line.startswith(" "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


@pytest.mark.parametrize(("module", "function", "contract"), SPECS, ids=SPEC_IDS)
def test_example_is_a_valid_plugin_for_its_hook(
    module: Any, function: Any, contract: HookContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"pi_example_{function.__name__}"
    plugin = types.ModuleType(name)
    plugin.__file__ = str(tmp_path / f"{name}.py")
    monkeypatch.setitem(sys.modules, name, plugin)
    exec(compile(_example(function), f"<example of {function.__name__}>", "exec"), vars(plugin))
    impl = getattr(plugin, function.__name__)
    assert hasattr(impl, "pi_impl"), "the example is marked with @hookimpl"
    assert set(inspect.signature(impl).parameters) <= set(inspect.signature(function).parameters)
    pm = PluginManager()
    pm.register(plugin, name="example")  # pluggy validates the signature against the spec
    assert pm.check_pending_plugins() == []
    assert [impl.plugin_name for impl in getattr(pm.hook, function.__name__).get_hookimpls()] == ["example"]


def test_strategies_match_pi_combination_rules() -> None:
    strategies = {function.__name__: contract.strategy for _, function, contract in SPECS}
    assert strategies["pi_input"] is Strategy.PIPELINE_UNTIL
    assert strategies["pi_tool_call"] is Strategy.VETO
    assert strategies["pi_before_agent_start"] is Strategy.COLLECT
    assert strategies["pi_resources_discover"] is Strategy.COLLECT
    for name in ("pi_context", "pi_before_provider_request", "pi_message_end", "pi_tool_result"):
        assert strategies[name] is Strategy.PIPELINE, name
    for name in ("pi_user_bash", "pi_project_trust", "pi_before_prompt", "pi_after_agent_run"):
        assert strategies[name] is Strategy.FIRST, name
    for name in strategies:
        if name.startswith("pi_session_before_"):
            assert strategies[name] is Strategy.FIRST, name
        if name.startswith(("pi_register_", "pi_addhooks", "pi_configure")):
            assert strategies[name] is Strategy.SYNC, name
    historic = {function.__name__ for _, function, contract in SPECS if contract.historic}
    assert historic == {"pi_addhooks", "pi_configure"}


def test_lifecycle_hooks_take_ctx_and_sync_hooks_do_not() -> None:
    for _, function, contract in SPECS:
        parameters = list(inspect.signature(function).parameters)
        if contract.strategy is Strategy.SYNC:
            assert "ctx" not in parameters, function.__name__
        else:
            assert parameters[-1] == "ctx", function.__name__


def test_hookspec_rejects_combinations_the_dispatcher_cannot_honour() -> None:
    with pytest.raises(ValueError, match=r"historic hooks must use Strategy\.SYNC"):
        hookspec(strategy=Strategy.NOTIFY, historic=True)
    with pytest.raises(ValueError, match="pipe= is only meaningful"):
        hookspec(strategy=Strategy.FIRST, pipe="x")

    @hookspec(strategy=Strategy.FIRST, returns=str)
    def pi_demo(ctx: Any) -> str | None:
        """Demo."""

    assert get_contract(pi_demo) == HookContract(Strategy.FIRST, (str,))
    # pluggy's own flag is set, so a plain pm.hook call returns one result, not a list.
    assert pi_demo.pi_spec == {  # type: ignore[attr-defined]
        "firstresult": True,
        "historic": False,
        "warn_on_impl": None,
        "warn_on_impl_args": None,
    }


def test_results_are_frozen_and_reject_unknown_fields() -> None:
    block = ToolCallBlock(reason="no")
    with pytest.raises(pydantic.ValidationError):
        block.reason = "yes"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="extra"):
        InputTransform(text="x", image=[])  # type: ignore[call-arg]
    assert ToolCallBlock().reason == "Tool execution was blocked"
    assert BeforeAgentStartResult().message is None
    assert ToolResultPatch(details=None).model_fields_set == {"details"}


def test_public_names_are_exported_once_and_resolve() -> None:
    assert len(set(hookspecs.__all__)) == len(hookspecs.__all__)
    for name in hookspecs.__all__:
        assert getattr(hookspecs, name) is not None  # names are imported on first access
    public = {name for name in vars(hookspecs) if not name.startswith("_")}
    modules = {module.__name__.rsplit(".", 1)[-1] for module in SPEC_MODULES}
    helpers = {"annotations", "Any", "Callable", "Iterator", "ModuleType", "TYPE_CHECKING", "importlib"}
    assert public - modules - helpers == set(hookspecs.__all__)
    assert set(dir(hookspecs)) == set(hookspecs.__all__) | modules
    with pytest.raises(AttributeError):
        _ = hookspecs.no_such_name


def test_stash_is_typed_and_collision_free() -> None:
    stash = Stash()
    first, second = StashKey[int](), StashKey[int]()
    stash[first] = 1
    assert first in stash and second not in stash
    assert stash.get(second, 0) == 0
    assert stash.setdefault(second, 2) == 2
    assert stash[second] == 2
    assert len(stash) == 2
    del stash[first]
    with pytest.raises(KeyError):
        stash[first]


async def _handler(args: str, ctx: Any) -> None:
    return None


def test_command_and_flag_validate_their_names() -> None:
    assert Command(name="/stats", description="", handler=_handler).name == "stats"
    assert Flag(name="--plan").name == "plan"
    with pytest.raises(ValueError, match="invalid command name"):
        Command(name="two words", description="", handler=_handler)
    with pytest.raises(ValueError, match='type must be "boolean" or "string"'):
        Flag(name="plan", type="int")  # type: ignore[arg-type]


def test_pluggy_flags_tell_the_truth_for_a_plain_call() -> None:
    for _, function, contract in SPECS:
        spec = function.pi_spec  # type: ignore[attr-defined]
        assert spec["firstresult"] == (contract.strategy is Strategy.FIRST), function.__name__
        assert spec["historic"] == contract.historic, function.__name__

    pm = PluginManager()

    class Second:
        @hookimpl
        def pi_project_trust(self, cwd: str) -> str:
            return "second"

    class First:
        @hookimpl
        def pi_project_trust(self, cwd: str) -> str:
            return "first"

    pm.register(Second(), name="second")
    pm.register(First(), name="first")
    assert pm.hook.pi_project_trust(cwd="/", ctx=None) == "first"


def test_no_host_hook_names_a_battery() -> None:
    # The host declares pi's hooks and neutral ones; compaction's and retry's own questions
    # are their plugins' hooks (pi_compaction.hookspecs), added through pi_addhooks.
    own = [name for name in HOST_HOOKS if "compaction" in name or "retry" in name]
    assert own == []
    pm = PluginManager()
    assert getattr(pm.hook, "pi_compaction_prepare", None) is None
