"""Refreshing an expired OAuth credential of ``auth.json`` at its provider's token endpoint.

Only Anthropic (Claude Pro/Max, the credential pi's ``/login`` stores under ``"anthropic"``) can
be refreshed. The request is pi's: a JSON ``POST`` of a ``refresh_token`` grant with pi's
public client id. The reply's ``access_token``, ``refresh_token`` and ``expires_in`` become the
new credential (a reply without ``refresh_token`` keeps the old one, as RFC 6749 allows), whose
``expires`` (epoch milliseconds) is set five minutes before the token really expires, as pi sets
it, so that a request never starts with a token about to lapse.

The endpoint is Anthropic's unless ``PI_HOST_ANTHROPIC_TOKEN_URL`` names another one (a local
server in tests, a relay where the default host is unreachable).

:mod:`._oauth_login` redeems a login's authorization code at the same endpoint with the same
helpers (:func:`post_json`, :func:`token_reply_fields`, :func:`describe_http_error`).

This module only talks HTTP; :class:`._auth.AuthStorage` decides when to refresh, serialises
refreshes and writes the result. It is imported when a credential has expired, never on a run
whose token is still valid.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "ANTHROPIC_CLIENT_ID",
    "TOKEN_URL_VARIABLES",
    "OAuthRefreshError",
    "can_refresh",
    "describe_http_error",
    "post_json",
    "refresh_credential",
    "token_reply_fields",
    "token_url",
]

#: The environment variable that replaces a provider's token endpoint.
TOKEN_URL_VARIABLES = {"anthropic": "PI_HOST_ANTHROPIC_TOKEN_URL"}

_ANTHROPIC_TOKEN_URL = "https://platform.claude.com/v1/oauth/token"
# pi's public OAuth client id: the refresh token was issued to it, so only it can redeem it.
ANTHROPIC_CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
_EARLY_EXPIRY_MS = 5 * 60 * 1000
_TIMEOUT_S = 30.0
_MAX_DETAIL = 300


class OAuthRefreshError(Exception):
    """A refresh that did not produce a new credential; the message is what the user reads."""


def can_refresh(provider: str) -> bool:
    """Whether pi-host knows how to refresh ``provider``'s OAuth credential."""
    return provider in TOKEN_URL_VARIABLES


def token_url(provider: str, env: Mapping[str, str]) -> str:
    """``provider``'s token endpoint: its environment variable when set, else the real one."""
    return env.get(TOKEN_URL_VARIABLES[provider]) or _ANTHROPIC_TOKEN_URL


def refresh_credential(
    provider: str,
    credential: Mapping[str, Any],
    *,
    env: Mapping[str, str],
    clock: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """Redeem ``credential``'s refresh token and return the new credential.

    The new credential keeps the fields of the old one it does not replace (``access``,
    ``refresh``, ``expires``). Nothing is written here; the caller persists the result.

    :param clock: the current time in seconds, from which ``expires`` is computed once the reply
        has arrived.
    :raises OAuthRefreshError: when there is no refresh token, the endpoint cannot be reached or
        answers with an error (a rejected refresh token among them), or the reply is not JSON
        or lacks a field. The message names the provider, what failed and the remedy.
    """
    refresh = credential.get("refresh")
    if not isinstance(refresh, str) or not refresh:
        raise _failure(provider, "the stored credential has no refresh token")
    url = token_url(provider, env)
    payload = {"grant_type": "refresh_token", "client_id": ANTHROPIC_CLIENT_ID, "refresh_token": refresh}

    def fail(what: str, transient: bool) -> Exception:
        return _failure(provider, what, transient=transient)

    status, body = post_json(url, payload, fail)
    if status >= 400:
        raise fail(describe_http_error(status, body, secrets=(refresh,), grant="the refresh token"), False)
    # RFC 6749 §6 lets the server keep the refresh token it has: then so do we.
    access, refreshed, expires = token_reply_fields(url, body, clock=clock, fail=fail, refresh=refresh)
    return {**credential, "type": "oauth", "access": access, "refresh": refreshed, "expires": expires}


def token_reply_fields(
    url: str,
    body: str,
    *,
    clock: Callable[[], float],
    fail: Callable[[str, bool], Exception],
    refresh: str | None = None,
) -> tuple[str, str, int]:
    """``(access, refresh, expires)`` from a successful token endpoint reply.

    ``expires`` is in epoch milliseconds, five minutes early (pi's arithmetic), computed from
    ``clock`` read now, after the reply arrived.

    :param refresh: the refresh token to keep when the reply has none; ``None`` makes
        ``refresh_token`` required.
    :param fail: builds the exception to raise from what went wrong (and whether trying again may help).
    :raises Exception: ``fail``'s, when the reply is not JSON or lacks a field.
    """
    try:
        reply = json.loads(body)
    except ValueError:
        raise fail(f"the reply of the token endpoint {url} is not JSON", False) from None
    if not isinstance(reply, dict):
        raise fail(f"the reply of the token endpoint {url} is not a JSON object", False)
    access, new_refresh, expires_in = (
        reply.get("access_token"),
        reply.get("refresh_token"),
        reply.get("expires_in"),
    )
    missing = [
        name
        for name, ok in (
            ("access_token", isinstance(access, str) and access),
            (
                "refresh_token",
                (isinstance(new_refresh, str) and new_refresh)
                or (new_refresh is None and refresh is not None),
            ),
            (
                "expires_in",
                isinstance(expires_in, int | float) and not isinstance(expires_in, bool) and expires_in > 0,
            ),
        )
        if not ok
    ]
    if missing:
        # Never quote the reply: it may hold a token.
        raise fail(f"the reply of the token endpoint {url} lacks a valid {', '.join(missing)}", False)
    assert isinstance(access, str) and isinstance(expires_in, int | float)
    expires = int(clock() * 1000 + expires_in * 1000 - _EARLY_EXPIRY_MS)
    kept = new_refresh if isinstance(new_refresh, str) else refresh
    assert kept is not None
    return access, kept, expires


def post_json(
    url: str, payload: Mapping[str, str], fail: Callable[[str, bool], Exception]
) -> tuple[int, str]:
    """``POST`` ``payload`` as JSON to a token endpoint; the reply's status and text.

    :raises Exception: ``fail``'s (with ``transient=True``) when the endpoint cannot be reached.
    """
    import httpx

    from ._http import describe_transport_error, tls_context, user_agent

    headers = {"accept": "application/json", "user-agent": user_agent()}
    try:
        with httpx.Client(
            verify=tls_context() if url.startswith("https:") else False, timeout=_TIMEOUT_S
        ) as client:
            response = client.post(url, json=payload, headers=headers)
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
        detail = describe_transport_error(exc, streaming=False)
        raise fail(f"the token endpoint {url} could not be reached ({detail})", True) from exc
    return response.status_code, response.text


def describe_http_error(status: int, body: str, *, secrets: tuple[str, ...], grant: str) -> str:
    """What an error reply says: OAuth's ``error`` / ``error_description`` when present.

    :param secrets: values redacted from the quoted reply.
    :param grant: what was sent to be redeemed ("the refresh token"), named when it is refused.
    """
    from ._errors import redact

    text = body.strip()
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = None
    detail = text
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), str | dict):
        error = parsed["error"]
        if isinstance(error, dict):  # Anthropic's API error shape
            error = error.get("message") or error.get("type") or json.dumps(error)
        description = parsed.get("error_description")
        detail = f"{error}: {description}" if isinstance(description, str) and description else str(error)
    detail = redact(detail, *secrets)[:_MAX_DETAIL] if detail else "no body"
    # 400 and 401 are how an OAuth server refuses a grant (invalid_grant: spent, revoked, expired).
    if status in (400, 401):
        return f"the token endpoint rejected {grant} (HTTP {status}: {detail})"
    return f"the token endpoint answered HTTP {status} ({detail})"


def _failure(provider: str, what: str, *, transient: bool = False) -> OAuthRefreshError:
    remedy = (
        "Check the connection and try again, or log in again with /login"
        if transient
        else "Log in again with /login"
    )
    return OAuthRefreshError(
        f'Could not refresh the OAuth token for "{provider}": {what}. {remedy}; auth.json was left unchanged.'
    )
