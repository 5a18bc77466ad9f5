"""Context files: ``AGENTS.md`` / ``CLAUDE.md`` instructions put into the system prompt.

The agent directory's ``AGENTS.md`` comes first (the user's own rules), then one file per
directory from the filesystem root down to the working directory, so the instructions nearest
the work come last.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from ._diagnostics import diagnostic
from ._paths import exists

if TYPE_CHECKING:
    from ._diagnostic_models import ResourceDiagnostic

__all__ = ["CONTEXT_FILE_NAMES", "ContextFile", "ContextFilesResult", "load_context_files"]

#: Tried in this order in each directory; the first that exists is used.
CONTEXT_FILE_NAMES = ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")


class ContextFile(BaseModel):
    """One context file: where it is and what it says."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    path: str
    content: str


@dataclass(frozen=True)
class ContextFilesResult:
    """Context files in prompt order, and files that exist but could not be read."""

    files: tuple[ContextFile, ...] = ()
    diagnostics: tuple[ResourceDiagnostic, ...] = ()


def _load_from_dir(directory: Path, diagnostics: list[ResourceDiagnostic]) -> ContextFile | None:
    for name in CONTEXT_FILE_NAMES:
        path = directory / name
        if not exists(path):
            continue
        try:
            # Invalid UTF-8 becomes U+FFFD rather than losing the whole file.
            content = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            diagnostics.append(diagnostic("warning", f"Could not read {path}: {exc}", path))
            continue
        return ContextFile(path=str(path), content=content)
    return None


def load_context_files(
    cwd: str | os.PathLike[str], agent_dir: str | os.PathLike[str], *, enabled: bool = True
) -> ContextFilesResult:
    """Collect the context files for *cwd*, as pi does.

    Order: ``<agent_dir>/AGENTS.md`` (or one of the other names), then for each directory from
    ``/`` down to *cwd* the first of :data:`CONTEXT_FILE_NAMES` that exists. A file is listed
    once even if two lookups reach it. Context files are plain instructions, loaded whether or
    not the project is trusted, as pi loads them.

    :param enabled: ``False`` for ``--no-context-files`` (``-nc``): nothing is loaded.
    """
    if not enabled:
        return ContextFilesResult()
    diagnostics: list[ResourceDiagnostic] = []
    files: list[ContextFile] = []
    seen: set[str] = set()
    global_file = _load_from_dir(Path(os.path.abspath(agent_dir)), diagnostics)
    if global_file is not None:
        files.append(global_file)
        seen.add(global_file.path)
    ancestors: list[ContextFile] = []
    directory = Path(os.path.abspath(cwd))
    while True:
        found = _load_from_dir(directory, diagnostics)
        if found is not None and found.path not in seen:
            ancestors.append(found)
            seen.add(found.path)
        if directory.parent == directory:
            break
        directory = directory.parent
    files.extend(reversed(ancestors))
    return ContextFilesResult(tuple(files), tuple(diagnostics))
