"""The testing kit for plugin authors: an opt-in pytest plugin.

It is not registered automatically (installing pi-host does not change anyone's test
suite). Turn it on in the ``conftest.py`` of your plugin's tests::

    pytest_plugins = ["pi_host.testing"]

Then::

    from pi_host.testing import reply, tool_call

    import my_plugin


    async def test_greets(make_host):
        host = make_host(my_plugin, load=["tools_fs"], replies=[tool_call("read", path="a.txt"), "done"])
        outcome = await host.run("read a.txt")
        outcome.assert_ok().assert_tool_called("read", path="a.txt")
        host.recorder.assert_called("pi_tool_call")

What it offers:

- the ``make_host`` fixture (also ``pi_host_factory``): an isolated host per test with only
  the plugins you name, a scripted model, temporary directories, and strict hook checking;
- :class:`ScriptedProvider` and the step vocabulary (:func:`reply`, :func:`tool_call`,
  :func:`error`, plain strings, JSON-script dicts, functions of the :class:`Request`);
- :class:`HookRecorder`: which hooks fired, in what order, with what arguments and results,
  and which implementations raised;
- :meth:`IsolatedHost.run` returning a :class:`RunOutcome` with ``assert_*`` helpers;
- the ``run_cli`` fixture (:class:`CliRunner`): the ``pi-host`` command in a subprocess with an
  isolated environment, for black-box tests, and ``run_cli.rpc(...)`` (:class:`RpcClient`)
  to drive ``--mode rpc`` as pi's RPC clients do;
- the session-store conformance suite (:func:`check_session_store`,
  :class:`SessionStoreConformance`) that every :class:`pi_host.SessionStore` must pass;
- the batch-executor checks (:func:`check_batch_executor`) for a :class:`pi_host.BatchExecutor`;
- checks of a plugin's surface: :func:`assert_entry_point`, :func:`assert_hooks_match_specs`,
  :func:`assert_public_imports_only`.

Only the fixtures need pytest (``pip install "pi-host[testing]"`` brings it and
pytest-asyncio); everything else imports without it, for scripts and other test runners.

The kit's assertions carry their own messages, so pytest need not rewrite this package
(PYTEST_DONT_REWRITE); a test module may then import it before pytest loads it as a plugin.
"""

from __future__ import annotations

from ._checks import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only
from ._cli import CliResult, CliRunner, isolated_environ, script_json
from ._executors import check_batch_executor, check_executor_runs_every_attempt, check_executor_stops_on_close
from ._factory import HostFactory
from ._host import Block, HostSetupError, IsolatedHost, PluginError, RunOutcome, build_host
from ._recorder import HookCall, HookRecorder, ImplCall, RecordingDispatcher
from ._rpc import RpcClient, RpcClientError
from ._script import Request, Responder, ScriptedProvider, Step, error, reply, to_reply, tool_call
from ._stores import (
    SessionStoreConformance,
    StoreFactory,
    check_concurrent_writers,
    check_crash_mid_tool,
    check_idempotent_append,
    check_list_and_delete,
    check_refuses_malformed,
    check_resume_like_a_file,
    check_round_trip,
    check_session_store,
    sample_session,
)
from ._ui import RecordingUI

_FIXTURES = ("make_host", "pi_host_factory", "run_cli")

try:
    from ._fixtures import make_host, pi_host_factory, run_cli
except ModuleNotFoundError as exc:
    if exc.name != "pytest":
        raise
    _fixtures_missing = True
else:
    _fixtures_missing = False

__all__ = [
    "Block",
    "CliResult",
    "CliRunner",
    "HookCall",
    "HookRecorder",
    "HostFactory",
    "HostSetupError",
    "ImplCall",
    "IsolatedHost",
    "PluginError",
    "RecordingDispatcher",
    "RecordingUI",
    "Request",
    "Responder",
    "RpcClient",
    "RpcClientError",
    "RunOutcome",
    "ScriptedProvider",
    "SessionStoreConformance",
    "Step",
    "StoreFactory",
    "assert_entry_point",
    "assert_hooks_match_specs",
    "assert_public_imports_only",
    "build_host",
    "check_batch_executor",
    "check_concurrent_writers",
    "check_crash_mid_tool",
    "check_executor_runs_every_attempt",
    "check_executor_stops_on_close",
    "check_idempotent_append",
    "check_list_and_delete",
    "check_refuses_malformed",
    "check_resume_like_a_file",
    "check_round_trip",
    "check_session_store",
    "error",
    "isolated_environ",
    "make_host",
    "pi_host_factory",
    "reply",
    "run_cli",
    "sample_session",
    "script_json",
    "to_reply",
    "tool_call",
]
if _fixtures_missing:
    __all__ = [name for name in __all__ if name not in _FIXTURES]


def __getattr__(name: str) -> object:
    if name in _FIXTURES:
        raise ImportError(
            f"pi_host.testing.{name} is a pytest fixture and pytest is not installed: "
            'pip install "pi-host[testing]"'
        )
    raise AttributeError(f"module 'pi_host.testing' has no attribute {name!r}")
