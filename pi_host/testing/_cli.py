"""Black-box runs of the ``pi-host`` command (or a distribution's command) in a subprocess."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_host.providers._env_keys import ENV_API_KEYS

from ._rpc import RpcClient
from ._script import Step, to_reply

__all__ = ["CliResult", "CliRunner", "isolated_environ", "script_json"]

_DEFAULT_TIMEOUT = 60.0


def isolated_environ(
    home: Path, agent_dir: Path | None = None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A copy of the environment with every ``PI_HOST_*`` variable and provider key removed.

    ``HOME`` points at ``home``, and ``PI_HOST_DIR`` at ``agent_dir`` when given, so a run
    never reads or writes the user's files.
    """
    source = os.environ if base is None else base
    keys = {name for names in ENV_API_KEYS.values() for name in names}
    environ = {k: v for k, v in source.items() if not k.startswith("PI_HOST") and k not in keys}
    environ["HOME"] = str(home)
    environ.setdefault("NO_COLOR", "1")
    if agent_dir is not None:
        environ["PI_HOST_DIR"] = str(agent_dir)
    return environ


def script_json(steps: Iterable[Step]) -> list[dict[str, Any]]:
    """Steps as a ``PI_HOST_FAUX_SCRIPT`` JSON list (functions cannot cross a process boundary)."""
    entries = []
    for index, step in enumerate(steps):
        if isinstance(step, Mapping):
            entries.append(dict(step))
            continue
        if callable(step) and not hasattr(step, "message"):
            raise TypeError(f"step {index}: a function step cannot drive a subprocess; script a reply")
        reply = to_reply(step, index)
        message = reply.message
        entry: dict[str, Any] = {}
        for block in message.content:
            if block.type == "thinking":
                entry["thinking"] = entry.get("thinking", "") + block.thinking
            elif block.type == "text":
                entry["text"] = entry.get("text", "") + block.text
            else:
                entry.setdefault("toolCalls", []).append(
                    {"name": block.name, "arguments": block.arguments, "id": block.id}
                )
        if message.stop_reason in ("error", "aborted"):
            entry["error"] = message.error_message or "faux error"
        entry["stopReason"] = message.stop_reason
        if reply.usage is not None:
            entry["usage"] = reply.usage.to_json_dict()
        if reply.chunk_delay is not None:
            entry["delayMs"] = reply.chunk_delay * 1000
        entries.append(entry)
    return entries


@dataclass
class CliResult:
    """The outcome of one command run.

    :ivar args: the full command line.
    :ivar returncode: the exit status.
    :ivar stdout: standard output (text).
    :ivar stderr: standard error (text).
    """

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    cwd: Path = field(repr=False, default=Path("."))

    @property
    def lines(self) -> list[str]:
        """The standard output lines."""
        return self.stdout.splitlines()

    @property
    def events(self) -> list[dict[str, Any]]:
        """Standard output as JSON lines (``--mode json``); lines that are not JSON are skipped."""
        events = []
        for line in self.lines:
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                events.append(value)
        return events

    @property
    def event_types(self) -> list[str]:
        return [str(event.get("type")) for event in self.events]

    def assert_success(self) -> CliResult:
        """Assert exit status 0 (the message shows standard error)."""
        assert self.returncode == 0, (
            f"{' '.join(self.args)} exited with {self.returncode}\n--- stderr ---\n{self.stderr}"
            f"\n--- stdout ---\n{self.stdout}"
        )
        return self

    def assert_failure(self, returncode: int | None = None) -> CliResult:
        if returncode is None:
            assert self.returncode != 0, f"{' '.join(self.args)} succeeded unexpectedly:\n{self.stdout}"
        else:
            assert self.returncode == returncode, (
                f"exit status {self.returncode}, expected {returncode}\n--- stderr ---\n{self.stderr}"
            )
        return self

    def fnmatch_lines(self, patterns: Sequence[str], *, stream: str = "stdout") -> CliResult:
        """Assert each glob pattern matches a line, in order (pytester's ``fnmatch_lines``)."""
        lines = (self.stdout if stream == "stdout" else self.stderr).splitlines()
        position = 0
        for pattern in patterns:
            for index in range(position, len(lines)):
                if fnmatch.fnmatchcase(lines[index], pattern):
                    position = index + 1
                    break
            else:
                shown = "\n".join(f"  {line}" for line in lines) or "  (empty)"
                raise AssertionError(f"no {stream} line matches {pattern!r} after line {position}:\n{shown}")
        return self


class CliRunner:
    """Runs a command of this Python environment with an isolated home, agent directory and cwd.

    :param root: a directory of its own (the fixture passes a temporary one); ``home/``,
        ``agent/`` and ``project/`` (the default working directory) are created in it.
    :param command: the console script to run (``pi-host``, or a distribution's command).
    """

    def __init__(self, root: Path, *, command: str = "pi-host") -> None:
        self.root = root
        self.home = root / "home"
        self.agent_dir = root / "agent"
        self.cwd = root / "project"
        for directory in (self.home, self.agent_dir, self.cwd):
            directory.mkdir(parents=True, exist_ok=True)
        self.command = command
        self._scripts = 0

    def executable(self, command: str | None = None) -> str:
        """The path of ``command`` in this environment (next to the running Python), or on ``PATH``."""
        name = command or self.command
        local = Path(sys.executable).parent / name
        if local.exists():
            return str(local)
        found = shutil.which(name)
        if found is None:
            raise FileNotFoundError(f"command {name!r} is not installed in {Path(sys.executable).parent}")
        return found

    def _environ(self, replies: Iterable[Step] | None, env: Mapping[str, str] | None) -> dict[str, str]:
        environ = isolated_environ(self.home, self.agent_dir)
        if replies is not None:
            self._scripts += 1
            script = self.root / f"faux-script-{self._scripts}.json"
            script.write_text(json.dumps(script_json(replies)), encoding="utf-8")
            environ["PI_HOST_FAUX_SCRIPT"] = str(script)
        environ.update(env or {})
        return environ

    def __call__(
        self,
        *args: str,
        replies: Iterable[Step] | None = None,
        env: Mapping[str, str] | None = None,
        input: str | None = None,
        cwd: Path | str | None = None,
        command: str | None = None,
        timeout: float = _DEFAULT_TIMEOUT,
    ) -> CliResult:
        """Run the command with ``args`` and wait for it.

        :param replies: scripted replies for ``--provider faux`` (written to a script file
            and passed as ``PI_HOST_FAUX_SCRIPT``).
        :param env: extra environment variables (after isolation).
        :param input: standard input (none by default).
        :param command: another console script than the runner's.
        """
        environ = self._environ(replies, env)
        argv = [self.executable(command), *args]
        directory = Path(cwd) if cwd is not None else self.cwd
        completed = subprocess.run(
            argv,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=directory,
            env=environ,
            timeout=timeout,
        )
        return CliResult(argv, completed.returncode, completed.stdout, completed.stderr, directory)

    def rpc(
        self,
        *args: str,
        replies: Iterable[Step] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | str | None = None,
        command: str | None = None,
        timeout: float = _DEFAULT_TIMEOUT,
    ) -> RpcClient:
        """Start the command with ``--mode rpc`` and ``args``, and return its :class:`RpcClient`.

        The process shares what :meth:`__call__` gives a run: the isolated environment, the
        working directory, ``replies`` as a faux script, ``env`` and ``command``. It is
        running when this returns; use the client in a ``with`` block or :meth:`RpcClient.close`
        it. ::

            with run_cli.rpc("--provider", "faux", replies=["Hello"]) as client:
                client.call({"type": "prompt", "message": "hi"})
                assert client.wait_for("agent_end")["messages"][-1]["content"][0]["text"] == "Hello"

        :param timeout: the client's default for each wait and for closing, in seconds.
        """
        argv = [self.executable(command), "--mode", "rpc", *args]
        directory = Path(cwd) if cwd is not None else self.cwd
        return RpcClient(argv, cwd=directory, env=self._environ(replies, env), timeout=timeout)
