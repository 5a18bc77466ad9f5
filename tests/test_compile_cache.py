"""The start-up cache of generated code: the same classes with or without it, and a bad or
unwritable file never in the way."""

from __future__ import annotations

import collections
import dataclasses
import inspect
import marshal
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from pi_host import _compile_cache
from pi_host._compile_cache import CompileCache, compile_cache

pytestmark = pytest.mark.usefixtures("bytecode_written")


@pytest.fixture
def bytecode_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache is not saved under ``PYTHONDONTWRITEBYTECODE``, which some shells set."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.delenv("PI_HOST_COMPILE_CACHE", raising=False)


def make_record() -> type:
    """A dataclass using the generated methods: defaults, factories, frozen, kw-only, post-init."""

    @dataclasses.dataclass(frozen=True)
    class Record:
        name: str
        size: int = 0
        tags: list[str] = dataclasses.field(default_factory=list, hash=False)
        secret: str = dataclasses.field(default="", repr=False, compare=False)
        note: str = dataclasses.field(default="", kw_only=True)

        def __post_init__(self) -> None:
            if self.size < 0:
                raise ValueError("size must not be negative")

    return Record


def check_record(record: type) -> None:
    first = record("a", 2, note="n")
    assert repr(first) == "make_record.<locals>.Record(name='a', size=2, tags=[], note='n')"
    assert first == record("a", 2, secret="other", note="n")
    assert hash(first) == hash(record("a", 2, note="n"))
    assert first.tags is not record("a").tags
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.size = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="negative"):
        record("a", -1)
    with pytest.raises(TypeError):
        record("a", 1, [], "s", "too many")
    # The test module has `from __future__ import annotations`; the generated code must not
    # inherit it, or `__init__`'s annotations would read "_type_name" instead of "str".
    assert record.__init__.__annotations__["name"] == "str"


def test_dataclasses_from_the_cache_behave_as_without_it(tmp_path: Path) -> None:
    path = tmp_path / "cache.bin"
    reference = make_record()
    with compile_cache(path) as cache:
        assert cache is not None
        first = make_record()
    assert cache.misses > 0 and cache.hits == 0
    with compile_cache(path) as cache:
        assert cache is not None
        second = make_record()
    assert cache.misses == 0 and cache.hits > 0
    for record in (reference, first, second):
        check_record(record)
        assert inspect.signature(record) == inspect.signature(reference)


def test_named_tuples_and_forward_references_from_the_cache(tmp_path: Path) -> None:
    class Annotated:
        size: int
        parts: list[str]

    for _ in range(2):
        with compile_cache(tmp_path / "cache.bin") as cache:
            assert cache is not None
            point = collections.namedtuple("Point", "x y")
            assert point(1, y=2) == (1, 2)
            assert typing.get_type_hints(Annotated) == {"size": int, "parts": list[str]}
            with pytest.raises(SyntaxError, match="Forward reference must be an expression"):
                typing.ForwardRef("1 +")
    assert cache.misses == 0 and cache.hits >= 3


def test_the_modules_are_restored_afterwards(tmp_path: Path) -> None:
    with compile_cache(tmp_path / "cache.bin") as cache:
        assert cache is not None
        assert "exec" in vars(dataclasses) and "compile" in vars(typing) and "eval" in vars(collections)
        with compile_cache(tmp_path / "other.bin") as nested:
            assert nested is None  # patched already: the outer cache keeps serving
    assert "exec" not in vars(dataclasses)
    assert "compile" not in vars(typing)
    assert "eval" not in vars(collections)
    assert (tmp_path / "cache.bin").exists() is (cache.hits + cache.misses > 0)
    assert not (tmp_path / "other.bin").exists()


def test_switched_off_by_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_HOST_COMPILE_CACHE", "0")
    with compile_cache(tmp_path / "cache.bin") as cache:
        assert cache is None
        assert "exec" not in vars(dataclasses)
        make_record()
    assert not (tmp_path / "cache.bin").exists()


def test_not_written_when_bytecode_is_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache = CompileCache(tmp_path / "cache.bin")
    cache.compile("x = 1", "exec")
    assert cache.save() is False
    assert not (tmp_path / "cache.bin").exists()


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not a cache at all",
        _compile_cache._HEADER.replace(b"cache 1", b"cache 0") + b"\x00",
        _compile_cache._HEADER + b"\xff\x00 truncated",
        _compile_cache._HEADER + marshal.dumps(["a list, not a table"]),
    ],
    ids=["empty", "garbage", "other-version", "truncated", "wrong-type"],
)
def test_a_malformed_file_is_ignored_and_replaced(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "cache.bin"
    path.write_bytes(content)
    cache = CompileCache(path)
    assert cache.compile("y = 2", "exec").co_filename == "<string>"
    assert cache.misses == 1
    assert cache.save() is True
    again = CompileCache(path)
    namespace: dict[str, object] = {}
    exec(again.compile("y = 2", "exec"), namespace)
    assert namespace["y"] == 2 and again.hits == 1


def test_a_damaged_entry_is_compiled_again(tmp_path: Path) -> None:
    path = tmp_path / "cache.bin"
    damaged = {("exec", "a = 1"): b"\xff not marshal", ("exec", "b = 2"): 42, ("exec", "c = 3"): b"N"}
    path.write_bytes(_compile_cache._HEADER + marshal.dumps(damaged))
    cache = CompileCache(path)
    for source in ("a = 1", "b = 2", "c = 3"):
        namespace: dict[str, object] = {}
        exec(cache.compile(source, "exec"), namespace)
        assert namespace[source[0]] == int(source[-1])
    assert (cache.hits, cache.misses) == (0, 3)
    assert cache.save() is True
    again = CompileCache(path)
    for source in ("a = 1", "b = 2", "c = 3"):
        again.compile(source, "exec")
    assert (again.hits, again.misses) == (3, 0)


def test_used_entries_leave_memory_and_repeats_do_not_rewrite_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.bin"
    first = CompileCache(path)
    for source in ("a = 1", "b = 2"):
        first.compile(source, "exec")
    first.compile("int | None", "eval")
    assert first.save() is True
    written = path.read_bytes()

    again = CompileCache(path)
    again.compile("a = 1", "exec")
    assert ("exec", "a = 1") not in again._stored  # its code lives on in what was made of it
    again.compile("a = 1", "exec")  # the same text twice in a run: compiled the second time
    for _ in range(3):
        again.compile("int | None", "eval")  # annotations repeat: kept at hand
    assert (again.hits, again.misses) == (4, 1)
    assert again.save() is False  # the file holds everything already
    assert path.read_bytes() == written


def test_a_syntax_error_is_raised_and_not_cached(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path / "cache.bin")
    with pytest.raises(SyntaxError):
        cache.compile("def (", "exec")
    assert cache.misses == 0 and cache.save() is False


def test_an_unwritable_place_is_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("a file where a directory should be")
    cache = CompileCache(tmp_path / "file" / "cache.bin")
    cache.compile("z = 3", "exec")
    assert cache.save() is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_beyond_the_limit_only_the_last_run_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cache.bin"
    old = CompileCache(path)
    for n in range(3):
        old.compile(f"old = {n}", "exec")
    old.save()
    monkeypatch.setattr(_compile_cache, "MAX_ENTRIES", 4)
    new = CompileCache(path)
    new.compile("old = 0", "exec")
    new.compile("new = 1", "exec")
    new.compile("new = 2", "exec")
    new.save()
    kept = CompileCache(path)
    assert sorted(source for _, source in kept._stored) == ["new = 1", "new = 2", "old = 0"]


def test_a_second_run_of_the_command_compiles_nothing(tmp_path: Path) -> None:
    """The command saves what its run compiled; the same run again finds all of it there."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PI_HOST", "PYTHON"))}
    script = tmp_path / "replies.json"
    script.write_text('[{"text": "Hello"}]', encoding="utf-8")
    environ.update(
        PI_HOST_DIR=str(tmp_path / "agent"),
        PI_HOST_FAUX_SCRIPT=str(script),
        PYTHONPYCACHEPREFIX=str(tmp_path / "pycache"),
    )
    command = [sys.executable, "-c", "from pi_host.modes._cli import main; raise SystemExit(main())"]
    path = tmp_path / "agent" / "cache" / f"compiled-{sys.implementation.cache_tag}.bin"
    for run in range(2):
        result = subprocess.run(
            [*command, "--provider", "faux", "--no-session", "-p", "hi"],
            cwd=tmp_path,
            env=environ,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        assert (result.returncode, result.stdout) == (0, "Hello\n"), result.stderr
        if run == 0:
            written = path.read_bytes()
            assert len(CompileCache(path)._stored) > 100
    assert path.read_bytes() == written
