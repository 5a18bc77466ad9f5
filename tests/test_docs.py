"""The documentation is complete and its examples work.

- ``docs/plugins/hooks.md`` is generated from the hookspec docstrings: it must be up to date,
  cover every ``pi_`` hook with its exact signature, and every hook must describe each
  argument and show an example.
- Examples in the Markdown pages are run. A comment before a fenced block says how:
  ``<!-- test: python -->`` (executed), ``<!-- test: pytest -->`` (a test module run with the
  testing kit), ``<!-- test: console -->`` (``$ command`` lines run, output lines matched,
  ``...`` matching anything), ``<!-- test: file NAME -->`` (written for the page's console
  examples), ``<!-- test: settings.json -->`` / ``<!-- test: models.json -->`` /
  ``<!-- test: keybindings.json -->`` (validated),
  ``<!-- include: PATH -->`` (must equal that file of the repository).
- Relative links point at files and anchors that exist.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from pi_host.hookspecs import iter_hookspecs
from pi_host.plugin import PluginManager
from tests.console_sessions import console_commands, expect_lines

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
HOOKS_MD = DOCS / "plugins" / "hooks.md"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_hook_reference", ROOT / "scripts" / "gen_hook_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _generator()


# -- the hook reference ---------------------------------------------------------------------------


def test_hook_reference_is_up_to_date() -> None:
    assert HOOKS_MD.read_text(encoding="utf-8") == gen.render(), (
        "docs/plugins/hooks.md is stale: run `uv run python scripts/gen_hook_reference.py`"
    )


def test_every_hook_documents_its_arguments_and_has_an_example() -> None:
    assert gen.problems() == []


def test_the_generator_reports_what_a_docstring_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_host.hookspecs import Strategy, get_contract, hookspec

    @hookspec(strategy=Strategy.NOTIFY)
    def pi_bad_hook(turn_index: int, ctx: object) -> None:
        """Something happened.

        :param turn_index: the turn.

        **Combination:** notify.
        **On error:** reported.
        """

    contract = get_contract(pi_bad_hook)
    monkeypatch.setattr(gen, "iter_hookspecs", lambda: iter([(None, pi_bad_hook, contract)]))
    assert gen.problems() == [
        "pi_bad_hook: argument 'ctx' has no ':param ctx:' description",
        "pi_bad_hook: no 'Example::' block",
    ]


def test_reference_covers_every_pi_hook_with_its_signature() -> None:
    text = HOOKS_MD.read_text(encoding="utf-8")
    pm = PluginManager()
    hooks = sorted(name for name in vars(pm.hook) if name.startswith("pi_"))
    assert len(hooks) == len(list(iter_hookspecs())) >= 40
    for name in hooks:
        caller = getattr(pm.hook, name)
        assert f'<a id="{name}"></a>' in text and f"### `{name}`" in text, f"{name} is not in hooks.md"
        params = ", ".join(caller.spec.argnames)
        signature = gen.signature(caller.spec.function)
        assert signature in text, f"hooks.md lacks the signature of {name}({params})"
        section = text.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        for argument in caller.spec.argnames:
            assert f"- `{argument}`:" in section, f"hooks.md does not describe {name}'s {argument!r}"
        assert "**Example**" in section and "@hookimpl" in section


def test_docstring_markup_becomes_markdown() -> None:
    doc = """Summary with ``code`` and :class:`~pi_host.hookspecs.Cancel`.

    :param text: the text,
        continued on a second line.
    :returns: :class:`pi_host.X` or ``None``.

    **Combination:** notify — all run.
    **On error:** reported.

    Example::

        from pi_host import hookimpl
    """
    markdown = gen.docstring_markdown(doc)
    assert "Summary with `code` and `Cancel`." in markdown
    assert "- `text`: the text, continued on a second line." in markdown
    assert "- **returns:** `pi_host.X` or `None`." in markdown
    assert "**Combination:** notify — all run.\n\n**On error:** reported." in markdown
    assert "**Example**\n\n```python\nfrom pi_host import hookimpl\n```" in markdown
    items = gen.docstring_markdown("Orders:\n\n- one: ``a`` →\n  ``b``;\n- two.\n")
    assert items == "Orders:\n\n- one: `a` → `b`;\n- two."


def test_lifecycle_diagram_shows_every_hook() -> None:
    page = (DOCS / "plugins" / "index.md").read_text(encoding="utf-8")
    diagram = page.split("<!-- lifecycle -->", 1)[1].split("```", 2)[1]
    for _, function, _ in iter_hookspecs():
        assert re.search(rf"\b{function.__name__}\b", diagram), f"{function.__name__} is not in the diagram"


# -- examples in the pages ---------------------------------------------------------------------

_MARKER = re.compile(r"^<!--\s*(test|include):\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    kind: str
    argument: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(DOCS)}:{self.line}"


def _examples() -> list[Example]:
    found = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for index, line in enumerate(lines):
            match = _MARKER.match(line)
            if not match:
                continue
            start = index + 1
            assert lines[start].startswith("```"), f"{page}:{start + 1}: a marker must precede a code block"
            end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
            code = "\n".join(lines[start + 1 : end]) + "\n"
            action, argument = match.groups()
            kind, _, rest = argument.partition(" ")
            if action == "include":
                found.append(Example(page, start, "include", argument, code))
            else:
                found.append(Example(page, start, kind, rest.strip(), code))
    return found


EXAMPLES = _examples()


def _of(kind: str) -> list[Example]:
    return [example for example in EXAMPLES if example.kind == kind]


def test_the_docs_have_tested_examples() -> None:
    kinds = {example.kind for example in EXAMPLES}
    assert {
        "python",
        "pytest",
        "console",
        "file",
        "include",
        "settings.json",
        "models.json",
        "keybindings.json",
    } <= kinds


@pytest.mark.parametrize("example", _of("python"), ids=lambda e: e.id)
def test_python_examples_run(example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(example.code, str(example.page), "exec"), {"__name__": "docs_example"})


@pytest.mark.parametrize("example", _of("include"), ids=lambda e: e.id)
def test_included_files_match_the_repository(example: Example) -> None:
    source = ROOT / example.argument
    assert example.code == source.read_text(encoding="utf-8"), (
        f"{example.id} shows an outdated copy of {example.argument}; paste the current file"
    )


@pytest.mark.parametrize("example", _of("settings.json"), ids=lambda e: e.id)
def test_settings_examples_are_valid(example: Example, tmp_path: Path) -> None:
    from pi_host.resources import SettingsManager

    (tmp_path / "settings.json").write_text(example.code)
    manager = SettingsManager.load(tmp_path, tmp_path, project_trusted=False)
    assert manager.issues == ()
    data = json.loads(example.code)
    assert manager.settings.default_model == data.get("defaultModel")


@pytest.mark.parametrize("example", _of("models.json"), ids=lambda e: e.id)
def test_models_json_examples_load(example: Example, tmp_path: Path) -> None:
    from pi_host.providers._registry import ModelRegistry

    (tmp_path / "models.json").write_text(example.code)
    registry = ModelRegistry.create(tmp_path, env={})
    assert not registry.error, registry.error
    for provider, config in json.loads(example.code)["providers"].items():
        for model in config.get("models", []):
            assert registry.find(provider, model["id"]) is not None


@pytest.mark.parametrize("example", _of("keybindings.json"), ids=lambda e: e.id)
def test_keybindings_examples_load(example: Example, tmp_path: Path) -> None:
    from pi_host.modes._interactive._keymap import load_keymap

    (tmp_path / "keybindings.json").write_text(example.code)
    keymap = load_keymap(tmp_path / "keybindings.json")
    assert keymap.problems == ()
    for action_id, keys in json.loads(example.code).items():
        assert keymap.keys_for(action_id) == ((keys,) if isinstance(keys, str) else tuple(keys))


def test_keybindings_page_lists_every_action_with_its_defaults() -> None:
    from pi_host.modes._interactive._keymap import ACTIONS

    rows = {}
    for line in (DOCS / "user-guide" / "keybindings.md").read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `([\w.]+)` \| (.*?) \|", line)
        if match:
            rows[match.group(1)] = re.findall(r"`([^`]+)`", match.group(2))
    assert rows == {action.id: list(action.default_keys) for action in ACTIONS}


def _pages_with(kind: str) -> list[Path]:
    return sorted({example.page for example in _of(kind)})


@pytest.mark.parametrize("page", _pages_with("console"), ids=lambda p: str(p.relative_to(DOCS)))
def test_console_examples_run(page: Path, tmp_path: Path) -> None:
    """A page's files and commands, in order, in a fresh directory with an isolated home."""
    home, agent = tmp_path / "home", tmp_path / "home" / ".pi-host"
    work = tmp_path / "work"
    for directory in (agent, work):
        directory.mkdir(parents=True)
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PI_HOST") and k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    }
    environ.update(
        HOME=str(home), NO_COLOR="1", PATH=f"{Path(sys.executable).parent}{os.pathsep}{environ['PATH']}"
    )
    for example in (e for e in EXAMPLES if e.page == page and e.kind in ("file", "console")):
        if example.kind == "file":
            target = work / example.argument
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(example.code, encoding="utf-8")
            continue
        for command, expected in console_commands(example.code):
            result = subprocess.run(
                ["bash", "-c", command],
                cwd=work,
                env=environ,
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
            expect_lines(result.stdout + result.stderr, expected, f"{example.id}: `{command}`")


def test_pytest_examples_pass(pytester: pytest.Pytester) -> None:
    """Every ``<!-- test: pytest -->`` block as a test module of a plugin author's suite."""
    examples = _of("pytest")
    assert examples
    pytester.makeconftest('pytest_plugins = ["pi_host.testing"]')
    pytester.makeini(
        textwrap.dedent(
            """
            [pytest]
            asyncio_mode = auto
            asyncio_default_fixture_loop_scope = function
            """
        )
    )
    expected = 0
    for number, example in enumerate(examples):
        pytester.makepyfile(**{f"test_doc_{number}": example.code})
        expected += len(re.findall(r"^(?:async )?def test_", example.code, flags=re.MULTILINE))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    assert result.ret == 0, f"{result.stdout.str()}\n{result.stderr.str()}"
    result.assert_outcomes(passed=expected)


# -- completeness and links ----------------------------------------------------------------------


def test_testing_page_mentions_every_public_name_of_the_kit() -> None:
    import pi_host.testing

    page = (DOCS / "plugins" / "testing.md").read_text(encoding="utf-8")
    missing = [name for name in pi_host.testing.__all__ if f"`{name}" not in page]
    assert not missing, f"docs/plugins/testing.md does not mention {missing}"


def test_distribution_page_documents_every_field() -> None:
    from dataclasses import fields

    from pi_host import Distribution

    page = (DOCS / "distributions.md").read_text(encoding="utf-8")
    assert [f.name for f in fields(Distribution) if f"`{f.name}`" not in page] == []


def _slug(heading: str) -> str:
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', text))
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            anchors.add(_slug(line.lstrip("#")))
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        assert destination.exists(), f"{page.relative_to(DOCS)} links to missing {target}"
        if anchor and destination.suffix == ".md":
            assert anchor in _anchors(destination), (
                f"{page.relative_to(DOCS)} links to missing anchor {target}"
            )


def test_dispatcher_has_a_typed_method_for_every_lifecycle_hook_but_the_events() -> None:
    """As tox keeps one typed method per hook: ``pi_tool_call`` is ``Dispatcher.tool_call``.

    The hooks of agent events are the exception: the generic bridge dispatches them by name."""
    import typing

    from pi_host.messages import AgentEvent
    from pi_host.plugin import Dispatcher

    events = {f"pi_{event.model_fields['type'].default}" for event in typing.get_args(AgentEvent)}
    missing = [
        function.__name__
        for _, function, contract in iter_hookspecs()
        if contract.strategy.is_async
        and function.__name__ not in events
        and not callable(getattr(Dispatcher, function.__name__[3:], None))
    ]
    assert missing == []
