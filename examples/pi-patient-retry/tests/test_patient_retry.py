"""pi-patient-retry through a real pi-host, with pi-retry not installed."""

from __future__ import annotations

import json
from importlib.metadata import distributions
from typing import Any

import patient_retry

from pi_host import AssistantMessage
from pi_host.testing import CliRunner, HostFactory, error

FAST = {"patientRetry": {"attempts": 2, "delaySeconds": 0.01}}


def retry_events(events: list[Any]) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    for event in events:
        if event.type == "auto_retry_start":
            found.append(("start", event.attempt, event.max_attempts, event.delay_ms))
        elif event.type == "auto_retry_end":
            found.append(("end", event.success, event.attempt, event.final_error))
    return found


def test_pi_retry_is_not_installed() -> None:
    names = {dist.metadata["Name"] for dist in distributions()}
    assert "pi-retry" not in names and "pi-patient-retry" in names


def test_the_delay_honours_retry_after_up_to_the_cap() -> None:
    settings = patient_retry.PatientRetrySettings(delay_seconds=1, max_delay_seconds=5)

    def asking(ms: int) -> AssistantMessage:
        return AssistantMessage.model_validate(
            {"role": "assistant", "stopReason": "error", "errorMessage": "429 slow down", "retryAfterMs": ms}
        )

    assert patient_retry.delay_for(asking(3000), settings) == 3.0
    assert patient_retry.delay_for(asking(60_000), settings) == 5.0
    assert patient_retry.delay_for(asking(10), settings) == 1.0


async def test_a_transient_error_is_retried_with_the_plugin_policy(make_host: HostFactory) -> None:
    host = make_host(load=["patient-retry"], settings=FAST, replies=[error("529 overloaded"), "recovered"])
    outcome = await host.run("hi")
    outcome.assert_text("recovered")
    assert retry_events(host.events) == [("start", 1, 2, 10), ("end", True, 1, None)]


async def test_a_permanent_error_is_not_retried(make_host: HostFactory) -> None:
    host = make_host(load=["patient-retry"], settings=FAST, replies=[error("401 invalid x-api-key"), "never"])
    outcome = await host.run("hi")
    assert outcome.stop_reason == "error"
    assert retry_events(host.events) == []


async def test_attempts_run_out(make_host: HostFactory) -> None:
    host = make_host(
        load=["patient-retry"], settings=FAST, replies=[error("503 unavailable") for _ in range(3)]
    )
    await host.run("hi")
    assert retry_events(host.events)[-1] == ("end", False, 2, "503 unavailable")


async def test_abort_retry_before_the_wait_cancels_it(make_host: HostFactory) -> None:
    host = make_host(
        load=["patient-retry"],
        settings={"patientRetry": {"delaySeconds": 60}},
        replies=[error("529 overloaded"), "never"],
    )
    session = await host.session()

    def abort_retry_early(event: Any) -> None:
        # RPC abort_retry at agent_end: the run is over, the wait has not begun yet.
        if event.type == "agent_end":
            session.abort_scope("retry")

    session.subscribe(abort_retry_early)
    await host.run("hi")
    assert retry_events(host.events)[-1] == ("end", False, 1, patient_retry.CANCELLED)


def test_print_mode_prints_the_retried_answer(run_cli: CliRunner) -> None:
    (run_cli.agent_dir / "settings.json").write_text(json.dumps(FAST))
    result = run_cli(
        "--provider", "faux", "--no-session", "-p", "hi", replies=[error("529 overloaded"), "recovered"]
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "recovered"


def test_json_mode_shows_pi_s_retry_events(run_cli: CliRunner) -> None:
    (run_cli.agent_dir / "settings.json").write_text(json.dumps(FAST))
    result = run_cli(
        "--provider", "faux", "--no-session", "--mode", "json", "hi", replies=[error("529 overloaded"), "ok"]
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    starts = [r for r in records if r["type"] == "auto_retry_start"]
    assert starts == [
        {
            "type": "auto_retry_start",
            "attempt": 1,
            "maxAttempts": 2,
            "delayMs": 10,
            "errorMessage": "529 overloaded",
        }
    ]
    assert {"type": "auto_retry_end", "success": True, "attempt": 1} in records
