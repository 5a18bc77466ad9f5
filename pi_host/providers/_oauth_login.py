"""Logging in with OAuth: pi's authorization-code flow with PKCE for Anthropic (Claude Pro/Max).

The flow is pi's ``/login``:

1. :func:`start_login` makes a PKCE pair (a random verifier, its SHA-256 challenge) and the
   authorize URL, whose ``state`` is the verifier, as pi sends it;
2. the user opens the URL, approves, and pastes back what the browser shows: the code, pi's
   ``code#state``, or the whole redirect URL (:func:`parse_authorization_input`);
3. :func:`exchange_code` redeems the code at the token endpoint (``PI_HOST_ANTHROPIC_TOKEN_URL``
   replaces it, as for refreshes) and returns the credential to store in ``auth.json``:
   ``{"type": "oauth", "access", "refresh", "expires"}``.

The redirect URI is pi's local callback address. pi also listens there for the browser's
redirect; pi-host only takes the pasted code or URL (the browser shows the URL in its address
bar even when nothing answers there).

Nothing here writes files; the caller stores the credential (:class:`._auth.AuthStorage`).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from ._oauth import ANTHROPIC_CLIENT_ID, describe_http_error, post_json, token_reply_fields, token_url

__all__ = [
    "LOGIN_PROVIDERS",
    "LoginAttempt",
    "OAuthLoginError",
    "exchange_code",
    "parse_authorization_input",
    "pkce_pair",
    "start_login",
]

#: Providers one can log in to with OAuth, and how pi names them.
LOGIN_PROVIDERS: dict[str, str] = {"anthropic": "Anthropic (Claude Pro/Max)"}

_AUTHORIZE_URL = "https://claude.ai/oauth/authorize"
_REDIRECT_URI = "http://localhost:53692/callback"
_SCOPES = (
    "org:create_api_key user:profile user:inference user:sessions:claude_code user:mcp_servers "
    "user:file_upload"
)


class OAuthLoginError(Exception):
    """A login that produced no credential; the message is what the user reads."""


@dataclass(frozen=True)
class LoginAttempt:
    """One login in progress: what to show the user, and the secret needed to finish it.

    ``verifier`` doubles as the OAuth ``state`` (pi's choice), so a pasted ``code#state`` from
    another attempt is recognised.
    """

    provider: str
    url: str
    verifier: str
    redirect_uri: str = _REDIRECT_URI


def _base64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pkce_pair(random_bytes: Callable[[int], bytes] = secrets.token_bytes) -> tuple[str, str]:
    """A PKCE ``(verifier, challenge)``: 32 random bytes base64url-encoded, and its S256 challenge."""
    verifier = _base64url(random_bytes(32))
    return verifier, _base64url(hashlib.sha256(verifier.encode("ascii")).digest())


def start_login(provider: str) -> LoginAttempt:
    """A new login to ``provider`` (a key of :data:`LOGIN_PROVIDERS`).

    :raises OAuthLoginError: for a provider pi-host cannot log in to.
    """
    if provider not in LOGIN_PROVIDERS:
        raise OAuthLoginError(
            f'pi-host cannot log in to "{provider}"; it can log in to {", ".join(LOGIN_PROVIDERS)}'
        )
    verifier, challenge = pkce_pair()
    query = urlencode(
        {
            "code": "true",
            "client_id": ANTHROPIC_CLIENT_ID,
            "response_type": "code",
            "redirect_uri": _REDIRECT_URI,
            "scope": _SCOPES,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": verifier,
        }
    )
    return LoginAttempt(provider=provider, url=f"{_AUTHORIZE_URL}?{query}", verifier=verifier)


def parse_authorization_input(text: str) -> tuple[str | None, str | None]:
    """``(code, state)`` from what the user pasted: a redirect URL, ``code#state``, a query, or a code.

    :raises OAuthLoginError: when the pasted redirect URL carries the authorization server's
        ``error`` (the user denied access, say).
    """
    value = text.strip()
    if not value:
        return None, None
    parts = urlsplit(value)
    if parts.scheme in ("http", "https") and parts.netloc:
        query = parse_qs(parts.query)
        error = _first(query, "error")
        if error is not None:
            description = _first(query, "error_description")
            raise OAuthLoginError(
                f"the authorization server refused the login ({error}"
                + (f": {description}" if description else "")
                + ")"
            )
        return _first(query, "code"), _first(query, "state")
    if "#" in value:
        code, _, state = value.partition("#")
        return code or None, state or None
    if "code=" in value:
        query = parse_qs(value)
        return _first(query, "code"), _first(query, "state")
    return value, None


def _first(query: Mapping[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values and values[0] else None


def _looks_like_code(code: str) -> bool:
    # Codes are URL-safe tokens; text with spaces or control characters is something else pasted.
    return all(char.isprintable() and not char.isspace() for char in code)


def exchange_code(
    attempt: LoginAttempt,
    pasted: str,
    *,
    env: Mapping[str, str],
    clock: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """Redeem the authorization code the user pasted; the credential to store.

    :param pasted: the code, ``code#state`` or the redirect URL, as the user pasted it.
    :param clock: the current time in seconds, from which ``expires`` is computed once the reply
        has arrived.
    :raises OAuthLoginError: when the paste holds no code, belongs to another login (its state
        differs), the endpoint cannot be reached or refuses the code, or the reply is not JSON
        or lacks a field. The message names the provider, what failed and the remedy.
    """
    name = LOGIN_PROVIDERS.get(attempt.provider, attempt.provider)

    def fail(what: str, transient: bool = False) -> OAuthLoginError:
        remedy = "Check the connection and try /login again" if transient else "Try /login again"
        return OAuthLoginError(f"Could not log in to {name}: {what}. {remedy}; auth.json was left unchanged.")

    try:
        code, state = parse_authorization_input(pasted)
    except OAuthLoginError as exc:
        raise fail(str(exc)) from None
    if code is None:
        raise fail("no authorization code was pasted")
    if not _looks_like_code(code):
        raise fail("the pasted text is not an authorization code or a redirect URL")
    if state is not None and state != attempt.verifier:
        # The code of an older or another attempt: redeeming it would fail PKCE anyway.
        raise fail("the pasted code belongs to another login attempt (its state does not match)")
    url = token_url(attempt.provider, env)
    payload = {
        "grant_type": "authorization_code",
        "client_id": ANTHROPIC_CLIENT_ID,
        "code": code,
        "state": state or attempt.verifier,
        "redirect_uri": attempt.redirect_uri,
        "code_verifier": attempt.verifier,
    }
    status, body = post_json(url, payload, fail)
    if status >= 400:
        detail = describe_http_error(
            status, body, secrets=(code, attempt.verifier), grant="the authorization code"
        )
        raise fail(detail)
    access, refresh, expires = token_reply_fields(url, body, clock=clock, fail=fail)
    return {"type": "oauth", "access": access, "refresh": refresh, "expires": expires}
