"""The command behaves as a user can trust: prompts are never eaten, a closed pipe ends the run
quietly, flags do what ``--help`` says, and a first run without a model says how to get one."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from pi_host.modes._args import parse_args, render_help
from tests.interactive_support.fake_session import FakeInteractiveSession
from tests.test_cli import PI_HOST, run
from tests.test_interactive_app import CapturingApp, until


def _user_texts(stdout: str) -> list[str]:
    return [
        event["message"]["content"][0]["text"]
        for event in map(json.loads, stdout.splitlines())
        if event.get("type") == "message_start" and event["message"]["role"] == "user"
    ]


def test_a_prompt_that_starts_with_no_colon_reaches_the_model(tmp_path: Path) -> None:
    result = run(
        ["--provider", "faux", "--mode", "json", "-p", "no:idea what this means"],
        tmp_path,
        [{"text": "understood"}],
    )
    assert result.returncode == 0, result.stderr
    assert _user_texts(result.stdout) == ["no:idea what this means"]
    assert result.stderr == ""


def test_the_old_plugin_switch_spelling_is_a_prompt_with_a_hint(tmp_path: Path) -> None:
    script = [{"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"text": "ok"}]
    result = run(["--provider", "faux", "--mode", "json", "-p", "no:bash"], tmp_path, script)
    assert result.returncode == 0, result.stderr
    assert _user_texts(result.stdout) == ["no:bash"]
    assert "use --no-plugin bash" in result.stderr
    end = next(json.loads(line) for line in result.stdout.splitlines() if '"tool_execution_end"' in line)
    assert end["isError"] is False  # bash was not disabled


def test_no_plugin_and_the_attached_pytest_spelling_disable_a_plugin(tmp_path: Path) -> None:
    script = [{"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"text": "ok"}]
    for switch in (["--no-plugin", "bash"], ["-pno:bash"]):
        result = run([*switch, "--provider", "faux", "--mode", "json", "-p", "go"], tmp_path, script)
        assert result.returncode == 0, result.stderr
        end = next(json.loads(line) for line in result.stdout.splitlines() if '"tool_execution_end"' in line)
        assert end["result"]["content"][0]["text"] == "Tool bash not found", switch
        assert _user_texts(result.stdout) == ["go"]


def test_help_documents_the_plugin_switch_and_no_ignored_flags() -> None:
    text = render_help()
    assert "--no-plugin <name>" in text and "-pno:<name>" in text
    assert "--offline" not in text
    assert "--verbose" in text


def test_offline_is_no_longer_accepted_and_ignored(tmp_path: Path) -> None:
    result = run(["--offline", "--provider", "faux", "-p", "hi"], tmp_path, [{"text": "x"}])
    assert result.returncode == 2
    assert "Unknown option: --offline" in result.stderr


def test_verbose_is_parsed() -> None:
    assert parse_args(["--verbose"]).verbose is True


# -- a closed stdout -------------------------------------------------------------------------------


def _environ(tmp_path: Path, script: list[dict[str, object]]) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")}
    environ.pop("ANTHROPIC_API_KEY", None)
    environ.pop("OPENAI_API_KEY", None)
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    environ.update(PI_HOST_DIR=str(tmp_path / "agent"), PI_HOST_FAUX_SCRIPT=str(path))
    return environ


def test_a_reader_that_leaves_ends_a_json_run_quietly(tmp_path: Path) -> None:
    # Far more output than a pipe holds: pi-host is still writing when the reader leaves.
    script = [{"text": "word " * 60_000}]
    process = subprocess.Popen(
        [PI_HOST, "--provider", "faux", "--no-session", "--mode", "json", "-p", "hi"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
        env=_environ(tmp_path, script),
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(1) == b"{"
    process.stdout.close()
    with process.stderr:
        stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0
    assert stderr == ""


def test_the_shell_pipelines_of_the_docs_print_no_traceback(tmp_path: Path) -> None:
    environ = _environ(tmp_path, [{"text": "word " * 60_000}])
    for pipeline in (
        f"{PI_HOST} --provider faux --no-session --mode json -p hi | head -c 1",
        f"{PI_HOST} --provider faux --no-session -p hi | head -c 1",
        f"{PI_HOST} --provider faux --no-session --mode json -p hi | grep -q word && echo found",
    ):
        result = subprocess.run(
            ["bash", "-o", "pipefail", "-c", pipeline],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=environ,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 0, (pipeline, result.stderr)
        assert result.stderr == "", pipeline


# -- no key, no model ------------------------------------------------------------------------------

REMEDIES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "auth.json", "models.json", "/login", "--model")


def test_print_mode_without_a_model_names_every_remedy(tmp_path: Path) -> None:
    result = run(["-p", "hi"], tmp_path, HOME=str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.startswith("No model selected.")
    for remedy in REMEDIES:
        assert remedy in result.stderr, remedy
    assert "~/agent/auth.json" in result.stderr  # the real agent directory (PI_HOST_DIR), under HOME


async def test_the_terminal_ui_without_a_model_says_how_to_get_one(tmp_path: Path) -> None:
    session = FakeInteractiveSession(cwd=str(tmp_path), settings={"quietStartup": True})
    session._model = None
    with create_pipe_input() as keys:
        app = CapturingApp(session, input=keys, output=DummyOutput(), version="9.9", verbose=True)
        async with anyio.create_task_group() as tg:
            tg.start_soon(app.run)
            await until(lambda: "OPENAI_API_KEY" in app.written)
            app.request_exit()
    for remedy in REMEDIES:
        assert remedy in app.written, remedy
    assert "pi-host v9.9" in app.written  # --verbose: the header despite quietStartup


async def test_quiet_startup_hides_the_header_without_verbose(tmp_path: Path) -> None:
    session = FakeInteractiveSession(cwd=str(tmp_path), settings={"quietStartup": True})
    with create_pipe_input() as keys:
        app = CapturingApp(session, input=keys, output=DummyOutput(), version="9.9")
        async with anyio.create_task_group() as tg:
            tg.start_soon(app.run)
            await until(lambda: app.app.is_running and app._tg is not None)
            app.request_exit()
    assert "v9.9" not in app.written
