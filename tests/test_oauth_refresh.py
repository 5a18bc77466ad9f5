"""Expired OAuth credentials in auth.json are refreshed at the token endpoint, as pi refreshes them.

A local fake server on 127.0.0.1 plays Anthropic's token endpoint (through
``PI_HOST_ANTHROPIC_TOKEN_URL``); files are real. Nothing here sleeps or measures time: expiry
is checked against the clock read around the refresh.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pi_host.providers import AuthStorage, ConfigValueError, ModelRegistry
from tests.fakeservers import AnthropicServer, FakeServer, Reply, anthropic_reply

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")
CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"  # pi's public client id
TOKEN_PATH = "/v1/oauth/token"
EXPIRES_IN_S = 28800
FIVE_MINUTES_MS = 5 * 60 * 1000


def now_ms() -> int:
    return int(time.time() * 1000)


def expired(access: str = "sk-ant-oat01-stale", refresh: str = "refresh-old") -> dict[str, Any]:
    return {"type": "oauth", "access": access, "refresh": refresh, "expires": now_ms() - 1000}


def token_reply(access: str = "sk-ant-oat01-fresh", refresh: str = "refresh-new") -> Reply:
    return Reply.json(
        200,
        {
            "token_type": "Bearer",
            "access_token": access,
            "refresh_token": refresh,
            "expires_in": EXPIRES_IN_S,
        },
    )


def invalid_grant() -> Reply:
    return Reply.json(
        400, {"error": "invalid_grant", "error_description": "Refresh token not found or invalid"}
    )


def write_auth(path: Path, data: dict[str, Any]) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    path.chmod(0o600)
    return path.read_bytes()


def token_env(server: FakeServer) -> dict[str, str]:
    return {"PI_HOST_ANTHROPIC_TOKEN_URL": server.url + TOKEN_PATH}


@pytest.fixture
def token_server() -> Any:
    with FakeServer() as server:
        yield server


# -- a successful refresh ------------------------------------------------------------------------


def test_an_expired_credential_is_refreshed_and_written_back(
    tmp_path: Path, token_server: FakeServer
) -> None:
    path = tmp_path / "agent" / "auth.json"
    write_auth(
        path,
        {
            "openai": {"type": "api_key", "key": "sk-openai"},
            "anthropic": {**expired(), "note": "kept"},
        },
    )
    token_server.enqueue(token_reply())
    storage = AuthStorage(path, env=token_env(token_server))

    before = now_ms()
    assert storage.api_key("anthropic") == "sk-ant-oat01-fresh"
    after = now_ms()

    (request,) = token_server.requests
    assert (request.method, request.path) == ("POST", TOKEN_PATH)
    assert request.headers["content-type"] == "application/json"
    assert request.json() == {
        "grant_type": "refresh_token",
        "client_id": CLIENT_ID,
        "refresh_token": "refresh-old",
    }

    saved = json.loads(path.read_text())
    assert saved["openai"] == {"type": "api_key", "key": "sk-openai"}
    credential = saved["anthropic"]
    assert {k: v for k, v in credential.items() if k != "expires"} == {
        "type": "oauth",
        "access": "sk-ant-oat01-fresh",
        "refresh": "refresh-new",
        "note": "kept",
    }
    # now + expires_in - 5 minutes, "now" being some instant of the refresh.
    lifetime = EXPIRES_IN_S * 1000 - FIVE_MINUTES_MS
    assert before + lifetime <= credential["expires"] <= after + lifetime
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert storage.credential_error("anthropic") is None and storage.drain_errors() == []
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]

    assert storage.api_key("anthropic") == "sk-ant-oat01-fresh"  # valid now: no second refresh
    assert len(token_server.requests) == 1


def test_a_reply_without_a_refresh_token_keeps_the_old_one(tmp_path: Path, token_server: FakeServer) -> None:
    """RFC 6749 §6: the server may leave the refresh token as it was, and say nothing of it."""
    path = tmp_path / "auth.json"
    write_auth(path, {"anthropic": expired()})
    token_server.enqueue(Reply.json(200, {"access_token": "sk-ant-oat01-fresh", "expires_in": EXPIRES_IN_S}))
    storage = AuthStorage(path, env=token_env(token_server))
    assert storage.api_key("anthropic") == "sk-ant-oat01-fresh"
    saved = json.loads(path.read_text())["anthropic"]
    assert (saved["access"], saved["refresh"]) == ("sk-ant-oat01-fresh", "refresh-old")


def test_a_valid_credential_is_not_refreshed(tmp_path: Path, token_server: FakeServer) -> None:
    path = tmp_path / "auth.json"
    live = {"type": "oauth", "access": "sk-ant-oat01-live", "refresh": "r", "expires": now_ms() + 600_000}
    original = write_auth(path, {"anthropic": live})
    storage = AuthStorage(path, env=token_env(token_server))
    assert not storage.oauth_refresh_due("anthropic")
    assert storage.api_key("anthropic") == "sk-ant-oat01-live"
    assert token_server.requests == []
    assert path.read_bytes() == original


def test_a_runtime_key_wins_over_an_expired_credential_without_a_refresh(
    tmp_path: Path, token_server: FakeServer
) -> None:
    path = tmp_path / "auth.json"
    write_auth(path, {"anthropic": expired()})
    storage = AuthStorage(path, env=token_env(token_server))
    storage.set_runtime_api_key("anthropic", "sk-runtime")
    assert not storage.oauth_refresh_due("anthropic")
    assert storage.api_key("anthropic") == "sk-runtime"
    assert token_server.requests == []


def test_an_in_memory_credential_is_refreshed_in_memory(token_server: FakeServer) -> None:
    token_server.enqueue(token_reply())
    storage = AuthStorage.in_memory({"anthropic": expired()}, env=token_env(token_server))
    assert storage.api_key("anthropic") == "sk-ant-oat01-fresh"
    assert (storage.get("anthropic") or {}).get("refresh") == "refresh-new"


async def test_the_registry_refreshes_off_the_event_loop_for_a_request(
    tmp_path: Path, token_server: FakeServer
) -> None:
    path = tmp_path / "auth.json"
    write_auth(path, {"anthropic": expired()})
    token_server.enqueue(token_reply())
    registry = ModelRegistry(AuthStorage(path, env=token_env(token_server)), None)
    model = registry.find("anthropic", "claude-sonnet-4-5")
    assert model is not None
    assert await registry.aapi_key_for_provider("anthropic") == "sk-ant-oat01-fresh"
    assert (await registry.arequest_auth(model)).api_key == "sk-ant-oat01-fresh"
    assert len(token_server.requests) == 1


# -- failures: one clear error, auth.json untouched ----------------------------------------------


def _refused_url() -> str:
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}{TOKEN_PATH}"


FAILURES = {
    "rejected refresh token": (
        invalid_grant(),
        "the token endpoint rejected the refresh token (HTTP 400: invalid_grant: Refresh token not found",
    ),
    "rejection quoting the token": (
        Reply.json(401, {"error": "invalid_grant", "error_description": "refresh-old was revoked"}),
        "rejected the refresh token (HTTP 401: invalid_grant: *** was revoked)",
    ),
    "server error": (Reply.text(503, "upstream unavailable"), "the token endpoint answered HTTP 503"),
    "invalid JSON": (Reply.text(200, "<html>login</html>"), "is not JSON"),
    "missing fields": (
        Reply.json(200, {"access_token": "", "expires_in": "soon"}),
        "lacks a valid access_token, expires_in",
    ),
    "empty refresh token": (
        Reply.json(200, {"access_token": "sk-ant-oat01-half", "refresh_token": "", "expires_in": 60}),
        "lacks a valid refresh_token",
    ),
}


@pytest.mark.parametrize("case", [*FAILURES, "network error", "no refresh token"])
def test_a_failed_refresh_names_the_cause_and_leaves_auth_json_as_it_was(
    case: str, tmp_path: Path, token_server: FakeServer
) -> None:
    path = tmp_path / "auth.json"
    credential = expired()
    env = token_env(token_server)
    if case == "network error":
        env = {"PI_HOST_ANTHROPIC_TOKEN_URL": _refused_url()}
        expected = "could not be reached (Connection error:"
    elif case == "no refresh token":
        del credential["refresh"]
        expected = "the stored credential has no refresh token"
    else:
        reply, expected = FAILURES[case]
        token_server.enqueue(reply)
    original = write_auth(path, {"anthropic": credential, "openai": {"type": "api_key", "key": "k"}})
    registry = ModelRegistry(AuthStorage(path, env=env), None)
    model = registry.find("anthropic", "claude-sonnet-4-5")
    assert model is not None

    with pytest.raises(ConfigValueError) as raised:
        registry.request_auth(model)

    message = str(raised.value)
    assert message.startswith('Could not refresh the OAuth token for "anthropic": ')
    assert expected in message
    assert "/login" in message
    assert "refresh-old" not in message  # the refresh token is never shown
    assert registry.auth.drain_errors() == [message]
    assert path.read_bytes() == original
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert registry.auth.get("anthropic") == credential
    assert len(token_server.requests) == (0 if case in ("network error", "no refresh token") else 1)


def test_a_failed_refresh_is_not_repeated_by_the_same_request(
    tmp_path: Path, token_server: FakeServer
) -> None:
    path = tmp_path / "auth.json"
    write_auth(path, {"anthropic": expired()})
    token_server.enqueue(invalid_grant())
    storage = AuthStorage(path, env=token_env(token_server))
    assert storage.api_key("anthropic") is None  # the agent asks for the key ...
    assert storage.api_key("anthropic") is None  # ... then the provider does
    assert len(token_server.requests) == 1
    assert "rejected the refresh token" in (storage.credential_error("anthropic") or "")


def test_a_failed_refresh_falls_back_to_the_environment_key(tmp_path: Path, token_server: FakeServer) -> None:
    path = tmp_path / "auth.json"
    write_auth(path, {"anthropic": expired()})
    token_server.enqueue(invalid_grant())
    storage = AuthStorage(path, env={**token_env(token_server), "ANTHROPIC_API_KEY": "sk-ant-env"})
    assert storage.api_key("anthropic") == "sk-ant-env"
    assert len(storage.drain_errors()) == 1


def test_an_unreadable_auth_json_is_not_refreshed(tmp_path: Path, token_server: FakeServer) -> None:
    path = tmp_path / "auth.json"
    write_auth(path, {"anthropic": expired()})
    storage = AuthStorage(path, env=token_env(token_server))
    path.write_text("{broken")  # damaged after it was loaded
    assert storage.api_key("anthropic") is None
    assert token_server.requests == []  # the refresh token is not spent without a file to save to
    assert path.read_text() == "{broken"
    assert "cannot be locked and read" in (storage.credential_error("anthropic") or "")


def test_expired_credentials_of_other_providers_still_ask_for_a_login(tmp_path: Path) -> None:
    storage = AuthStorage.in_memory({"openai-codex": expired()}, env={})
    assert storage.api_key("openai-codex") is None
    assert storage.credential_error("openai-codex") == (
        'The OAuth token for "openai-codex" expired; log in again (/login) to refresh it'
    )


# -- several processes on one file ----------------------------------------------------------------


def test_a_token_another_process_refreshed_is_used(tmp_path: Path, token_server: FakeServer) -> None:
    path = tmp_path / "auth.json"
    write_auth(path, {"anthropic": expired()})
    token_server.enqueue(token_reply(), invalid_grant())
    first = AuthStorage(path, env=token_env(token_server))
    second = AuthStorage(path, env=token_env(token_server))  # loaded the expired credential too
    assert first.api_key("anthropic") == "sk-ant-oat01-fresh"
    assert second.api_key("anthropic") == "sk-ant-oat01-fresh"  # re-read under the lock
    assert len(token_server.requests) == 1
    assert second.credential_error("anthropic") is None


def test_racing_refreshes_in_two_threads_spend_the_refresh_token_once(
    tmp_path: Path, token_server: FakeServer
) -> None:
    path = tmp_path / "auth.json"
    write_auth(path, {"anthropic": expired()})
    # A second refresh would spend the spent token: the real server rejects it.
    token_server.enqueue(token_reply(), invalid_grant())
    storages = [AuthStorage(path, env=token_env(token_server)) for _ in range(2)]
    start = threading.Barrier(2)
    keys: list[str | None] = [None, None]

    def resolve(index: int) -> None:
        start.wait()
        keys[index] = storages[index].api_key("anthropic")

    threads = [threading.Thread(target=resolve, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert keys == ["sk-ant-oat01-fresh", "sk-ant-oat01-fresh"]
    assert len(token_server.requests) == 1
    assert json.loads(path.read_text())["anthropic"]["refresh"] == "refresh-new"


def test_threads_sharing_an_in_memory_storage_refresh_once(token_server: FakeServer) -> None:
    token_server.enqueue(token_reply(), invalid_grant())
    storage = AuthStorage.in_memory({"anthropic": expired()}, env=token_env(token_server))
    start = threading.Barrier(2)
    keys: list[str | None] = [None, None]

    def resolve(index: int) -> None:
        start.wait()
        keys[index] = storage.api_key("anthropic")

    threads = [threading.Thread(target=resolve, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert keys == ["sk-ant-oat01-fresh", "sk-ant-oat01-fresh"]
    assert len(token_server.requests) == 1


_RESOLVE_IN_A_PROCESS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pi_host.providers import AuthStorage

    storage = AuthStorage(Path(sys.argv[1]))
    print(storage.api_key("anthropic"))
    print(storage.drain_errors())
    """
)


def test_racing_refreshes_in_two_processes_spend_the_refresh_token_once(
    tmp_path: Path, token_server: FakeServer
) -> None:
    path = tmp_path / "auth.json"
    write_auth(path, {"anthropic": expired()})
    token_server.enqueue(token_reply(), invalid_grant())
    environ = {**os.environ, **token_env(token_server)}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _RESOLVE_IN_A_PROCESS, str(path)],
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=60) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    assert [stdout for stdout, _ in outputs] == ["sk-ant-oat01-fresh\n[]\n"] * 2
    assert len(token_server.requests) == 1
    assert json.loads(path.read_text())["anthropic"]["access"] == "sk-ant-oat01-fresh"


# -- end to end: print mode ----------------------------------------------------------------------


def run_print_mode(tmp_path: Path, model_server: AnthropicServer, token_server: FakeServer) -> Any:
    agent = tmp_path / "agent"
    # The built-in anthropic provider, sent to the local fake Messages API.
    (agent / "models.json").write_text(
        json.dumps({"providers": {"anthropic": {"baseUrl": model_server.url}}})
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PI_HOST", "ANTHROPIC_", "OPENAI_"))}
    environ.update(HOME=str(tmp_path), PI_HOST_DIR=str(agent), NO_COLOR="1", **token_env(token_server))
    return subprocess.run(
        [PI_HOST, "--model", "anthropic/claude-sonnet-4-5", "-p", "hi"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environ,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_print_mode_sends_the_refreshed_token(tmp_path: Path, token_server: FakeServer) -> None:
    path = tmp_path / "agent" / "auth.json"
    write_auth(path, {"anthropic": expired()})
    token_server.enqueue(token_reply())
    with AnthropicServer([anthropic_reply("Hello with a fresh token")]) as model_server:
        result = run_print_mode(tmp_path, model_server, token_server)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello with a fresh token\n"
    assert len(token_server.requests) == 1
    (request,) = model_server.requests
    assert request.headers["authorization"] == "Bearer sk-ant-oat01-fresh"
    saved = json.loads(path.read_text())["anthropic"]
    assert (saved["access"], saved["refresh"]) == ("sk-ant-oat01-fresh", "refresh-new")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_print_mode_reports_a_rejected_refresh_token(tmp_path: Path, token_server: FakeServer) -> None:
    path = tmp_path / "agent" / "auth.json"
    original = write_auth(path, {"anthropic": expired()})
    token_server.enqueue(invalid_grant())
    with AnthropicServer([anthropic_reply("never sent")]) as model_server:
        result = run_print_mode(tmp_path, model_server, token_server)
        assert model_server.requests == []
    assert result.returncode == 1
    assert (
        'Could not refresh the OAuth token for "anthropic": the token endpoint rejected the refresh token'
        in result.stderr
    )
    assert "Log in again with /login" in result.stderr
    assert len(token_server.requests) == 1  # once, though the key is resolved twice per request
    assert path.read_bytes() == original
