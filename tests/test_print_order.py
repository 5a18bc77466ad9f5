"""Print mode writes the answer before the shutdown hooks run, and a hung hook cannot hide it."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from pi_host import hookimpl
from pi_host.modes import _print
from pi_host.modes._print import run_print_mode
from pi_host.providers import faux_assistant_message
from tests.test_runtime_prompt import open_session


class HungShutdown:
    """A ``session_shutdown`` hook that records what was printed before it, then never returns."""

    def __init__(self) -> None:
        self.printed_before: str | None = None

    @hookimpl
    async def pi_session_shutdown(self, reason: str) -> None:
        sys.stdout.flush()
        self.printed_before = _captured()
        with anyio.move_on_after(30):  # "forever", bounded so that a regression fails, not hangs
            await anyio.sleep_forever()


_capture: pytest.CaptureFixture[str] | None = None


def _captured() -> str:
    assert _capture is not None
    captured = _capture.readouterr()
    sys.stdout.write(captured.out)  # keep it for the test's own look at the end
    sys.stderr.write(captured.err)
    return captured.out


async def test_the_answer_is_printed_before_a_hung_shutdown_hook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    global _capture
    _capture = capsys
    monkeypatch.setattr(_print, "SHUTDOWN_LIMIT_S", 0.2)
    hook = HungShutdown()
    async with open_session(
        tmp_path, [faux_assistant_message("the answer")], plugins=[hook], start=False
    ) as rig:
        with anyio.fail_after(20):
            status = await run_print_mode(rig.session, ["hi"])
    assert hook.printed_before == "the answer\n"
    captured = capsys.readouterr()
    assert status == 0
    assert captured.out == "the answer\n"
    assert "session_shutdown hooks did not finish within 0.2 s" in captured.err
