"""Opening a session store by URI through the ``pi_session_store`` hook."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host.errors import HookError
from pi_host.session import SessionStore, SessionStoreError, uri_scheme

if TYPE_CHECKING:
    from pi_host.plugin import PluginManager

__all__ = ["open_session_store"]

_KNOWN_PLUGINS = {"postgresql": "pi-store-postgres", "postgres": "pi-store-postgres"}


def open_session_store(
    uri: str, plugin_manager: PluginManager, *, timeout: float | None = None
) -> SessionStore:
    """The store ``uri`` names, from the first plugin (in call order) that serves it.

    ``pi_session_store`` is asked like every synchronous first-result hook
    (:meth:`PluginManager.call_first`: its declared reducer, the shared error policy and
    hook timeout); what is left here is what a failure means for a store.

    :param timeout: the host's hook timeout (``Dispatcher.hook_timeout``), ``None`` for none.
    :raises SessionStoreError: for a URI no plugin serves, one a plugin finds malformed, or
        a plugin that fails; the message names the scheme or the plugin, and the remedy.
    """
    try:
        store = plugin_manager.call_first("pi_session_store", timeout=timeout, uri=uri)
    except HookError as exc:
        cause = exc.__cause__
        if isinstance(cause, SessionStoreError):
            raise cause from None  # the plugin's own word on its URI
        detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
        raise SessionStoreError(
            f'plugin "{exc.plugin}" failed to open the session store {uri!r}: {detail}'
        ) from cause
    if isinstance(store, SessionStore):
        return store
    scheme = uri_scheme(uri)
    hint = _KNOWN_PLUGINS.get(scheme)
    remedy = f"install {hint}" if hint else "install a plugin that serves it"
    raise SessionStoreError(
        f"no session store serves {scheme}: URIs ({uri!r}): {remedy}, or use sqlite:///PATH "
        "or a directory of session files"
    )
