"""The testing kit's checks of a plugin's surface: entry point, hooks, imports."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pi_guard
import pytest

from pi_host import hookimpl
from pi_host.testing import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only


def test_entry_point_resolves_to_the_plugin() -> None:
    point = assert_entry_point("guard", pi_guard, distribution="pi_guard")
    assert point.value == "pi_guard"


def test_entry_point_problems_name_the_culprit() -> None:
    with pytest.raises(AssertionError, match=r"found 0: none; declare it under"):
        assert_entry_point("no-such-plugin", pi_guard)
    with pytest.raises(AssertionError, match=r"entry point 'guard' is 'pi_guard', expected 'pytest'"):
        assert_entry_point("guard", pytest)
    with pytest.raises(AssertionError, match=r"declared by 'pi-guard', expected 'pi-other'"):
        assert_entry_point("guard", pi_guard, distribution="pi-other")


class _Plugin:
    @hookimpl
    def pi_session_start(self) -> None:
        return None


class _Misspelt:
    @hookimpl
    def pi_tool_cal(self) -> None:
        return None


def test_hooks_are_checked_against_the_specs() -> None:
    manager = assert_hooks_match_specs(_Plugin(), {"pi_session_start"}, name="mine")
    assert manager.get_plugin("mine") is not None
    with pytest.raises(
        AssertionError, match=r"missing: \['pi_tool_call'\], unexpected: \['pi_session_start'\]"
    ):
        assert_hooks_match_specs(_Plugin(), ["pi_tool_call"])
    with pytest.raises(AssertionError, match=r'did you mean "pi_tool_call"'):
        assert_hooks_match_specs(_Misspelt())


def _package(root: Path, files: dict[str, str]) -> ModuleType:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    package = ModuleType("fake_plugin")
    package.__file__ = str(root / "__init__.py")
    package.__path__ = [str(root)]
    return package


def test_private_imports_are_reported_with_file_and_line(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "from pi_host import Tool, hookimpl\nfrom pi_host.hookspecs import Cancel\n",
            "sub/_impl.py": (
                "import pi_host.agent._tools\nfrom pi_host.agent import _loop\nfrom ._x import y\n"
            ),
        },
    )
    with pytest.raises(AssertionError) as raised:
        assert_public_imports_only(package)
    message = str(raised.value)
    assert "sub/_impl.py:1: pi_host.agent._tools" in message
    assert "sub/_impl.py:2: pi_host.agent._loop" in message
    assert "__init__.py" not in message


def test_top_level_only_refuses_public_subpackages(tmp_path: Path) -> None:
    package = _package(tmp_path, {"__init__.py": "from pi_host.hookspecs import Cancel\n"})
    assert_public_imports_only(package)
    with pytest.raises(AssertionError, match=r"__init__.py:1: pi_host.hookspecs"):
        assert_public_imports_only(package, top_level_only=True)
