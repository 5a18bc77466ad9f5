"""Which installer ``pi-host install`` uses, what it runs, and how it words failures (in-process)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pi_host.modes import _install_cmd
from pi_host.modes._installer import Installer, InstallerError, _error_line, find_installer


def test_the_environment_s_own_pip_wins_and_uv_targets_pi_host_s_interpreter(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PI_HOST_INSTALLER", raising=False)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object() if name == "pip" else None)
    assert find_installer() == Installer("pip", sys.executable)

    uv = tmp_path / "uv"
    uv.write_text("#!/bin/sh\n")
    uv.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    chosen = find_installer()
    assert chosen == Installer("uv", sys.executable, str(uv))
    assert chosen.install_command(["./p"], upgrade=True, editable=True) == [
        str(uv), "pip", "install", "--python", sys.executable, "--upgrade", "-e", "./p",
    ]  # fmt: skip
    assert chosen.uninstall_command(["pi-x"]) == [
        str(uv),
        "pip",
        "uninstall",
        "--python",
        sys.executable,
        "pi-x",
    ]


def test_no_installer_and_a_bad_choice_say_what_to_do(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    monkeypatch.delenv("PI_HOST_INSTALLER", raising=False)
    with pytest.raises(InstallerError, match="has no pip and uv is not on PATH: install uv, or add pip with"):
        find_installer()
    monkeypatch.setenv("PI_HOST_INSTALLER", "conda")
    with pytest.raises(InstallerError, match="PI_HOST_INSTALLER must be 'pip' or 'uv', not 'conda'"):
        find_installer()


def test_pip_commands_name_the_interpreter() -> None:
    pip = Installer("pip", "/env/bin/python")
    assert pip.install_command(["pi-x"], upgrade=False, editable=False) == [
        "/env/bin/python", "-m", "pip", "install", "--disable-pip-version-check", "pi-x",
    ]  # fmt: skip
    assert pip.uninstall_command(["pi-x"])[-2:] == ["-y", "pi-x"]


@pytest.mark.parametrize(
    ("output", "line"),
    [
        (
            "Collecting x\nERROR: Could not find a version that satisfies the requirement x\nERROR: No match",
            "Could not find a version that satisfies the requirement x",
        ),
        (
            "  \u00d7 No solution found when resolving dependencies:\n"
            "  \u2570\u2500\u25b6 Because pi-x was not found in the package registry\n",
            "No solution found when resolving dependencies: "
            "Because pi-x was not found in the package registry",
        ),
        ("error: Failed to parse: `x`\n", "Failed to parse: `x`"),
        ("", ""),
    ],
)
def test_the_installer_s_error_becomes_one_line(output: str, line: str) -> None:
    assert _error_line(output) == line


@pytest.mark.parametrize(
    ("argument", "editable", "message"),
    [
        ("git+https://example.org/x.git", True, "--editable installs a local folder"),
        ("pi-x", True, "--editable needs a local folder, not the package name 'pi-x'"),
        ("!!", False, "is not a package name, a path or a git+URL"),
    ],
)
def test_requests_refused_before_installing(argument: str, editable: bool, message: str) -> None:
    with pytest.raises(_install_cmd._Refused, match=re.escape(message)):
        _install_cmd._classify(argument, editable=editable)


def test_a_wheel_is_checked_for_plugin_entry_points(tmp_path: Path) -> None:
    import zipfile

    wheel = tmp_path / "pi_x-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pi_x-1.0.dist-info/entry_points.txt", "[console_scripts]\nx = pi_x:main\n")
    with pytest.raises(_install_cmd._Refused, match="is not a pi-host plugin"):
        _install_cmd._classify(str(wheel), editable=False)
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pi_x-1.0.dist-info/entry_points.txt", "[pi_host.plugins]\nx = pi_x\n")
    target = _install_cmd._classify(str(wheel), editable=False)
    assert (target.distribution, target.local) == ("pi-x", True)


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert _install_cmd.run_install([]) == 2
    assert _install_cmd.run_install(["a", "b"]) == 2
    assert _install_cmd.run_uninstall(["--force", "x"]) == 2
    assert capsys.readouterr().err.count("Usage: pi-host") == 3
