"""The public API is explicit, importable, and cheap to import."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import pi_host
from pi_host._lazy import lazy_exports


def test_all_lists_every_export_and_each_resolves() -> None:
    exported = set(pi_host._EXPORTS) | {"__version__"}
    assert set(pi_host.__all__) == exported
    assert pi_host.__all__ == sorted(pi_host.__all__)
    for name in pi_host.__all__:
        assert getattr(pi_host, name) is not None


def test_unknown_attribute_raises_attribute_error() -> None:
    try:
        pi_host.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_pi_host_loads_no_provider_sdk_or_pydantic() -> None:
    code = (
        "import sys, pi_host; "
        "print(sorted(m for m in ('anthropic', 'httpx', 'pydantic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_lazy_exports_cache_the_name_and_refuse_unknown_ones() -> None:
    getattr_, dir_ = lazy_exports("pi_host.session", {"SessionManager": "_store"}, ["SessionManager"])
    assert getattr_("SessionManager") is importlib.import_module("pi_host.session._store").SessionManager
    assert vars(sys.modules["pi_host.session"])["SessionManager"] is getattr_("SessionManager")
    assert dir_() == ["SessionManager"]
    with pytest.raises(AttributeError, match=r"module 'pi_host\.session' has no attribute 'Nope'"):
        getattr_("Nope")
