"""A folder of wheels made from what this machine already has, so installation tests stay offline.

Every third-party distribution the tests' environments need is installed in the environment
running the suite (``uv sync`` put it there from the lockfile: pi-host's dependencies, the
``testing`` extra, and the dev group's hatchling, editables and pipx). An installed
distribution is its wheel unpacked: its ``RECORD`` lists the files, its ``WHEEL`` the tags.
Packing those files back, with the scripts and data files installed outside ``site-packages``
returned to the wheel's ``.data`` folders and a fresh ``RECORD``, gives a wheel pip and uv
install like the original. uv itself, for the set-up scripts' bootstrap, is packed from the
``uv`` executable the suite runs with, as its own wheels ship it (the binary as a script).

The folder serves as ``--find-links`` (pip, uv) or, laid out by :func:`simple_index`, as a
PEP 503 index.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterable
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement

__all__ = ["add_uv_wheel", "build_wheelhouse", "offline_uv_args", "simple_index"]

_SKIPPED_METADATA = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json", "uv_cache.json", "uv_build.json"}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(roots: Iterable[str]) -> list[Distribution]:
    """``roots`` and everything they require (their markers evaluated here, no extras beyond
    those named in ``roots``), as installed in the running environment."""
    found: dict[str, Distribution] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    pending = [Requirement(root) for root in roots]
    while pending:
        requirement = pending.pop()
        key = _normalise(requirement.name)
        if (key, frozenset(requirement.extras)) in seen:
            continue
        seen.add((key, frozenset(requirement.extras)))
        try:
            dist = found.get(key) or distribution(requirement.name)
        except PackageNotFoundError:
            continue  # a dependency for another platform or Python
        found[key] = dist
        for line in dist.requires or []:
            dependency = Requirement(line)
            extras = requirement.extras or {""}
            if dependency.marker is None or any(dependency.marker.evaluate({"extra": e}) for e in extras):
                pending.append(dependency)
    return list(found.values())


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _compressed_tag(tags: list[str]) -> str:
    parts = [t.split("-") for t in tags]
    return "-".join(".".join(dict.fromkeys(p[i] for p in parts)) for i in range(3))


def _editable(dist: Distribution) -> bool:
    direct = dist.read_text("direct_url.json") or ""
    return '"editable": true' in direct or '"editable":true' in direct


def _repack(dist: Distribution, folder: Path) -> Path:
    """The wheel ``dist`` was installed from, rebuilt from its installed files."""
    files = dist.files
    assert files is not None, f"{dist.metadata['Name']} has no RECORD"
    info = next(f for f in files if f.parts[0].endswith(".dist-info"))
    info_dir = info.parts[0]
    stem = info_dir.removesuffix(".dist-info")
    wheel_meta = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel_meta.splitlines() if line.startswith("Tag:")]
    site = Path(dist.locate_file("")).resolve()
    prefix = Path(sys.prefix).resolve()
    scripts = Path(sysconfig.get_path("scripts", vars={"base": str(prefix)})).resolve()
    generated = {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}
    target = folder / f"{stem}-{_compressed_tag(tags)}.whl"
    record: list[str] = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for file in files:
            path = Path(dist.locate_file(file)).resolve()
            if "__pycache__" in file.parts or path.suffix == ".pyc" or not path.is_file():
                continue
            if file.parts[0] == info_dir and file.name in _SKIPPED_METADATA:
                continue
            data = path.read_bytes()
            if path.is_relative_to(site):
                name = path.relative_to(site).as_posix()
            elif path.is_relative_to(scripts):
                if path.name in generated:
                    continue  # the installer writes these from entry_points.txt
                if data.startswith(b"#!") and b"python" in data.split(b"\n", 1)[0]:
                    data = b"#!python\n" + data.split(b"\n", 1)[1]  # as it was in the wheel
                name = f"{stem}.data/scripts/{path.name}"
            elif path.is_relative_to(prefix):
                name = f"{stem}.data/data/{path.relative_to(prefix).as_posix()}"
            else:
                continue
            entry = zipfile.ZipInfo(name)
            entry.external_attr = (stat.S_IFREG | (path.stat().st_mode & 0o777)) << 16  # keeps x bits
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
            record.append(_record_line(name, data))
        record.append(f"{info_dir}/RECORD,,")
        archive.writestr(f"{info_dir}/RECORD", "\n".join(record) + "\n")
    return target


def build_wheelhouse(folder: Path, roots: Iterable[str]) -> Path:
    """Wheels of ``roots`` and their dependencies, never pi-host's own distributions."""
    folder.mkdir(parents=True, exist_ok=True)
    for dist in _closure(roots):
        name = _normalise(dist.metadata["Name"])
        if name.startswith("pi-") or _editable(dist):
            continue
        _repack(dist, folder)
    return folder


def offline_uv_args(folder: Path) -> list[str]:
    """``uv pip install`` options that build and install this checkout's packages offline.

    The build backends come from a wheel folder made in ``folder``, not from uv's cache: ``uv
    sync`` installs from the lockfile and keeps no index pages, so ``--offline`` alone finds
    nothing on a machine whose cache holds only what ``uv sync`` put there.
    """
    wheels = build_wheelhouse(folder, ("hatchling", "editables"))
    return ["--offline", "--no-index", "--find-links", str(wheels)]


def _executable(uv: str) -> Path:
    """The uv binary behind ``uv``, which may be a shim (pyenv's is a shell script): uv names
    its own executable to the programs it runs, in ``UV``."""
    found = subprocess.run(
        [
            uv,
            "run",
            "--no-project",
            "--offline",
            "--python",
            sys.executable,
            "python",
            "-c",
            "import os; print(os.environ['UV'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(found.stdout.strip()).resolve()


def add_uv_wheel(folder: Path, uv: str) -> Path:
    """A ``uv`` wheel holding the executable ``uv``: what ``pip install uv`` gives, offline."""
    binary = _executable(uv)
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True)
    number = version.stdout.split()[1]
    stem = f"uv-{number}"
    tag = f"py3-none-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"
    files = {
        f"{stem}.data/scripts/uv": binary.read_bytes(),
        f"{stem}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: uv\nVersion: {number}\n".encode(),
        f"{stem}.dist-info/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
    }
    target = folder / f"{stem}-{tag}.whl"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as archive:
        record = []
        for name, data in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | 0o755) << 16  # installers want a regular file
            archive.writestr(info, data)
            record.append(_record_line(name, data))
        record.append(f"{stem}.dist-info/RECORD,,")
        archive.writestr(f"{stem}.dist-info/RECORD", "\n".join(record) + "\n")
    return target


def simple_index(wheels: Path, index: Path) -> Path:
    """``wheels`` laid out as a PEP 503 folder index (pip reads each project's index.html)."""
    for wheel in wheels.glob("*.whl"):
        project = index / _normalise(wheel.name.split("-", 1)[0])
        project.mkdir(parents=True, exist_ok=True)
        shutil.copy2(wheel, project / wheel.name)
    for project in index.iterdir():
        links = "".join(f'<a href="{w.name}">{w.name}</a>\n' for w in sorted(project.glob("*.whl")))
        (project / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    return index
