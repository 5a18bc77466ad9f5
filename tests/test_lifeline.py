"""The lifeline (``PI_HOST_LIFELINE_FD``): pi-host shuts down as on SIGTERM once the pipe's
writer, the supervisor that started it, is gone; a malformed value is one warning, no crash.

``pi-host batch`` agents killed with their coordinator are tested in tests/test_batch.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_host._lifeline import LIFELINE_ENV, watch_lifeline

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the lifeline is POSIX only")

PI_HOST = shutil.which("pi-host") or str(Path(sys.executable).parent / "pi-host")


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        try:
            os.close(fd)
        except OSError:  # closed by the test or the watcher
            pass


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_HOST", "ANTHROPIC_", "OPENAI_"))}
    script = tmp_path / "faux.json"
    script.write_text(json.dumps([{"text": "Hello offline"}]), encoding="utf-8")
    env.update(HOME=str(tmp_path), PI_HOST_DIR=str(tmp_path / "agent"), PI_HOST_FAUX_SCRIPT=str(script))
    env.update(extra)
    return env


def test_the_watcher_ends_when_the_write_end_closes_and_not_before(pipe: tuple[int, int]) -> None:
    read, write = pipe
    environ = {LIFELINE_ENV: str(read), "OTHER": "kept"}
    ended = threading.Event()

    thread = watch_lifeline(environ, on_end=ended.set)

    assert thread is not None and thread.daemon
    assert environ == {"OTHER": "kept"}  # the agent's own children do not inherit it
    assert not os.get_inheritable(read)
    os.write(write, b"anything")  # a supervisor's writes are read and ignored
    assert not ended.is_set()
    os.close(write)
    assert ended.wait(10)
    thread.join(10)
    assert not thread.is_alive()


def test_an_unset_or_empty_variable_starts_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    environ = {"OTHER": "x"}
    assert watch_lifeline(environ) is None
    assert environ == {"OTHER": "x"}
    environ[LIFELINE_ENV] = " "
    assert watch_lifeline(environ) is None
    assert environ == {"OTHER": "x"}
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param("abc", "is not a file descriptor number", id="word"),
        pytest.param("-4", "is not a file descriptor number", id="negative"),
        pytest.param("0", "is standard input, output or error", id="stdin"),
        pytest.param("closed", "names no open file descriptor (Bad file descriptor)", id="closed"),
        pytest.param("file", "is not a pipe or socket", id="regular-file"),
        pytest.param("write-end", "is the write end of its pipe; pass the read end", id="write-end"),
    ],
)
def test_a_malformed_value_is_one_warning_line_and_no_watcher(
    value: str,
    problem: str,
    tmp_path: Path,
    pipe: tuple[int, int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, write = pipe
    opened: list[int] = []
    if value == "closed":
        closed_read, closed_write = os.pipe()
        os.close(closed_read)
        os.close(closed_write)
        value = str(closed_read)
    elif value == "file":
        opened.append(os.open(tmp_path / "plain", os.O_RDONLY | os.O_CREAT))
        value = str(opened[0])
    elif value == "write-end":
        value = str(write)
    environ = {LIFELINE_ENV: value}
    try:
        assert watch_lifeline(environ, on_end=lambda: pytest.fail("no lifeline to end")) is None
    finally:
        for fd in opened:
            os.close(fd)

    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"Warning: {LIFELINE_ENV}={value!r} {problem}"), err
    assert err.rstrip().endswith("pi-host will not stop when its supervisor exits")
    assert environ == {}


def test_pi_host_in_rpc_mode_shuts_down_as_on_sigterm_when_its_supervisor_is_gone(
    tmp_path: Path, pipe: tuple[int, int]
) -> None:
    # RPC mode runs until its input closes; the input stays open, so only the lifeline ends it.
    read, write = pipe
    process = subprocess.Popen(
        [PI_HOST, "--mode", "rpc", "--provider", "faux", "--no-session"],
        env=environment(tmp_path, **{LIFELINE_ENV: str(read)}),
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(read,),
    )
    try:
        os.close(read)
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b'{"id": "1", "type": "get_state"}\n')
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["success"] is True  # up and serving
        os.close(write)
        assert process.wait(timeout=20) == 143  # SIGTERM's status, through the mode's handler
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()
    assert process.stderr is not None
    with process.stderr:
        assert process.stderr.read() == b""


def test_a_malformed_value_does_not_stop_a_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [PI_HOST, "--provider", "faux", "--no-session", "-p", "hi"],
        env=environment(tmp_path, **{LIFELINE_ENV: "nine"}),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "Hello offline\n")
    assert done.stderr.splitlines() == [
        f"Warning: {LIFELINE_ENV}='nine' is not a file descriptor number; "
        "pi-host will not stop when its supervisor exits"
    ]
