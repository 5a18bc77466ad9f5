"""The plugin's surface: its entry point, its hook, and that installing it costs no Ray import."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pi_batch_ray
import pytest
from pi_batch_ray import RayExecutor
from pi_batch_ray._executor import forwarded_environ

from pi_host import BatchExecutorError, BatchRun
from pi_host.testing import assert_entry_point, assert_hooks_match_specs, assert_public_imports_only


def test_the_entry_point_names_the_package() -> None:
    assert_entry_point("batch_ray", pi_batch_ray, distribution="pi-batch-ray")


def test_the_hook_matches_its_spec_and_imports_only_the_public_api() -> None:
    assert_hooks_match_specs(pi_batch_ray, {"pi_batch_executor"}, name="batch_ray")
    assert_public_imports_only(pi_batch_ray, top_level_only=True)


def test_ray_is_imported_only_when_the_executor_runs() -> None:
    script = (
        "import sys, pi_batch_ray\n"
        "executor = pi_batch_ray.pi_batch_executor(name='ray', address=None)\n"
        "assert type(executor).__name__ == 'RayExecutor'\n"
        "assert 'ray' not in sys.modules, 'ray imported before the executor ran'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_other_executor_names_are_not_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert pi_batch_ray.pi_batch_executor(name="local", address=None) is None
    executor = pi_batch_ray.pi_batch_executor(name="ray", address=None)
    assert isinstance(executor, RayExecutor) and executor.address is None


def test_workers_get_pi_hosts_settings_and_the_provider_keys_only() -> None:
    environ = {
        "PI_HOST_DIR": "/agents",
        "ANTHROPIC_API_KEY": "sk-1",
        "GH_TOKEN": "gh",
        "RAY_AUTH_TOKEN": "ray's own",
        "PATH": "/usr/bin",
        "HOME": "/root",
    }
    assert forwarded_environ(environ) == {
        "PI_HOST_DIR": "/agents",
        "ANTHROPIC_API_KEY": "sk-1",
        "GH_TOKEN": "gh",
    }


def free_port() -> int:
    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_an_address_nothing_listens_on_is_refused_before_the_batch_starts() -> None:
    with pytest.raises(BatchExecutorError, match=r"nothing answers .*127\.0\.0\.1:\d+.*ray start --head"):
        pi_batch_ray.pi_batch_executor(name="ray", address=f"127.0.0.1:{free_port()}")
    with pytest.raises(BatchExecutorError, match="nothing answers"):
        pi_batch_ray.pi_batch_executor(name="ray", address=f"ray://127.0.0.1:{free_port()}")


async def test_the_executor_checks_the_address_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{free_port()}")
    executor = RayExecutor()
    run = BatchRun(out_dir=str(tmp_path), command=("pi-host",), base_dir=".")
    with pytest.raises(BatchExecutorError, match="nothing answers"):
        async for _ in executor.map([], run, concurrency=1):
            pass
    await executor.aclose()
