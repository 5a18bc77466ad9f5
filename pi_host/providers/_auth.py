"""Credentials: ``auth.json`` in pi's format, runtime keys (``--api-key``) and environment variables.

``auth.json`` maps a provider to ``{"type": "api_key", "key": "..."}`` (the key may be a
``!command``, an environment variable name or a literal; see :mod:`._config_value`) or to an
OAuth credential ``{"type": "oauth", "access": ..., "refresh": ..., "expires": <ms>}`` written by
pi's ``/login``. The file is created with mode ``0600`` in a ``0700`` directory and rewritten
with ``0600`` on every change, atomically, under an advisory lock (a sidecar
``.auth.json.lock``, not the ``auth.json.lock`` directory pi's lock library creates, so the two
never block each other's lock attempts). A change is merged into the file as it is on disk at
that moment; a file that cannot be read or parsed is never overwritten. ``/login`` and
``/logout`` write with ``strict=True``, which raises :class:`AuthFileError` then and leaves
memory unchanged too.

Key resolution for a provider, first match wins (pi's order):

1. a runtime key (``--api-key``), never written to disk;
2. ``auth.json``;
3. the provider's environment variables (``ANTHROPIC_OAUTH_TOKEN``, ``ANTHROPIC_API_KEY``,
   ``OPENAI_API_KEY`` …);
4. a fallback resolver (the model registry's ``models.json`` provider keys).

An expired Anthropic OAuth credential (``now >= expires``) is refreshed before it is used, as pi
refreshes it (:mod:`._oauth`; ``PI_HOST_ANTHROPIC_TOKEN_URL`` replaces the token endpoint).
Under the lock, ``auth.json`` is read again first: when another pi-host or pi process has
refreshed meanwhile, its token is used, so a refresh token is spent once. Otherwise the token
endpoint is asked, and the new ``access``, ``refresh`` and ``expires`` are written back
(``0600``, atomically) before the key is returned. A refresh that fails (network, HTTP error,
a rejected refresh token, a malformed reply) leaves ``auth.json`` as it was and resolves to no
key from ``auth.json`` (the environment is tried next); :meth:`AuthStorage.credential_error`
says why, naming the provider and the remedy (``/login``), and the model registry makes it
the request's error. The same refresh token is not tried again for a few seconds, so one
request, which resolves its key twice, asks the endpoint once. Expired OAuth credentials of
other providers are not refreshed: they resolve to no key with such an error.

pi's own lock (the ``auth.json.lock`` directory) is not taken, so a pi and a pi-host refreshing
in the same instant can still both redeem the refresh token; the loser reports the failure, and
its next attempt picks up the winner's token from the file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ._config_value import resolve_config_value
from ._env_keys import env_api_key, env_api_key_names
from ._paths import agent_dir

__all__ = ["AuthFileError", "AuthStatus", "AuthStorage", "write_private_file"]

Credential = dict[str, Any]

#: After a failed refresh, the same refresh token is not sent again for this long: a request
#: resolves its key twice (the agent, then the provider), and a second attempt follows within seconds.
_REFRESH_BACKOFF_S = 5.0


class AuthFileError(Exception):
    """``auth.json`` could not be read, parsed or written; the message names the file and the fix."""


@dataclass(frozen=True)
class AuthStatus:
    """Where a provider's credential comes from, without revealing it (pi's ``getAuthStatus``)."""

    configured: bool
    source: (
        Literal["stored", "runtime", "environment", "fallback", "models_json_command", "models_json_key"]
        | None
    ) = None
    label: str | None = None


def write_private_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable and writable by the owner only (``0600``)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.chmod(path, 0o600)


class AuthStorage:
    """Credentials from ``auth.json`` (or memory), runtime keys and the environment.

    :param path: the ``auth.json`` file; ``None`` keeps credentials in memory only.
    :param env: the environment to read keys from (``os.environ`` by default).
    """

    def __init__(self, path: Path | None, *, env: Mapping[str, str] | None = None) -> None:
        self.path = path
        self._env = env
        self._data: dict[str, Credential] = {}
        self._runtime: dict[str, str] = {}
        self._fallback: Callable[[str], str | None] | None = None
        self.load_error: str | None = None
        self._errors: list[str] = []
        # Why a provider's stored credential gave no key on its last resolution.
        self._credential_errors: dict[str, str] = {}
        # provider -> (refresh token, time.monotonic()) of the last failed refresh.
        self._failed_refreshes: dict[str, tuple[str, float]] = {}
        # Refreshes of one storage run one at a time, also in memory (no file lock there), so
        # that two threads never redeem one refresh token twice.
        self._refresh_lock = threading.Lock()
        self.reload()

    @classmethod
    def default(cls, *, env: Mapping[str, str] | None = None) -> AuthStorage:
        """``auth.json`` in the agent directory."""
        return cls(agent_dir(env) / "auth.json", env=env)

    @classmethod
    def in_memory(
        cls, data: Mapping[str, Credential] | None = None, *, env: Mapping[str, str] | None = None
    ) -> AuthStorage:
        """Credentials that never touch the disk (tests, embedding)."""
        storage = cls(None, env=env)
        storage._data = {provider: dict(credential) for provider, credential in (data or {}).items()}
        return storage

    @property
    def env(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    # -- file ------------------------------------------------------------------------------

    def reload(self) -> None:
        """Re-read ``auth.json``. A file that cannot be read is reported and never overwritten."""
        if self.path is None:
            return
        self._credential_errors.clear()
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self._data = {}
            self.load_error = None
            return
        except OSError as exc:
            self._fail_load(f"Cannot read {self.path}: {exc.strerror or exc}")
            return
        try:
            data = json.loads(text) if text.strip() else {}
        except ValueError as exc:
            self._fail_load(f"{self.path} is not valid JSON ({exc}); fix or delete it")
            return
        if not isinstance(data, dict):
            self._fail_load(f"{self.path} must hold a JSON object mapping providers to credentials")
            return
        self._data = {key: value for key, value in data.items() if isinstance(value, dict)}
        self.load_error = None

    def _fail_load(self, message: str) -> None:
        self.load_error = message
        self._errors.append(message)

    def drain_errors(self) -> list[str]:
        """Errors recorded since the last call (load failures, expired OAuth tokens, refreshes)."""
        errors, self._errors = self._errors, []
        return errors

    def credential_error(self, provider: str) -> str | None:
        """Why ``provider``'s stored credential resolved to no key the last time, if it did.

        Set by an expired OAuth credential that could not be refreshed; cleared when a key
        resolves again or the credential changes.
        """
        return self._credential_errors.get(provider)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock_path = self.path.with_name(f".{self.path.name}.lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                import fcntl
            except ImportError:  # Windows: no advisory locks; writes stay atomic
                yield
                return
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _read_disk(self) -> dict[str, Any]:
        """``auth.json`` as it is now, ``{}`` when it does not exist.

        :raises ValueError: when it does not hold a JSON object.
        :raises OSError: when it cannot be read.
        """
        assert self.path is not None
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        data = json.loads(text) if text.strip() else {}
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data

    def _persist(self, provider: str, credential: Credential | None) -> str | None:
        """Write ``provider``'s change into ``auth.json`` as it is on disk now.

        :returns: why the file was not written (it could not be read or parsed), else ``None``.
        :raises OSError: when writing fails.
        """
        if self.path is None:
            return None
        if self.load_error is not None:
            return self.load_error
        with self._locked():
            try:
                current = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            except FileNotFoundError:
                current = {}
            except OSError as exc:
                return self._record(f"Cannot read {self.path}: {exc.strerror or exc}; not overwriting it")
            except ValueError:
                return self._record(
                    f"{self.path} changed on disk and is no longer valid JSON; not overwriting it"
                )
            if not isinstance(current, dict):
                return self._record(
                    f"{self.path} changed on disk and is no longer a JSON object; not overwriting it"
                )
            if credential is None:
                current.pop(provider, None)
            else:
                current[provider] = credential
            write_private_file(self.path, json.dumps(current, indent=2, ensure_ascii=False))
        return None

    def _record(self, message: str) -> str:
        self._fail_load(message)
        return message

    # -- credentials -----------------------------------------------------------------------

    def get(self, provider: str) -> Credential | None:
        """The stored credential for ``provider``."""
        return self._data.get(provider)

    def set(self, provider: str, credential: Credential, *, strict: bool = False) -> None:
        """Store ``credential`` (``{"type": "api_key", "key": ...}`` or OAuth) and write the file.

        :param strict: raise instead of recording the error (:meth:`drain_errors`) when
            ``auth.json`` cannot be written, and change nothing in memory then (``/login``).
        :raises AuthFileError: with ``strict``, when ``auth.json`` cannot be read, parsed or
            written; it is left as it was.
        """
        if strict:
            self._persist_strictly(provider, dict(credential))
        self._data[provider] = dict(credential)
        self._credential_errors.pop(provider, None)
        if not strict:
            self._persist(provider, dict(credential))

    def set_api_key(self, provider: str, key: str) -> None:
        """Store an API key for ``provider``."""
        self.set(provider, {"type": "api_key", "key": key})

    def remove(self, provider: str, *, strict: bool = False) -> None:
        """Forget the stored credential of ``provider``.

        :param strict: as for :meth:`set` (``/logout``).
        :raises AuthFileError: with ``strict``, when ``auth.json`` cannot be updated.
        """
        if strict:
            self._persist_strictly(provider, None)
        self._data.pop(provider, None)
        self._credential_errors.pop(provider, None)
        if not strict:
            self._persist(provider, None)

    def _persist_strictly(self, provider: str, credential: Credential | None) -> None:
        try:
            error = self._persist(provider, credential)
        except OSError as exc:
            raise AuthFileError(
                f"Cannot write {self.path}: {exc.strerror or exc}; it was left as it was"
            ) from exc
        if error is not None:
            if error in self._errors:  # the caller reports it; it is not news for drain_errors
                self._errors.remove(error)
            raise AuthFileError(error)

    def providers(self) -> list[str]:
        """Providers with a stored credential."""
        return list(self._data)

    def has(self, provider: str) -> bool:
        return provider in self._data

    def set_runtime_api_key(self, provider: str, key: str) -> None:
        """A key for this process only (the ``--api-key`` flag); it wins over everything else."""
        self._runtime[provider] = key

    def remove_runtime_api_key(self, provider: str) -> None:
        self._runtime.pop(provider, None)

    def set_fallback_resolver(self, resolver: Callable[[str], str | None] | None) -> None:
        """Consulted last, for providers whose key lives in ``models.json``."""
        self._fallback = resolver

    def has_auth(self, provider: str) -> bool:
        """Whether some credential is configured, without running commands or checking expiry."""
        return bool(
            provider in self._runtime
            or self._data.get(provider)
            or env_api_key(provider, self.env)
            or (self._fallback is not None and self._fallback(provider))
        )

    def status(self, provider: str) -> AuthStatus:
        """Where ``provider``'s credential would come from."""
        if self._data.get(provider):
            return AuthStatus(configured=True, source="stored")
        if provider in self._runtime:
            return AuthStatus(configured=False, source="runtime", label="--api-key")
        names = env_api_key_names(provider, self.env)
        if names:
            return AuthStatus(configured=False, source="environment", label=names[0])
        if self._fallback is not None and self._fallback(provider):
            return AuthStatus(configured=False, source="fallback", label="custom provider config")
        return AuthStatus(configured=False)

    def api_key(self, provider: str, *, include_fallback: bool = True) -> str | None:
        """Resolve ``provider``'s key (see the module docstring for the order).

        May run an ``auth.json`` ``!command`` (once per process); call it off the event loop
        when that matters.
        """
        runtime = self._runtime.get(provider)
        if runtime:
            return runtime
        credential = self._data.get(provider)
        if credential is not None:
            kind = credential.get("type")
            if kind == "api_key" and isinstance(credential.get("key"), str):
                resolved = resolve_config_value(credential["key"], env=self.env, cache_commands=True)
                if resolved:
                    return resolved
            elif kind == "oauth":
                token = self._oauth_access(provider, credential)
                if token:
                    return token
        from_env = env_api_key(provider, self.env)
        if from_env:
            return from_env
        if include_fallback and self._fallback is not None:
            return self._fallback(provider)
        return None

    def oauth_refresh_due(self, provider: str) -> bool:
        """Whether resolving ``provider``'s key would refresh an expired OAuth token (network I/O)."""
        credential = self._data.get(provider)
        return (
            provider not in self._runtime
            and credential is not None
            and credential.get("type") == "oauth"
            and _has_access(credential)
            and _expired(credential)
        )

    def _oauth_access(self, provider: str, credential: Credential) -> str | None:
        if not _has_access(credential):
            return None
        if _expired(credential):
            return self._refreshed_access(provider)
        self._credential_errors.pop(provider, None)
        return str(credential["access"])

    def _refreshed_access(self, provider: str) -> str | None:
        """Refresh ``provider``'s expired OAuth credential; the new access token, or ``None``.

        Blocks on the file lock and the network (up to the endpoint's timeout). On failure the
        error is recorded (:meth:`credential_error`, :meth:`drain_errors`) and ``auth.json`` is
        not touched.
        """
        from ._oauth import OAuthRefreshError, can_refresh, refresh_credential

        if not can_refresh(provider):
            self._no_key(
                provider, f'The OAuth token for "{provider}" expired; log in again (/login) to refresh it'
            )
            return None
        with self._refresh_lock, ExitStack() as locked:
            on_disk: dict[str, Any] | None = None
            if self.path is not None:
                try:
                    locked.enter_context(self._locked())
                    on_disk = self._read_disk()
                except (OSError, ValueError) as exc:
                    # Redeeming the refresh token without a file to save the new one in would
                    # lose both: leave everything as it is.
                    self._no_key(
                        provider,
                        f'Could not refresh the OAuth token for "{provider}": {self.path} cannot be '
                        f"locked and read ({exc}); fix or delete the file, then log in again with "
                        "/login.",
                    )
                    return None
                stored = on_disk.get(provider)
                if isinstance(stored, dict):
                    self._data[provider] = stored
                else:  # logged out meanwhile
                    self._data.pop(provider, None)
            credential = self._data.get(provider)
            if credential is None or credential.get("type") != "oauth" or not _has_access(credential):
                # Logged out, or replaced by a key, meanwhile: the next resolution reads that.
                self._credential_errors.pop(provider, None)
                return None
            if not _expired(credential):  # refreshed meanwhile, by another process or thread
                self._failed_refreshes.pop(provider, None)
                self._credential_errors.pop(provider, None)
                return str(credential["access"])
            refresh = credential.get("refresh")
            failed = self._failed_refreshes.get(provider)
            if (
                failed is not None
                and failed[0] == refresh
                and time.monotonic() - failed[1] < _REFRESH_BACKOFF_S
                and provider in self._credential_errors
            ):
                return None
            try:
                refreshed = refresh_credential(provider, credential, env=self.env)
            except OAuthRefreshError as exc:
                if isinstance(refresh, str):
                    self._failed_refreshes[provider] = (refresh, time.monotonic())
                self._no_key(provider, str(exc))
                return None
            self._failed_refreshes.pop(provider, None)
            self._credential_errors.pop(provider, None)
            self._data[provider] = refreshed
            if self.path is not None and on_disk is not None:
                try:
                    write_private_file(
                        self.path, json.dumps({**on_disk, provider: refreshed}, indent=2, ensure_ascii=False)
                    )
                except OSError as exc:
                    # The old refresh token is spent: this process keeps the new credential in
                    # memory, and the next process will need a login.
                    self._errors.append(
                        f'Refreshed the OAuth token for "{provider}" but could not save it to '
                        f"{self.path} ({exc.strerror or exc}); log in again with /login next time."
                    )
            return str(refreshed["access"])

    def _no_key(self, provider: str, message: str) -> None:
        self._credential_errors[provider] = message
        self._errors.append(message)


def _has_access(credential: Credential) -> bool:
    access = credential.get("access")
    return isinstance(access, str) and bool(access)


def _expired(credential: Credential) -> bool:
    """pi's test: expired from the ``expires`` millisecond on (a missing ``expires`` never expires)."""
    expires = credential.get("expires")
    return isinstance(expires, int | float) and time.time() * 1000 >= expires
