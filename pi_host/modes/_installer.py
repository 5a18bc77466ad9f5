"""The installer of the environment pi-host runs in: its own pip, or uv aimed at its interpreter.

``pi-host install`` must change the environment the running ``pi-host`` imports from, which is
``sys.executable``'s: a virtual environment, a pipx application, a ``uv tool`` environment.
pipx environments and ordinary virtual environments have pip (``python -m pip``); ``uv tool``
and ``uv venv`` environments have none, so uv installs into them with ``--python``.
``PI_HOST_INSTALLER=pip|uv`` chooses explicitly.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Literal

__all__ = ["INSTALLER_ENV", "Installer", "InstallerError", "Snapshot", "find_installer", "snapshot"]

INSTALLER_ENV = "PI_HOST_INSTALLER"


class InstallerError(Exception):
    """No installer, or the installer failed; the message is one line for the user."""


@dataclass(frozen=True)
class Installer:
    """How to run pip's ``install``/``uninstall`` against ``python``'s environment."""

    kind: Literal["pip", "uv"]
    python: str
    uv: str | None = None

    def install_command(self, targets: list[str], *, upgrade: bool, editable: bool) -> list[str]:
        options = ["--upgrade"] if upgrade else []
        args = [arg for target in targets for arg in (["-e", target] if editable else [target])]
        if self.kind == "pip":
            return [self.python, "-m", "pip", "install", "--disable-pip-version-check", *options, *args]
        assert self.uv is not None
        return [self.uv, "pip", "install", "--python", self.python, *options, *args]

    def uninstall_command(self, distributions: list[str]) -> list[str]:
        if self.kind == "pip":
            return [
                self.python,
                "-m",
                "pip",
                "uninstall",
                "--disable-pip-version-check",
                "-y",
                *distributions,
            ]
        assert self.uv is not None
        return [self.uv, "pip", "uninstall", "--python", self.python, *distributions]

    def describe(self) -> str:
        return f"{self.python} -m pip" if self.kind == "pip" else f"uv pip --python {self.python}"

    def run(self, command: list[str], *, verbose: bool) -> None:
        """Run ``command``; its output is shown with ``verbose``, else only its error line."""
        completed = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=not verbose, text=True)
        output = "" if verbose else completed.stdout + completed.stderr
        if completed.returncode != 0:
            raise InstallerError(
                _error_line(output) or f"{command[0]} exited with status {completed.returncode}"
            )


# uv marks a failure with a multiplication sign and its causes with an arrow.
_UV_FAILURE = "\u00d7"
_UV_CAUSE = "\u2570\u2500\u25b6"


def _error_line(output: str) -> str:
    """The line of pip's or uv's output that says what went wrong."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("ERROR:", "error:")):
            return line.partition(":")[2].strip()
    for index, line in enumerate(lines):
        if line.startswith(_UV_FAILURE):  # uv's resolver: the cause follows on the next lines
            following = [part.lstrip(_UV_CAUSE + " ").strip() for part in lines[index + 1 : index + 3]]
            return " ".join([line.lstrip(_UV_FAILURE + " ").strip(), *following]).strip()
    return lines[-1] if lines else ""


def find_installer(python: str | None = None) -> Installer:
    """pip if ``python``'s environment has it, else uv (on ``PATH`` or importable), else an error."""
    python = python or sys.executable
    wanted = os.environ.get(INSTALLER_ENV, "").strip().lower()
    if wanted not in ("", "pip", "uv"):
        raise InstallerError(f"{INSTALLER_ENV} must be 'pip' or 'uv', not {wanted!r}")
    has_pip = python == sys.executable and importlib.util.find_spec("pip") is not None
    if wanted in ("", "pip") and has_pip:
        return Installer("pip", python)
    uv = shutil.which("uv")
    if uv is None and importlib.util.find_spec("uv") is not None:
        from uv import find_uv_bin  # type: ignore[import-not-found, unused-ignore]

        uv = str(find_uv_bin())
    if wanted in ("", "uv") and uv is not None:
        return Installer("uv", python, uv)
    if wanted == "pip":
        raise InstallerError(f"{INSTALLER_ENV}=pip, but pi-host's environment ({sys.prefix}) has no pip")
    raise InstallerError(
        f"pi-host's environment ({sys.prefix}) has no pip and uv is not on PATH: install uv, "
        f"or add pip with {python} -m ensurepip"
    )


Snapshot = dict[str, str]
"""Installed distributions of an environment: normalised name -> version."""

_SNAPSHOT_CODE = """
import importlib.metadata, json, re
found = {}
for dist in importlib.metadata.distributions():
    name = dist.metadata["Name"]
    if name:
        found.setdefault(re.sub(r"[-_.]+", "-", name).lower(), dist.version)
print(json.dumps(found))
"""


def snapshot(python: str | None = None) -> Snapshot:
    """What is installed in ``python``'s environment, read by a fresh interpreter (this one's
    metadata may be stale once the installer changed it)."""
    completed = subprocess.run(
        [python or sys.executable, "-c", _SNAPSHOT_CODE],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if completed.returncode != 0:
        raise InstallerError(f"cannot list the installed distributions: {_error_line(completed.stderr)}")
    data = json.loads(completed.stdout)
    return {str(name): str(version) for name, version in data.items()}
