"""``/login`` and ``/logout``: the dialogs around the session's credential methods.

``/login`` follows pi's OAuth login: pick a provider, open (and show) its authorize URL, paste
back the code or the redirect URL, and the session redeems it and stores the credential in
``auth.json``. ``/logout`` removes one stored credential. Every failure ends in one error line;
``auth.json`` is only written once a credential is in hand.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.console import Group
from rich.style import Style
from rich.text import Text

if TYPE_CHECKING:
    from ._app import InteractiveApp

__all__ = ["login", "logout", "open_browser"]

# Text-mode browsers webbrowser falls back to: they would take over the terminal the UI draws on.
_CONSOLE_BROWSERS = frozenset({"www-browser", "links", "elinks", "lynx", "w3m"})


def open_browser(url: str, env: Mapping[str, str] | None = None) -> bool:
    """Open ``url`` with :mod:`webbrowser` in the background when a graphical browser may exist.

    On Linux without ``DISPLAY`` / ``WAYLAND_DISPLAY`` (an SSH session, a container) nothing is
    opened unless ``BROWSER`` names a browser. Launching never blocks the UI: a ``BROWSER``
    command may run until its window closes.

    :returns: whether a browser is being started (the user is told to open the URL otherwise).
    """
    import webbrowser

    env = os.environ if env is None else env
    chosen = bool(env.get("BROWSER"))
    if sys.platform.startswith("linux") and not (chosen or env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return False
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    if not chosen and getattr(browser, "name", None) in _CONSOLE_BROWSERS:
        return False

    def launch() -> None:
        try:
            browser.open(url)
        except Exception:  # the URL is on screen; a browser that fails to start changes nothing
            pass

    threading.Thread(target=launch, name="pi-host-open-browser", daemon=True).start()
    return True


async def login(app: InteractiveApp) -> None:
    """Run ``/login``: provider picker, authorize URL, pasted code, exchange, confirmation."""
    from pi_host.providers._oauth_login import OAuthLoginError, start_login

    session = app.session
    try:
        providers = list(session.login_providers())
    except Exception as exc:
        app.error(f"Cannot log in: {exc}")
        return
    if not providers:
        app.notice("No providers to log in to")
        return
    labels = [f"{p.name}  ✓ logged in" if p.logged_in else p.name for p in providers]
    index = await app.select("Select a provider to log in to", labels)
    if index is None:
        return
    provider = providers[index]
    attempt = start_login(provider.id)
    opened = open_browser(attempt.url)
    click = "Cmd+click" if sys.platform == "darwin" else "Ctrl+click"
    app.add_static(
        Group(
            Text(f"Log in to {provider.name}", style="bold"),
            Text(
                "A browser window should open. If it does not, open this URL:"
                if opened
                else "Open this URL in a browser:",
                style="dim",
            ),
            # A terminal hyperlink, as pi shows it: the URL stays one link however it wraps.
            Text(attempt.url, style=Style(color="cyan", link=attempt.url)),
            Text(
                f"({click} the URL to open it.) Approve the login, then paste the code it shows, "
                "or the address the browser ends on, below.",
                style="dim",
            ),
        )
    )
    pasted = await app.input("Paste the authorization code or the redirect URL", attempt.redirect_uri)
    if pasted is None:
        app.notice("Login cancelled")
        return
    app.notice("Exchanging the authorization code for tokens...")
    try:
        result = await session.login(attempt, pasted)
    except OAuthLoginError as exc:
        app.error(str(exc))
        return
    except Exception as exc:
        app.error(f"Login to {provider.name} failed: {exc}")
        return
    done = f"Logged in to {provider.name}."
    if result.model is not None:
        done += f" Selected {result.model}."
    done += f" Credentials saved to {result.saved_to}" if result.saved_to else " Credentials kept in memory"
    app.notice(done)
    if result.warning:
        app.warning(result.warning)
    app.invalidate()  # the footer shows the model, which may have changed


async def logout(app: InteractiveApp) -> None:
    """Run ``/logout``: pick a stored credential and remove it from ``auth.json``."""
    session = app.session
    try:
        credentials = list(session.stored_credentials())
    except Exception as exc:
        app.error(f"Cannot log out: {exc}")
        return
    if not credentials:
        app.notice(
            "No stored credentials to remove. /logout only removes credentials saved in auth.json; "
            "environment variables and models.json are unchanged."
        )
        return
    labels = [
        f"{c.name}  ({'subscription' if c.kind == 'oauth' else c.kind.replace('_', ' ')})"
        for c in credentials
    ]
    index = await app.select("Select a provider to log out of", labels)
    if index is None:
        return
    credential = credentials[index]
    try:
        await session.logout(credential.provider)
    except Exception as exc:
        app.error(f"Logout failed: {exc}")
        return
    if credential.kind == "oauth":
        app.notice(f"Logged out of {credential.name}")
    else:
        app.notice(
            f"Removed the stored credential for {credential.name}. "
            "Environment variables and models.json are unchanged."
        )
    app.invalidate()
