"""AgentSession is a façade over private parts with one job each; the imports point one way.

The parts (``pi_host/runtime/_session_*.py``) state what they need of the session as a
protocol and never import the façade module, so that each can be read, and loaded, alone.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pi_host.runtime

RUNTIME = Path(pi_host.runtime.__file__).parent
PARTS = sorted(path.stem for path in RUNTIME.glob("_session_*.py"))


def test_the_session_is_composed_of_parts() -> None:
    assert {"_session_prompt", "_session_queues", "_session_bash", "_session_model"} <= set(PARTS)


def test_no_part_loads_the_facade() -> None:
    imports = "; ".join(f"import pi_host.runtime.{part}" for part in PARTS)
    check = "import sys; print('pi_host.runtime._session' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", f"{imports}; {check}"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_facade_keeps_its_public_names() -> None:
    from pi_host.runtime import (
        AgentSession,
        SessionError,
        SessionImport,
        TreeNavigation,
        _session,
        clamp_thinking_level,
    )

    assert _session.SessionError is SessionError
    assert (_session.SessionImport, _session.TreeNavigation) == (SessionImport, TreeNavigation)
    assert _session.clamp_thinking_level is clamp_thinking_level
    for name in (
        "prompt", "steer", "follow_up", "clear_queue", "send_user_message", "send_custom_message",
        "queue_plugin_message", "abort", "run_user_bash", "abort_bash", "set_model",
        "set_thinking_level", "compact", "append_compaction_entry", "complete", "new_session",
        "switch_session", "import_session", "fork", "navigate_tree", "reload", "start", "shutdown",
        "emit_plugin_event", "is_bash_running", "steering_messages", "follow_up_messages",
        "pending_message_count", "system_prompt", "model", "thinking_level",
    ):  # fmt: skip
        assert hasattr(AgentSession, name), name
