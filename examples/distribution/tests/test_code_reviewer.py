"""code-reviewer's tests: the distribution in-process through the testing kit, and its command."""

from __future__ import annotations

import json
from pathlib import Path

from code_reviewer import DISTRIBUTION, READ_ONLY_TOOLS, SYSTEM_PROMPT

from pi_host.testing import CliRunner, HostFactory, tool_call

# -- in-process: the host exactly as the command builds it, with a scripted model --------------


async def test_the_model_gets_the_review_prompt_and_only_read_tools(make_host: HostFactory) -> None:
    host = make_host(distribution=DISTRIBUTION, replies=["No findings: the code is fine."])
    outcome = await host.run("Review main.py")
    outcome.assert_ok()
    request = host.provider.last_request
    assert request.system_prompt.startswith(SYSTEM_PROMPT.strip())
    assert request.tool_names == list(READ_ONLY_TOOLS)
    assert "bash" not in host.tools  # pi-bash is not part of the distribution


async def test_policy_blocks_writes_even_when_the_user_enables_them(make_host: HostFactory) -> None:
    host = make_host(
        distribution=DISTRIBUTION,
        tools=[*READ_ONLY_TOOLS, "write"],  # as `code-reviewer --tools read,write` would
        replies=[tool_call("write", path="main.py", content="oops"), "Reported instead."],
    )
    outcome = await host.run("Fix main.py")
    block = outcome.assert_blocked("write", reason="is read-only", plugin="code_reviewer.policy")
    assert block.input["path"] == "main.py"
    assert not (host.cwd / "main.py").exists()


async def test_reading_works(make_host: HostFactory) -> None:
    host = make_host(
        distribution=DISTRIBUTION,
        files={"main.py": "print('hi')\n"},
        replies=[tool_call("read", path="main.py"), "One finding."],
    )
    outcome = await host.run("Review main.py")
    outcome.assert_ok().assert_not_blocked()
    assert "print('hi')" in outcome.result_text()


# -- the installed command --------------------------------------------------------------------


def test_command_version_and_help(run_cli: CliRunner) -> None:
    assert run_cli("--version", command="code-reviewer").assert_success().stdout.strip() == "0.1.0"
    help_text = run_cli("--help", command="code-reviewer").assert_success().stdout
    assert "code-reviewer" in help_text and "CODE_REVIEWER_DIR" in help_text


def test_command_loads_its_own_plugin_set(run_cli: CliRunner) -> None:
    result = run_cli("plugins", "list", "--json", command="code-reviewer").assert_success()
    status = {info["name"]: info["status"] for info in json.loads(result.stdout)}
    assert status["tools_fs"] == "enabled"
    assert status.get("bash", "not installed") != "enabled"


def test_command_runs_read_only_with_its_own_agent_dir(run_cli: CliRunner) -> None:
    (run_cli.cwd / "main.py").write_text("x = 1\n")
    result = run_cli(
        "--provider",
        "faux",
        "--mode",
        "json",
        "-p",
        "review main.py",
        replies=[tool_call("read", path="main.py"), tool_call("bash", command="rm main.py"), "Done."],
        command="code-reviewer",
    ).assert_success()
    ends = [event for event in result.events if event["type"] == "tool_execution_end"]
    assert [(end["toolName"], end["isError"]) for end in ends] == [("read", False), ("bash", True)]
    assert (run_cli.cwd / "main.py").exists()
    sessions = list((run_cli.home / ".code-reviewer" / "sessions").rglob("*.jsonl"))
    assert len(sessions) == 1
    assert not list(Path(run_cli.agent_dir).rglob("*.jsonl"))  # pi-host's directory is untouched


def test_default_model_is_the_distributions(run_cli: CliRunner) -> None:
    result = run_cli("-p", "hello", command="code-reviewer")
    result.assert_failure(1)
    assert 'No API key found for "anthropic"' in result.stderr
