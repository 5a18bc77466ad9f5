"""Opening a session store by URI through the ``pi_session_store`` hook."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_host.session import SessionStore, SessionStoreError, uri_scheme

if TYPE_CHECKING:
    from pi_host.plugin import PluginManager

__all__ = ["open_session_store"]

_KNOWN_PLUGINS = {"postgresql": "pi-store-postgres", "postgres": "pi-store-postgres"}


def open_session_store(uri: str, plugin_manager: PluginManager) -> SessionStore:
    """The store ``uri`` names, from the first plugin (in call order) that serves it.

    :raises SessionStoreError: for a URI no plugin serves, one a plugin finds malformed, or
        a plugin that fails; the message names the scheme or the plugin, and the remedy.
    """
    caller = getattr(plugin_manager.hook, "pi_session_store", None)
    impls = caller.get_hookimpls() if caller is not None else []
    for impl in reversed(impls):
        try:
            store = impl.function(uri=uri)
        except SessionStoreError:
            raise
        except Exception as exc:
            raise SessionStoreError(
                f'plugin "{impl.plugin_name}" failed to open the session store {uri!r}: '
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if store is None:
            continue
        if not isinstance(store, SessionStore):
            raise SessionStoreError(
                f'plugin "{impl.plugin_name}" returned {type(store).__name__} for {uri!r}, '
                "which is not a pi_host.SessionStore"
            )
        return store
    scheme = uri_scheme(uri)
    hint = _KNOWN_PLUGINS.get(scheme)
    remedy = f"install {hint}" if hint else "install a plugin that serves it"
    raise SessionStoreError(
        f"no session store serves {scheme}: URIs ({uri!r}): {remedy}, or use sqlite:///PATH "
        "or a directory of session files"
    )
