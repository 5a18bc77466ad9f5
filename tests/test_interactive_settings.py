"""``/settings`` and ``/scoped-models`` in a pseudo-terminal, on the real session runtime.

pi-host runs with an isolated agent directory on the faux provider; models.json adds two
models of a second provider (never called: the tests only switch between models), so that
Ctrl+P has something to cycle through. The tests read the screen and settings.json back.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interactive_support.terminal import CTRL_C, DOWN, ENTER, ESCAPE, UP, Terminal, Terminals

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")
SELECTED = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"  # the picker's cursor
CTRL_P = "\x10"
CTRL_S = "\x13"

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a POSIX pseudo-terminal")

MODELS_JSON = {
    "providers": {
        "local": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "apiKey": "not-used",
            "models": [{"id": "alpha"}, {"id": "beta"}],
        }
    }
}


@pytest.fixture
def pi_host(tmp_path: Path) -> Iterator[Any]:
    terminals = Terminals()

    def start(script: list[dict[str, Any]], settings: dict[str, Any]) -> Terminal:
        agent_dir = tmp_path / "agent"
        agent_dir.mkdir(exist_ok=True)
        (agent_dir / "settings.json").write_text(json.dumps(settings))
        (agent_dir / "models.json").write_text(json.dumps(MODELS_JSON))
        script_file = tmp_path / "faux.json"
        script_file.write_text(json.dumps(script))
        env = {
            "PI_HOST_DIR": str(agent_dir),
            "PI_HOST_FAUX_SCRIPT": str(script_file),
            "ANTHROPIC_API_KEY": "",
            "OPENAI_API_KEY": "",
        }
        return terminals.start([PI_HOST, "--provider", "faux"], cwd=tmp_path, env=env)

    yield start
    terminals.close()


def _selected_row(term: Terminal) -> int | None:
    """The line of the picker's cursor, or ``None`` while a redraw shows none or two of them."""
    rows = [i for i, line in enumerate(term.screen.screen_text().splitlines()) if line.startswith(SELECTED)]
    return rows[0] if len(rows) == 1 else None


def select_row(term: Terminal, text: str, limit: int = 12) -> None:
    """Move the picker's cursor (Up or Down) until the selected row starts with ``text``.

    Each key waits for the cursor to settle on its new row: judged from a half-drawn screen,
    the next key would overshoot.
    """
    for _ in range(limit):
        term.wait_for(lambda: _selected_row(term) is not None)
        lines = term.screen.screen_text().splitlines()
        selected = _selected_row(term)
        assert selected is not None
        if lines[selected].startswith(f"{SELECTED} {text}"):
            return
        target = next(i for i, line in enumerate(lines) if line[2:].startswith(text))
        term.send(UP if target < selected else DOWN)
        term.wait_for(lambda selected=selected: _selected_row(term) not in (None, selected))
    raise AssertionError(f"{text!r} not reached:\n{term.dump()}")


def test_settings_change_applies_at_once_and_is_saved(pi_host: Any, tmp_path: Path) -> None:
    term: Terminal = pi_host(
        [
            {"thinking": "Pondering the first question.", "text": "First answer."},
            {"thinking": "Pondering the second question.", "text": "Second answer."},
        ],
        {"compaction": {"keepRecentTokens": 10}, "myPlugin": {"level": 3}, "steeringMode": "all"},
    )
    term.submit("first question")
    term.wait_for("First answer.")
    assert "Pondering the first question." in term.screen.text()
    term.wait_gone("Working...")

    term.submit("/settings")
    term.wait_for("Hide thinking", where=term.screen.screen_text)
    # Waited for, not asserted: the rest of the list may still be on its way.
    term.wait_for(re.compile(r"Steering mode\s+all"), where=term.screen.screen_text)
    select_row(term, "Hide thinking")
    term.wait_for("one-line label", where=term.screen.screen_text)  # the row's description
    term.send(ENTER)
    term.wait_for(lambda: re.search(r"Hide thinking\s+true", term.screen.screen_text()) is not None)
    select_row(term, "Steering mode")
    term.send(ENTER)
    term.wait_for(lambda: re.search(r"Steering mode\s+one-at-a-time", term.screen.screen_text()) is not None)
    term.send(ESCAPE)
    term.wait_gone("Hide thinking", timeout=10)

    saved = json.loads((tmp_path / "agent" / "settings.json").read_text())
    assert saved == {
        "compaction": {"keepRecentTokens": 10},
        "myPlugin": {"level": 3},
        "steeringMode": "one-at-a-time",
        "hideThinkingBlock": True,
    }

    # The running session hides the next reply's thinking behind its label.
    term.submit("second question")
    term.wait_for("Second answer.")
    assert "Pondering the second question." not in term.screen.text()
    assert "Thinking..." in term.screen.text()


def test_settings_file_that_does_not_parse_is_left_alone(pi_host: Any, tmp_path: Path) -> None:
    term: Terminal = pi_host([], {})
    settings = tmp_path / "agent" / "settings.json"
    settings.write_text('{"steeringMode": "all",')  # broken after start-up
    term.submit("/settings")
    term.wait_for("Quiet startup", where=term.screen.screen_text)
    select_row(term, "Quiet startup")
    term.send(ENTER)

    # The notice wraps over several lines; wait until all of it is on the screen.
    def message() -> str:
        return " ".join(term.screen.text().split())

    term.wait_for(lambda: "quietStartup applies to this session but was not saved to" in message())
    term.wait_for(lambda: "Fix the file, then change the setting again." in message())
    assert "settings.json: the file is not valid JSON" in message()
    assert settings.read_text() == '{"steeringMode": "all",'
    # The session still uses the new value.
    term.wait_for(lambda: re.search(r"Quiet startup\s+true", term.screen.screen_text()) is not None)
    term.send(CTRL_C)


def test_scoped_models_limit_model_cycling(pi_host: Any, tmp_path: Path) -> None:
    term: Terminal = pi_host([], {"defaultProvider": "faux", "defaultModel": "faux-1"})
    term.wait_for("faux-1", where=term.screen.screen_text)

    term.submit("/scoped-models")
    term.wait_for("Model Configuration", where=term.screen.screen_text)
    term.wait_for("all enabled", where=term.screen.screen_text)
    # Enable faux-1, then beta; alpha stays out of the cycle.
    _toggle(term, "faux-1")
    term.wait_for("1/3 enabled", where=term.screen.screen_text)
    _toggle(term, "beta")
    term.wait_for("2/3 enabled", where=term.screen.screen_text)
    term.wait_for("(unsaved)", where=term.screen.screen_text)
    term.send(CTRL_S)
    term.wait_for("Model selection saved to settings")
    # The list is drawn again under the notice, no longer marked unsaved.
    term.wait_for(
        lambda: "2/3 enabled" in (screen := term.screen.screen_text()) and "(unsaved)" not in screen
    )
    term.send(ESCAPE)
    term.wait_gone("Model Configuration", timeout=10)

    saved = json.loads((tmp_path / "agent" / "settings.json").read_text())
    assert saved == {
        "defaultProvider": "faux",
        "defaultModel": "faux-1",
        "enabledModels": ["faux/faux-1", "local/beta"],
    }

    # Ctrl+P: faux-1 → beta → faux-1, never alpha.
    seen = []
    for _ in range(3):
        term.send(CTRL_P)
        term.wait_for("Model:")
        term.wait_for(lambda: _model_notice_count(term) == len(seen) + 1)
        seen.append(_last_model_notice(term))
    assert seen == ["beta", "faux-1", "beta"]


def _toggle(term: Terminal, model_id: str) -> None:
    for _ in range(6):
        screen = term.screen.screen_text()
        if f"→ {model_id} [" in screen:
            term.send(ENTER)
            term.wait_for(lambda screen=screen: term.screen.screen_text() != screen)
            return
        term.send(DOWN)
        term.wait_for(lambda screen=screen: term.screen.screen_text() != screen)
    raise AssertionError(f"{model_id!r} not reached:\n{term.dump()}")


def _model_notices(term: Terminal) -> list[str]:
    return re.findall(r"Model: (\S+)", term.screen.text())


def _model_notice_count(term: Terminal) -> int:
    return len(_model_notices(term))


def _last_model_notice(term: Terminal) -> str:
    return _model_notices(term)[-1]
