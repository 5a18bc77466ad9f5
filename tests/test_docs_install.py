"""README.md, docs/getting-started.md and the plugin tutorial, followed as a newcomer would.

Every install command of those pages runs as written, in order, with plain pip (no uv
substituted), in a fresh ``HOME`` with a clone of this repository: README's one-liner,
Getting started's wheel folder, its first run on the scripted model, then the tutorial from
an empty folder to a tested plugin package.

The only stand-in is the package index: a local one (``PIP_INDEX_URL=file://...``) holding
the third-party distributions at the versions the suite runs with, packed from the suite's
own environment (:mod:`tests.wheelhouse`), so nothing is downloaded. pi-host's own
distributions are *not* in it, so the pages' commands must find them the way they say.

Marked blocks: ``<!-- install: clone -->`` (run in the clone), ``<!-- tutorial -->`` and
``<!-- tutorial: file PATH -->`` (the tutorial's workspace), and Getting started's
``<!-- test: file -->`` / ``<!-- test: console -->`` examples.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.console_sessions import console_commands, expect_lines
from tests.install_support import ROOT, UV, Sandbox, copy_repository
from tests.wheelhouse import simple_index

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1500),
    pytest.mark.skipif(UV is None, reason="Getting started's `uv tool install` needs uv"),
]

README = ROOT / "README.md"
GETTING_STARTED = ROOT / "docs" / "getting-started.md"
TUTORIAL = ROOT / "docs" / "plugins" / "tutorial.md"

_MARKER = re.compile(r"^<!--\s*(install|tutorial|test):?\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    kind: str  # "install", "tutorial", "test"
    argument: str  # "clone", "file PATH", "console", ""
    body: str
    where: str


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found = []
    for index, line in enumerate(lines):
        match = _MARKER.match(line)
        if not match:
            continue
        start = index + 1
        assert lines[start].startswith("```"), f"{page.name}:{start + 1}: a marker must precede a code block"
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
        body = "\n".join(lines[start + 1 : end]) + "\n"
        found.append(Block(match[1], match[2], body, f"{page.name}:{start + 1}"))
    return found


# -- the stand-in package index -------------------------------------------------------------------


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return Sandbox(tmp_path_factory.mktemp("docs-install"))


@pytest.fixture(scope="module")
def index(sandbox: Sandbox) -> Path:
    """A PEP 503 folder index of the third-party wheels, the build backend and pipx, packed from
    the suite's own environment (no network)."""
    simple = simple_index(sandbox.wheels, sandbox.root / "simple")
    assert not [p for p in simple.iterdir() if p.name.startswith("pi-")]
    return simple


# -- a shell session ------------------------------------------------------------------------------


@dataclass
class Shell:
    """Runs ``$ command`` lines one by one as an interactive shell would keep them: the current
    folder and an activated virtual environment carry over to the next command."""

    sandbox: Sandbox
    environ: dict[str, str]
    cwd: Path
    activated: list[str] = field(default_factory=list)

    def run(self, command: str, expected: list[str], where: str) -> str:
        marker = self.sandbox.root / "cwd.txt"
        prelude = "".join(f"source {script}\n" for script in self.activated)
        script = f'{prelude}{command}\nstatus=$?\npwd > "{marker}"\nexit $status\n'
        result = subprocess.run(
            ["bash", "-c", script],
            cwd=self.cwd,
            env=self.environ,
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, f"{where}: `{command}` failed ({result.returncode}):\n{output}"
        expect_lines(result.stdout, expected, f"{where}: `{command}`")
        self.cwd = Path(marker.read_text().strip())
        words = shlex.split(command)
        if words[:1] in (["source"], ["."]) and words[1].endswith("/bin/activate"):
            home = self.environ["HOME"]
            self.activated = [re.sub(r"^~(?=/)", home, words[1]).replace("$HOME", home)]
        return result.stdout

    def console(self, block: Block) -> None:
        for command, expected in console_commands(block.body):
            self.run(command, expected, block.where)


@pytest.fixture(scope="module")
def shell(sandbox: Sandbox, index: Path) -> Iterator[Shell]:
    python_only = sandbox.root / "python-only"
    python_only.mkdir()
    base_python = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    (python_only / "python").symlink_to(base_python)
    (python_only / "python3").symlink_to(base_python)
    environ = sandbox.environ(PIP_INDEX_URL=index.as_uri())
    # The pages' commands use the stand-in index as a newcomer's pip uses the real one.
    for name in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "UV_OFFLINE", "UV_NO_INDEX", "UV_FIND_LINKS"):
        del environ[name]
    environ["PATH"] = os.pathsep.join([str(python_only), "/usr/local/bin", "/usr/bin", "/bin"])
    clone = copy_repository(sandbox.home / "pi-host")
    yield Shell(sandbox, environ, clone)


def test_readme_getting_started_and_tutorial_with_plain_pip(sandbox: Sandbox, shell: Shell) -> None:
    clone = shell.cwd

    # README: the one-liner, in the clone.
    readme = [b for b in blocks(README) if b.kind == "install" and b.argument == "clone"]
    assert readme
    for block in readme:
        shell.console(block)
    listed = shell.run(".venv-pip/bin/pi-host plugins list", [], "README.md")
    for name in ("bash", "compaction", "retry", "tools_fs"):
        assert f"{name} (pi-" in listed

    # Getting started: the wheel folder, then the first run on the scripted model.
    page = blocks(GETTING_STARTED)
    installs = [b for b in page if b.kind == "install" and b.argument == "clone"]
    assert len(installs) >= 2
    for block in installs:
        shell.console(block)
    assert shell.activated == [str(sandbox.home / ".venvs" / "pi-host" / "bin" / "activate")]
    work = sandbox.home / "first-run"
    work.mkdir()
    shell.cwd = work
    examples = [b for b in page if b.kind == "test" and b.argument.split()[0] in ("file", "console")]
    assert any(b.argument == "console" for b in examples)
    for block in examples:
        if block.argument.startswith("file "):
            (work / block.argument.split(None, 1)[1]).write_text(block.body)
        else:
            shell.console(block)  # ends with `pi-host -p` on the faux provider

    # The tutorial, from an empty folder to a tested plugin package.
    shell.cwd = workspace = sandbox.home / "work"
    workspace.mkdir()
    steps = [b for b in blocks(TUTORIAL) if b.kind == "tutorial"]
    assert sum(1 for b in steps if not b.argument) >= 5
    for block in steps:
        if block.argument.startswith("file "):
            target = workspace / block.argument.split(None, 1)[1]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body)
        else:
            shell.console(block)
    assert shell.activated == [str(sandbox.home / ".venvs" / "pi-dev" / "bin" / "activate")]
    assert not (workspace / "pi-protect" / ".env").exists()

    # Getting started's application installers, from the same wheel folder.
    assert UV is not None
    tools = sandbox.root / "installers"
    (tools / "bin").mkdir(parents=True)
    (tools / "bin" / "uv").symlink_to(UV)
    (tools / "bin" / "pipx").symlink_to(Path(sys.executable).parent / "pipx")  # the dev group's
    applications = Shell(
        sandbox,
        {
            **shell.environ,
            "PATH": f"{tools / 'bin'}{os.pathsep}{shell.environ['PATH']}",
            "UV_INDEX_URL": shell.environ["PIP_INDEX_URL"],  # the same stand-in index for uv
        },
        clone,
    )
    (block,) = [b for b in page if b.kind == "install" and b.argument == "tools"]
    applications.console(block)
    for command in (sandbox.bin / "pi-host", sandbox.root / "pipx-bin" / "pi-host"):
        listed = applications.run(f"{command} plugins list", [], "getting-started.md")
        assert "tools_fs (pi-tools-fs 0.1.0) [default, enabled]" in listed, command
