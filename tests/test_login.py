"""``/login`` (pi's Anthropic OAuth with PKCE) and ``/logout``: the flow's pieces, the dialogs, the terminal.

A local fake server on 127.0.0.1 plays Anthropic's token endpoint (``PI_HOST_ANTHROPIC_TOKEN_URL``);
``auth.json`` files are real. The pseudo-terminal tests run the real ``pi-host`` with ``BROWSER``
set to a script that records the URL it was asked to open.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import socket
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from pi_host.providers import AuthStorage
from pi_host.providers._auth import AuthFileError
from pi_host.providers._oauth_login import (
    LoginAttempt,
    OAuthLoginError,
    exchange_code,
    parse_authorization_input,
    pkce_pair,
    start_login,
)
from tests.fakeservers import FakeServer, Reply
from tests.interactive_support.fake_session import FakeInteractiveSession
from tests.interactive_support.terminal import ENTER, ESCAPE, Terminal, Terminals
from tests.test_interactive_app import CapturingApp, until

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")
CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"  # pi's public client id
REDIRECT_URI = "http://localhost:53692/callback"
TOKEN_PATH = "/v1/oauth/token"
EXPIRES_IN_S = 28800
FIVE_MINUTES_MS = 5 * 60 * 1000


def now_ms() -> int:
    return int(time.time() * 1000)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token_reply(access: str = "sk-ant-oat01-new", refresh: str = "refresh-new") -> Reply:
    return Reply.json(
        200,
        {
            "token_type": "Bearer",
            "access_token": access,
            "refresh_token": refresh,
            "expires_in": EXPIRES_IN_S,
        },
    )


def token_env(server: FakeServer) -> dict[str, str]:
    return {"PI_HOST_ANTHROPIC_TOKEN_URL": server.url + TOKEN_PATH}


def url_params(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


@pytest.fixture
def token_server() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


# -- PKCE and the authorize URL ----------------------------------------------------------------


def test_pkce_pair_follows_rfc_7636() -> None:
    # RFC 7636 appendix B: these 32 octets give this verifier and challenge.
    octets = bytes(
        [116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186,
         22, 212, 37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121]
    )  # fmt: skip
    assert pkce_pair(lambda n: octets[:n]) == (
        "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    )
    verifier, challenge = pkce_pair()
    assert len(verifier) == 43 and set(verifier) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    )
    assert challenge == b64url(hashlib.sha256(verifier.encode()).digest())
    assert pkce_pair()[0] != verifier


def test_the_authorize_url_carries_pis_parameters() -> None:
    attempt = start_login("anthropic")
    parts = urlsplit(attempt.url)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "claude.ai", "/oauth/authorize")
    params = url_params(attempt.url)
    assert params == {
        "code": "true",
        "client_id": CLIENT_ID,
        "response_type": "code",
        "redirect_uri": REDIRECT_URI,
        "scope": "org:create_api_key user:profile user:inference user:sessions:claude_code "
        "user:mcp_servers user:file_upload",
        "code_challenge": b64url(hashlib.sha256(attempt.verifier.encode()).digest()),
        "code_challenge_method": "S256",
        "state": attempt.verifier,
    }
    assert start_login("anthropic").verifier != attempt.verifier
    with pytest.raises(OAuthLoginError, match='cannot log in to "openai"'):
        start_login("openai")


@pytest.mark.parametrize(
    ("pasted", "expected"),
    [
        ("abc123", ("abc123", None)),
        ("  abc123#st-ate \n", ("abc123", "st-ate")),
        ("code=abc&state=xyz", ("abc", "xyz")),
        (f"{REDIRECT_URI}?code=abc&state=xyz", ("abc", "xyz")),
        (f"{REDIRECT_URI}?state=xyz", (None, "xyz")),
        ("", (None, None)),
    ],
)
def test_what_the_user_pastes_is_understood(pasted: str, expected: tuple[str | None, str | None]) -> None:
    assert parse_authorization_input(pasted) == expected


def test_a_pasted_redirect_with_an_error_says_so() -> None:
    with pytest.raises(OAuthLoginError, match=r"refused the login \(access_denied: nope\)"):
        parse_authorization_input(f"{REDIRECT_URI}?error=access_denied&error_description=nope")


# -- the token request -------------------------------------------------------------------------


def test_the_code_is_exchanged_as_pi_exchanges_it(token_server: FakeServer) -> None:
    token_server.enqueue(token_reply())
    attempt = start_login("anthropic")
    before = now_ms()
    credential = exchange_code(attempt, f"the-code#{attempt.verifier}", env=token_env(token_server))
    after = now_ms()

    (request,) = token_server.requests
    assert (request.method, request.path) == ("POST", TOKEN_PATH)
    assert request.headers["content-type"] == "application/json"
    assert request.json() == {
        "grant_type": "authorization_code",
        "client_id": CLIENT_ID,
        "code": "the-code",
        "state": attempt.verifier,
        "redirect_uri": REDIRECT_URI,
        "code_verifier": attempt.verifier,
    }
    assert {k: v for k, v in credential.items() if k != "expires"} == {
        "type": "oauth",
        "access": "sk-ant-oat01-new",
        "refresh": "refresh-new",
    }
    lifetime = EXPIRES_IN_S * 1000 - FIVE_MINUTES_MS  # pi's: five minutes early
    assert before + lifetime <= credential["expires"] <= after + lifetime


def test_a_bare_code_is_sent_with_the_attempts_state(token_server: FakeServer) -> None:
    token_server.enqueue(token_reply())
    attempt = start_login("anthropic")
    exchange_code(attempt, "bare-code", env=token_env(token_server))
    assert token_server.requests[0].json()["state"] == attempt.verifier


def _refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{TOKEN_PATH}"  # nothing listens there any more


@pytest.mark.parametrize(
    ("pasted", "reply", "message"),
    [
        ("", None, "no authorization code was pasted"),
        ("hello there friend", None, "not an authorization code or a redirect URL"),
        ("code#some-other-state", None, "belongs to another login attempt"),
        (
            "the-code",
            Reply.json(400, {"error": "invalid_grant", "error_description": "Invalid code the-code"}),
            r"rejected the authorization code \(HTTP 400: invalid_grant: Invalid code \*\*\*\)",
        ),
        ("the-code", Reply.text(503, "down for maintenance"), r"answered HTTP 503 \(down for maintenance\)"),
        ("the-code", Reply.text(200, "<html>"), "is not JSON"),
        ("the-code", Reply.json(200, {"access_token": "a", "expires_in": 60}), "lacks a valid refresh_token"),
        (None, None, "could not be reached"),
    ],
)
def test_a_failed_exchange_names_the_cause(
    token_server: FakeServer, pasted: str | None, reply: Reply | None, message: str
) -> None:
    env = token_env(token_server)
    if pasted is None:
        pasted, env = "the-code", {"PI_HOST_ANTHROPIC_TOKEN_URL": _refused_url()}
    if reply is not None:
        token_server.enqueue(reply)
    attempt = start_login("anthropic")
    with pytest.raises(OAuthLoginError, match=message) as caught:
        exchange_code(attempt, pasted, env=env)
    text = str(caught.value)
    assert text.startswith("Could not log in to Anthropic (Claude Pro/Max): ")
    assert "/login again" in text and text.endswith("auth.json was left unchanged.")
    assert attempt.verifier not in text
    if reply is None:
        assert token_server.requests == []  # refused before any request


# -- storing -----------------------------------------------------------------------------------


def test_strict_storing_never_overwrites_an_unparsable_auth_json(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    path.write_text("{broken")
    storage = AuthStorage(path, env={})
    with pytest.raises(AuthFileError, match="not valid JSON"):
        storage.set("anthropic", {"type": "oauth", "access": "a", "refresh": "r", "expires": 1}, strict=True)
    assert path.read_text() == "{broken" and storage.get("anthropic") is None

    path.write_text(json.dumps({"openai": {"type": "api_key", "key": "k"}}))
    storage.reload()
    path.write_text("[]")  # changed into a non-object meanwhile
    with pytest.raises(AuthFileError, match="no longer a JSON object"):
        storage.remove("openai", strict=True)
    assert path.read_text() == "[]" and storage.get("openai") is not None
    assert storage.drain_errors() == []  # reported by the exception, not twice


# -- the dialogs, in process -------------------------------------------------------------------


class Harness:
    def __init__(self, app: CapturingApp, keys: Any, session: FakeInteractiveSession) -> None:
        self.app, self.keys, self.session = app, keys, session

    async def command(self, text: str) -> None:
        self.app.spawn(self.app.commands.run, text)

    async def dialog(self) -> None:
        await until(lambda: self.app._dialog is not None)

    def text(self) -> str:
        """The transcript with its lines joined: rich wraps long notices."""
        return " ".join(self.app.written.split())

    async def committed(self, text: str) -> None:
        await until(lambda: text in self.text())


@asynccontextmanager
async def running(tmp_path: Path, auth: AuthStorage) -> AsyncIterator[Harness]:
    session = FakeInteractiveSession(cwd=str(tmp_path))
    session.auth = auth
    with create_pipe_input() as keys:
        app = CapturingApp(
            session, input=keys, output=DummyOutput(), keybindings_path=tmp_path / "keybindings.json"
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(app.run)
            await until(lambda: app.app.is_running and app._tg is not None)
            yield Harness(app, keys, session)
            app.request_exit()


@pytest.fixture
def no_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")


async def test_login_in_process_stores_the_credential(
    tmp_path: Path, token_server: FakeServer, no_browser: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pi_host.providers._oauth_login as oauth_login

    attempts: list[LoginAttempt] = []

    def recording_start(provider: str) -> LoginAttempt:
        attempts.append(start_login(provider))
        return attempts[-1]

    monkeypatch.setattr(oauth_login, "start_login", recording_start)
    path = tmp_path / "auth.json"
    path.write_text(json.dumps({"openai": {"type": "api_key", "key": "sk-o"}}))
    token_server.enqueue(token_reply())
    async with running(tmp_path, AuthStorage(path, env=token_env(token_server))) as h:
        await h.command("/login")
        await h.dialog()
        h.keys.send_text("\r")  # Anthropic (Claude Pro/Max)
        await h.committed("Open this URL in a browser:")  # no display: nothing to open
        (attempt,) = attempts
        await h.dialog()
        h.keys.send_text(f"the-code#{attempt.verifier}\r")
        await h.committed("Logged in to Anthropic (Claude Pro/Max). Credentials saved to")
    saved = json.loads(path.read_text())
    assert saved["openai"] == {"type": "api_key", "key": "sk-o"}
    assert saved["anthropic"]["access"] == "sk-ant-oat01-new"


@pytest.mark.parametrize(
    ("answer", "reply", "message"),
    [
        ("\x1b", None, "Login cancelled"),
        (
            "not a code at all\r",
            None,
            "Error: Could not log in to Anthropic (Claude Pro/Max): the pasted text",
        ),
        ("the-code\r", Reply.json(400, {"error": "invalid_grant"}), "rejected the authorization code"),
    ],
)
async def test_a_login_that_fails_says_why_and_leaves_auth_json_alone(
    tmp_path: Path, token_server: FakeServer, no_browser: None, answer: str, reply: Reply | None, message: str
) -> None:
    path = tmp_path / "auth.json"
    before = json.dumps({"anthropic": {"type": "api_key", "key": "sk-a"}})
    path.write_text(before)
    if reply is not None:
        token_server.enqueue(reply)
    async with running(tmp_path, AuthStorage(path, env=token_env(token_server))) as h:
        await h.command("/login")
        await h.dialog()
        h.keys.send_text("\r")
        await h.committed("Open this URL in a browser:")
        await h.dialog()
        h.keys.send_text(answer)
        await h.committed(message)
        assert h.app.written.count("Error:") <= 1
    assert path.read_text() == before


async def test_login_with_an_unreadable_auth_json_stops_before_the_url(
    tmp_path: Path, no_browser: None
) -> None:
    path = tmp_path / "auth.json"
    path.write_text("{oops")
    async with running(tmp_path, AuthStorage(path, env={})) as h:
        await h.command("/login")
        await h.committed("Error: Cannot log in:")
        assert "is not valid JSON" in h.text() and "oauth/authorize" not in h.text()
        await h.command("/logout")
        await h.committed("Error: Cannot log out:")
    assert path.read_text() == "{oops"


async def test_logout_in_process(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    async with running(tmp_path, AuthStorage(path, env={})) as h:
        await h.command("/logout")
        await h.committed("No stored credentials to remove.")
        path.write_text(json.dumps({"anthropic": {"type": "api_key", "key": "sk-a"}}))  # a pi elsewhere
        await h.command("/logout")
        await h.dialog()
        h.keys.send_text("\x1b")  # dismissed: nothing removed
        await until(lambda: h.app._dialog is None)
        await h.command("/logout")
        await h.dialog()
        h.keys.send_text("\r")
        await h.committed("Removed the stored credential for anthropic.")
    assert json.loads(path.read_text()) == {}


# -- in a terminal, end to end -----------------------------------------------------------------

pty_only = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a POSIX pseudo-terminal")


@pytest.fixture
def pi_host_terminal(tmp_path: Path, token_server: FakeServer) -> Iterator[Any]:
    terminals = Terminals()
    opened = tmp_path / "opened-url.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}.tmp && mv {opened}.tmp {opened}\n')
    browser.chmod(0o755)

    def start(*args: str) -> Terminal:
        agent_dir = tmp_path / "agent"
        agent_dir.mkdir(exist_ok=True)
        script = tmp_path / "faux.json"
        script.write_text(json.dumps([{"text": "hi"}]))
        env = {
            "PI_HOST_DIR": str(agent_dir),
            "PI_HOST_FAUX_SCRIPT": str(script),
            "ANTHROPIC_API_KEY": "",
            "ANTHROPIC_OAUTH_TOKEN": "",
            "OPENAI_API_KEY": "",
            "BROWSER": str(browser),
            **token_env(token_server),
        }
        return terminals.start([PI_HOST, *args], cwd=tmp_path, env=env)

    yield start
    terminals.close()


@pty_only
def test_login_in_a_terminal_saves_the_credential_and_selects_a_model(
    pi_host_terminal: Any, tmp_path: Path, token_server: FakeServer
) -> None:
    auth_json = tmp_path / "agent" / "auth.json"
    opened = tmp_path / "opened-url.txt"
    token_server.enqueue(token_reply())
    term: Terminal = pi_host_terminal()  # no credential anywhere: no model yet

    term.submit("/login")
    term.wait_for("Select a provider to log in to")
    term.wait_for("Anthropic (Claude Pro/Max)")
    term.send(ENTER)
    term.wait_for("Paste the authorization code or the redirect URL")
    term.wait_for(lambda: opened.exists())  # the browser was asked to open the authorize URL
    url = opened.read_text()
    assert url.startswith("https://claude.ai/oauth/authorize?")
    params = url_params(url)
    term.send(f"{REDIRECT_URI}?code=code-from-browser&state={params['state']}")
    term.wait_for(f"&state={params['state']}", where=term.screen.screen_text)  # all read: now submit
    term.send(ENTER)
    term.wait_for("Logged in to Anthropic (Claude Pro/Max).")
    term.wait_for("Credentials saved to")

    (request,) = token_server.requests
    sent = request.json()
    assert sent["code"] == "code-from-browser" and sent["grant_type"] == "authorization_code"
    assert b64url(hashlib.sha256(sent["code_verifier"].encode()).digest()) == params["code_challenge"]
    credential = json.loads(auth_json.read_text())["anthropic"]
    assert (credential["type"], credential["access"], credential["refresh"]) == (
        "oauth",
        "sk-ant-oat01-new",
        "refresh-new",
    )
    assert isinstance(credential["expires"], int) and credential["expires"] > now_ms()
    # The session had no model: the provider's default is selected and shown in the footer.
    assert "Selected anthropic/" in term.screen.text()
    term.wait_for("claude", where=term.screen.screen_text)

    # /login again: the picker marks the provider logged in; Escape on the paste cancels.
    term.submit("/login")
    term.wait_for("✓ logged in")
    term.send(ENTER)
    term.wait_for("Paste the authorization code or the redirect URL")
    term.send(ESCAPE)
    term.wait_for("Login cancelled")
    term.wait_gone("Paste the authorization code")
    assert json.loads(auth_json.read_text())["anthropic"] == credential
    term.double_ctrl_c()
    assert term.wait_exit() == 0


@pty_only
def test_logout_in_a_terminal_removes_only_that_credential(pi_host_terminal: Any, tmp_path: Path) -> None:
    auth_json = tmp_path / "agent" / "auth.json"
    auth_json.parent.mkdir(parents=True)
    oauth = {"type": "oauth", "access": "sk-ant-oat01-x", "refresh": "r", "expires": now_ms() + 3_600_000}
    auth_json.write_text(json.dumps({"anthropic": oauth, "openai": {"type": "api_key", "key": "sk-o"}}))
    term: Terminal = pi_host_terminal("--provider", "faux")

    term.submit("/logout")
    term.wait_for("Select a provider to log out of")
    term.wait_for("Anthropic (Claude Pro/Max)  (subscription)")
    term.wait_for("openai  (api key)")
    term.send(ENTER)  # sorted by name: Anthropic first
    term.wait_for("Logged out of Anthropic (Claude Pro/Max)")
    assert json.loads(auth_json.read_text()) == {"openai": {"type": "api_key", "key": "sk-o"}}

    term.submit("/logout")
    term.wait_for("openai  (api key)")
    term.wait_gone("(subscription)")
    term.send(ESCAPE)
    term.wait_gone("Select a provider to log out of")
    term.double_ctrl_c()
    assert term.wait_exit() == 0
    assert json.loads(auth_json.read_text()) == {"openai": {"type": "api_key", "key": "sk-o"}}
