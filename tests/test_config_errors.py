"""Mistakes in models.json, settings.json and credentials are reported, each as one line naming
the file (or provider) and the remedy, instead of showing up as their effects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_host.providers import AbortSignal
from pi_host.providers._http import HttpRequest, ProviderFailure, open_with_retries
from tests.test_cli import run


def agent(tmp_path: Path) -> Path:
    home = tmp_path / "agent"
    home.mkdir(exist_ok=True)
    return home


def warnings(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("Warning: ")]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"providers": {"x": ', ["is not valid JSON"]),
        ('{"providers": {"x": {"models": 5}}}', ["providers.x.models"]),
    ],
    ids=["json", "schema"],
)
def test_a_broken_models_json_is_reported_before_the_run(
    tmp_path: Path, content: str, words: list[str]
) -> None:
    models = agent(tmp_path) / "models.json"
    models.write_text(content)
    result = run(["--provider", "faux", "-p", "hi"], tmp_path, [{"text": "fine"}])
    assert result.returncode == 0 and result.stdout == "fine\n"
    (line,) = warnings(result.stderr)
    assert str(models) in line and "ignored until the file is fixed" in line
    for word in words:
        assert word in line


def test_a_model_a_broken_models_json_would_define_names_the_file(tmp_path: Path) -> None:
    models = agent(tmp_path) / "models.json"
    models.write_text('{"providers": {"x": ')
    result = run(["--model", "x/y", "-p", "hi"], tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert 'Model "x/y" not found' in result.stderr and str(models) in result.stderr


def test_a_broken_settings_json_is_reported_by_pi_host_itself(tmp_path: Path) -> None:
    settings = agent(tmp_path) / "settings.json"
    settings.write_text('{"defaultThinkingLevel": 5}')
    result = run(["--provider", "faux", "-p", "hi"], tmp_path, [{"text": "fine"}])
    assert result.returncode == 0, result.stderr
    (line,) = warnings(result.stderr)
    assert str(settings) in line and "defaultThinkingLevel" in line and "using the default" in line


def test_a_bad_client_retry_count_is_reported_and_the_default_used(tmp_path: Path) -> None:
    settings = agent(tmp_path) / "settings.json"
    settings.write_text('{"retry": {"provider": {"maxRetries": "many"}}}')
    result = run(["--provider", "faux", "-p", "hi"], tmp_path, [{"text": "fine"}])
    assert result.returncode == 0 and result.stdout == "fine\n", result.stderr
    (line,) = warnings(result.stderr)
    assert str(settings) in line and "retry.provider.maxRetries" in line and "'many'" in line


def test_no_credentials_at_all_is_not_reported_as_a_missing_model(tmp_path: Path) -> None:
    result = run(["-p", "hi"], tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "No provider has an API key" in result.stderr and "ANTHROPIC_API_KEY" in result.stderr
    assert str(tmp_path / "agent" / "auth.json") in result.stderr


def test_a_base_url_without_a_scheme_fails_at_once(tmp_path: Path) -> None:
    models = agent(tmp_path) / "models.json"
    provider = {
        "baseUrl": "127.0.0.1:9/v1",
        "api": "openai-completions",
        "apiKey": "k",
        "models": [{"id": "m1"}],
    }
    models.write_text(json.dumps({"providers": {"loc": provider}}))
    result = run(["--model", "loc/m1", "-p", "hi"], tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "\"baseUrl\" '127.0.0.1:9/v1' needs a scheme" in result.stderr
    assert "http://127.0.0.1:9/v1" in result.stderr
    assert "Connection error" not in result.stderr


async def test_the_transport_never_retries_a_url_without_a_scheme() -> None:
    class Counting:
        calls = 0

        async def open(self, request: HttpRequest) -> object:
            Counting.calls += 1
            raise AssertionError("never opened")

    request = HttpRequest(url="localhost:8080/v1/messages", headers={}, body={})
    with pytest.raises(ProviderFailure, match="needs http:// or https://"):
        await open_with_retries(Counting(), request, signal=AbortSignal(), max_retries=2)  # type: ignore[arg-type]
    assert Counting.calls == 0


def test_a_broken_settings_json_is_reported_once_with_pi_guard_installed(tmp_path: Path) -> None:
    from importlib.metadata import entry_points

    assert any(ep.name == "guard" for ep in entry_points(group="pi_host.plugins")), "no pi-guard"
    settings = agent(tmp_path) / "settings.json"
    settings.write_text('{"theme": "dark",')
    result = run(["--provider", "faux", "-p", "hi"], tmp_path, [{"text": "fine"}])
    assert result.returncode == 0 and result.stdout == "fine\n", result.stderr
    # pi-guard reads settings.json for its permissions; the file's problem is pi-host's to say.
    naming = [line for line in result.stderr.splitlines() if str(settings) in line]
    assert naming == warnings(result.stderr) and len(naming) == 1, result.stderr
    assert "is not valid JSON" in naming[0]
