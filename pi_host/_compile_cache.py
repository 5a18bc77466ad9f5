"""A cache of the code that ``dataclasses``, ``namedtuple`` and ``typing`` compile at run time.

``@dataclass`` writes each method it adds (``__init__``, ``__repr__``, ``__eq__`` …) as source
text and compiles it with ``exec``, ``namedtuple`` its ``__new__`` with ``eval``, and ``typing``
compiles every string annotation it evaluates (``ForwardRef``). A pi-host start-up creates about
130 dataclasses, half of them in pydantic, anyio and h11, 40 named tuples, and evaluates about
1,250 string annotations: on Python 3.11 parsing and compiling that text was a fifth of the
instructions of a one-shot reply. The text is the same on every run, so the command keeps the
compiled code in a file, as Python keeps bytecode, and looks it up by its source text.

Only the ``pi-host`` command installs the cache, for the length of its run
(:func:`compile_cache`): the library never patches anything on import. What it patches is the
builtin each of those modules calls (``exec`` in ``dataclasses``, ``eval`` in ``collections``,
``compile`` in ``typing``), by setting that name in the module to a function that returns what
the builtin would for that text; the modules are restored when the run ends.
``PI_HOST_COMPILE_CACHE=0`` turns it off.

The file is trusted as bytecode caches are: it lives in the agent directory, next to the
user's settings and extensions. One that is unreadable, malformed or written by another
Python is ignored and replaced.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

__all__ = ["CompileCache", "compile_cache"]

#: The first line of a cache file. Code objects are only valid for the interpreter that made
#: them, so the exact version and build are part of it.
_HEADER = f"pi-host compile cache 1 {sys.implementation.cache_tag} {sys.version}\n".encode()

#: Entries kept at most. A file is rewritten with only the last run's entries beyond it, so
#: code that no run uses any more does not accumulate.
MAX_ENTRIES = 20_000


class CompileCache:
    """Compiled code by ``(mode, source text)``, loaded from and saved to one file.

    Entries are kept marshalled and unmarshalled on first use: a run pays only for the code it
    asks for, whatever other commands added to the file. An entry is dropped from memory once
    used (the code lives on in the function made from it), so the cache costs a run little
    memory beyond start-up; only annotations, which repeat (``str``, ``int | None``), keep
    their code at hand.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stored = _read(path)
        self._annotations: dict[str, CodeType] = {}
        self._used: set[int] = set()  # hash() of each key used, to prune the file by
        self._new: dict[tuple[str, str], bytes] = {}
        self.hits = 0
        self.misses = 0

    def compile(self, source: str, mode: str) -> CodeType:
        """``compile(source, "<string>", mode)``, as compiled by a module without ``__future__`` imports.

        :raises SyntaxError: as ``compile`` does; nothing is cached then.
        """
        if mode == "eval":
            known = self._annotations.get(source)
            if known is not None:
                self.hits += 1
                return known
        key = (mode, source)
        blob = self._stored.pop(key, None)
        code = None if blob is None else _load_code(blob)
        if code is not None:
            self.hits += 1
        else:
            code = builtins.compile(source, "<string>", mode, dont_inherit=True)
            self.misses += 1
            self._new[key] = marshal.dumps(code)
        self._used.add(hash(key))
        if mode == "eval":
            self._annotations[source] = code
        return code

    def save(self) -> bool:
        """Write the file if this run compiled anything it does not hold; ``True`` when written.

        Like bytecode, it is not written under ``PYTHONDONTWRITEBYTECODE`` (``python -B``).
        The file is read again first (another run may have written it meanwhile) and replaced
        atomically, so a concurrent run reads the old or the new one. A directory that cannot be
        written to leaves the cache unsaved, without an error: it is only a speed-up.
        """
        if not self._new or sys.dont_write_bytecode:
            return False
        stored = _read(self.path)
        # What this run compiled again may be there already: compiled twice in this run (the
        # first use dropped it from memory), or written meanwhile by another run.
        if all(key in stored and _load_code(stored[key]) is not None for key in self._new):
            self._new.clear()
            return False
        entries = {**stored, **self._new}
        if len(entries) > MAX_ENTRIES:
            entries = {key: blob for key, blob in entries.items() if hash(key) in self._used}
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(_HEADER + marshal.dumps(entries))
            os.replace(temporary, self.path)
        except OSError:
            with suppress(OSError):
                temporary.unlink()
            return False
        self._new.clear()
        return True


def _load_code(blob: object) -> CodeType | None:
    """The code object marshalled in ``blob``; ``None`` for anything else a damaged file holds."""
    try:
        code = marshal.loads(blob)  # type: ignore[arg-type]
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def _read(path: Path) -> dict[tuple[str, str], bytes]:
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    if not data.startswith(_HEADER):
        return {}
    try:
        entries = marshal.loads(memoryview(data)[len(_HEADER) :])
    except (EOFError, ValueError, TypeError):
        return {}
    return entries if isinstance(entries, dict) else {}


def _patches(cache: CompileCache) -> dict[tuple[ModuleType, str], Any]:
    """The module attributes to set: the builtin each module calls, and its cached stand-in."""
    import collections
    import dataclasses
    import typing

    def cached_exec(source: Any, globals_: dict[str, Any] | None = None, locals_: Any = None, /) -> None:
        if type(source) is str:
            source = cache.compile(source, "exec")
        builtins.exec(source, globals_, locals_)

    def cached_eval(source: Any, globals_: dict[str, Any] | None = None, locals_: Any = None, /) -> Any:
        if type(source) is str:
            source = cache.compile(source, "eval")
        return builtins.eval(source, globals_, locals_)

    def cached_compile(
        source: Any, filename: str, mode: str, flags: int = 0, dont_inherit: bool = False, optimize: int = -1
    ) -> Any:
        if type(source) is str and filename == "<string>" and not flags and optimize == -1:
            return cache.compile(source, mode)
        return builtins.compile(source, filename, mode, flags, dont_inherit, optimize)

    return {
        (dataclasses, "exec"): cached_exec,
        (collections, "eval"): cached_eval,
        (typing, "compile"): cached_compile,
    }


@contextmanager
def compile_cache(path: Path) -> Iterator[CompileCache | None]:
    """Serve the compilations of ``dataclasses``, ``namedtuple`` and ``typing`` from ``path`` meanwhile.

    Saves the cache and restores the modules on the way out. Yields ``None``, and changes
    nothing, when ``PI_HOST_COMPILE_CACHE=0`` or when one of the modules already has its own
    ``exec``, ``eval`` or ``compile`` (another cache, or a debugger's).
    """
    if os.environ.get("PI_HOST_COMPILE_CACHE", "1") == "0":
        yield None
        return
    cache = CompileCache(path)
    patches = _patches(cache)
    if any(name in vars(module) for module, name in patches):
        yield None
        return
    for (module, name), replacement in patches.items():
        setattr(module, name, replacement)
    try:
        yield cache
    finally:
        for module, name in patches:
            delattr(module, name)
        cache.save()
