"""``pi-host plugins list`` shows a plugin from every source at once, as docs/plugins/index.md's
table names them: essential, default, installed, project-local (with the project's trust state,
never imported by the listing) and ``-e``; and ``-e`` leaves nothing installed.

The installed plugin is examples/pi-hello, really installed (offline, from uv's cache) into a
``--target`` folder on ``PYTHONPATH``; the defaults are the ones of the suite's environment.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pi_host.resources import ProjectTrustStore
from tests.install_support import copy_tree
from tests.test_cli import PI_HOST
from tests.wheelhouse import offline_uv_args

ROOT = Path(__file__).resolve().parent.parent
DOCS_TABLE = ROOT / "docs" / "plugins" / "index.md"

LOCAL = "from pi_host import hookimpl\n\n\n@hookimpl\ndef pi_agent_start(ctx):\n    pass\n"
EXTENSION = "from pi_host import hookimpl\n\n\n@hookimpl\ndef pi_agent_end(messages, ctx):\n    pass\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    uv = shutil.which("uv") or os.environ.get("UV")  # uv run names itself; a bootstrapped uv is off PATH
    assert uv is not None, "uv installs the example plugin"
    root = tmp_path_factory.mktemp("sources-site")
    hello = copy_tree(ROOT / "examples" / "pi-hello", root / "pi-hello")
    target = root / "site-packages"
    installed = subprocess.run(
        [
            *(uv, "pip", "install", *offline_uv_args(root / "wheels"), "--quiet", "--no-deps"),
            *("--python", sys.executable),
            *("--target", str(target), str(hello)),
        ],
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    return target


def _list(site: Path, home: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PI_HOST")}
    environ.update(
        HOME=str(home),
        PI_HOST_DIR=str(home / "agent"),
        PYTHONPATH=str(site),
        PI_HOST_DISABLE_PLUGINS="guard,shell_hooks",  # the opt-in plugins of the dev environment
    )
    return subprocess.run(
        [PI_HOST, "plugins", "list", *args],
        capture_output=True,
        text=True,
        cwd=project,
        env=environ,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def _site_contents() -> list[str]:
    return sorted(
        os.listdir(
            Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
        )
    )


def test_every_source_is_listed_with_its_tier_and_the_project_s_trust_state(
    site: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    project = tmp_path / "project"
    (project / ".pi" / "plugins").mkdir(parents=True)
    (project / ".pi" / "plugins" / "localcheck.py").write_text(LOCAL)
    extension = tmp_path / "try_me.py"
    extension.write_text(EXTENSION)
    before = _site_contents()

    untrusted = _list(site, home, project, "--all", "--json", "-e", str(extension))
    assert untrusted.returncode == 0, untrusted.stderr
    rows = {row["name"]: row for row in json.loads(untrusted.stdout)}
    tiers = {name: row["tier"] for name, row in rows.items()}
    assert {tiers["providers"], tiers["faux"]} == {"essential"}
    assert {tiers[name] for name in ("tools_fs", "bash", "compaction", "retry")} == {"default"}
    assert (tiers["hello"], rows["hello"]["distribution"], rows["hello"]["status"]) == (
        "installed",
        "pi-hello",
        "enabled",
    )
    assert (tiers["localcheck"], rows["localcheck"]["status"]) == ("local", "disabled")
    assert "not loaded until the project is trusted" in rows["localcheck"]["error"]
    assert (tiers["try_me"], rows["try_me"]["status"]) == ("extension", "enabled")

    # The human listing names the same tiers, in the docs' words.
    shown = _list(site, home, project, "--all", "-e", str(extension))
    assert shown.returncode == 0, shown.stderr
    heads = dict(re.findall(r"^(\w+) \(.*\) \[([^,\]]+)", shown.stdout, re.MULTILINE))
    assert {heads["faux"], heads["tools_fs"], heads["hello"], heads["localcheck"], heads["try_me"]} == {
        "essential",
        "default",
        "installed",
        "project-local",
        "-e",
    }
    table = DOCS_TABLE.read_text(encoding="utf-8")
    for tier in ("essential", "default", "installed", "project-local", "-e"):
        assert f"| **{tier}** |" in table, f"docs/plugins/index.md's table lacks the {tier} tier"
    assert "trust not decided yet" in shown.stdout.split("localcheck", 1)[1].split("\n", 2)[1]

    # Trusted, the project's plugin loads and shows its hooks.
    ProjectTrustStore(home / "agent").set(project, True)
    trusted = _list(site, home, project, "--json")
    assert trusted.returncode == 0, trusted.stderr
    local = next(row for row in json.loads(trusted.stdout) if row["name"] == "localcheck")
    # The listing never imports project code, so no hooks; the session will load it.
    assert (local["status"], local["error"]) == ("enabled", "trusted: loaded at session start")

    # -e was for those runs only: not listed without it, and nothing was installed.
    assert "try_me" not in {row["name"] for row in json.loads(trusted.stdout)}
    assert _site_contents() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "project", "try_me.py"]
