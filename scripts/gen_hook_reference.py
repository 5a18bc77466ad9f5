"""Generate ``docs/plugins/hooks.md`` from the hookspec docstrings (the single source of truth).

    uv run python scripts/gen_hook_reference.py           # rewrite the file
    uv run python scripts/gen_hook_reference.py --check   # exit 1 when the file is stale

For every ``pi_*`` hook, in firing order (:data:`pi_host.hookspecs.SPEC_MODULES`): an anchor,
the exact signature, a badge line from its contract (combination, sync or async, error
policy), the docstring turned into Markdown, and the first-party plugins that implement it.
:func:`problems` lists what the reference needs but a docstring lacks (a ``:param:`` per
argument, an example); ``tests/test_docs.py`` fails on any of them.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from pi_host.hookspecs import SPEC_MODULES, HookContract, Strategy, iter_hookspecs

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "plugins" / "hooks.md"

FIRST_PARTY: tuple[tuple[str, str], ...] = (
    ("pi_host.builtins.providers", "providers (essential)"),
    ("pi_host.builtins.faux", "faux (essential)"),
    ("pi_tools_fs", "pi-tools-fs"),
    ("pi_bash", "pi-bash"),
    ("pi_compaction", "pi-compaction"),
    ("pi_retry", "pi-retry"),
    ("pi_guard", "pi-guard"),
    ("pi_shell_hooks", "pi-shell-hooks"),
    ("pi_checkpoints", "pi-checkpoints"),
)
"""Plugins whose implementations the reference lists ("Implemented by")."""

_STRATEGY_TEXT = {
    Strategy.NOTIFY: "notify",
    Strategy.PIPELINE: "pipeline",
    Strategy.PIPELINE_UNTIL: "pipeline until handled",
    Strategy.VETO: "veto",
    Strategy.FIRST: "first result",
    Strategy.COLLECT: "collect",
    Strategy.SYNC: "setup (plain pluggy call)",
    Strategy.SYNC_FIRST: "first result, synchronous (plain pluggy call)",
}

_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj):`(~?)([^`]+)`")
_BULLET = re.compile(r"^(?:[-*]|\d+\.) ")
_FIELD = re.compile(r"^:(param|returns|raises)(?:\s+([^:]+))?:\s*(.*)$")


def _role(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


def inline(text: str) -> str:
    """reST inline markup to Markdown: roles and double backquotes become code spans."""
    text = _ROLE.sub(_role, text)
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def _blocks(docstring: str) -> Iterator[tuple[str, list[str]]]:
    """Split a docstring into ("text", lines) paragraphs and ("code", lines) literal blocks."""
    lines = inspect.cleandoc(docstring).splitlines()
    index = 0
    paragraph: list[str] = []
    while index < len(lines):
        line = lines[index]
        if line.rstrip().endswith("::"):
            head = line.rstrip()[:-2].rstrip()
            if head:
                paragraph.append(head + (":" if not head.endswith(":") else ""))
            if paragraph:
                yield "text", paragraph
                paragraph = []
            index += 1
            code: list[str] = []
            while index < len(lines) and (not lines[index].strip() or lines[index].startswith((" ", "\t"))):
                code.append(lines[index])
                index += 1
            yield "code", textwrap.dedent("\n".join(code)).strip("\n").splitlines()
            continue
        if not line.strip():
            if paragraph:
                yield "text", paragraph
                paragraph = []
        else:
            paragraph.append(line)
        index += 1
    if paragraph:
        yield "text", paragraph


def _fields(lines: list[str]) -> list[tuple[str, str | None, str]]:
    """``:param x: ...`` lines (with their continuation lines) as (kind, name, text)."""
    fields: list[tuple[str, str | None, str]] = []
    for line in lines:
        match = _FIELD.match(line.strip())
        if match:
            kind, name, text = match.groups()
            fields.append((kind, name.strip() if name else None, text.strip()))
        elif fields and line.startswith((" ", "\t")):
            kind, name, text = fields[-1]
            fields[-1] = (kind, name, f"{text} {line.strip()}")
        else:
            return []
    return fields


def docstring_markdown(docstring: str, *, code_language: str = "python") -> str:
    """A hookspec (or module) docstring as Markdown."""
    out: list[str] = []
    for kind, lines in _blocks(docstring):
        if kind == "code":
            language = code_language if any("import" in line or "def " in line for line in lines) else "text"
            out.append(f"```{language}\n" + "\n".join(lines) + "\n```")
            continue
        fields = _fields(lines)
        if fields:
            rows = []
            for field_kind, name, text in fields:
                if field_kind == "param":
                    rows.append(f"- `{name}`: {inline(text)}")
                elif field_kind == "returns":
                    rows.append(f"- **returns:** {inline(text)}")
                else:
                    rows.append(f"- **raises** `{name}`: {inline(text)}")
            out.append("**Parameters**\n\n" + "\n".join(rows))
            continue
        if lines[0].strip() == "Example:":
            out.append("**Example**")
            continue
        # "**Combination:** ..." and "**On error:** ..." share a reST paragraph but are two
        # facts; list items are one line each in Markdown.
        segments: list[list[str]] = []
        for line in lines:
            if not segments or line.startswith("**") or _BULLET.match(line):
                segments.append([])
            segments[-1].append(line.strip())
        text = ""
        for segment in segments:
            joined = inline(" ".join(segment))
            if text:
                text += "\n" if _BULLET.match(segment[0]) else "\n\n"
            text += joined
        out.append(text)
    return "\n\n".join(out)


def signature(function: Callable[..., Any]) -> str:
    sig = inspect.signature(function)
    params = ", ".join(
        f"{name}: {param.annotation}" if param.annotation is not inspect.Parameter.empty else name
        for name, param in sig.parameters.items()
    )
    returns = "" if sig.return_annotation is inspect.Signature.empty else f" -> {sig.return_annotation}"
    return f"def {function.__name__}({params}){returns}"


def badges(contract: HookContract) -> str:
    strategy = _STRATEGY_TEXT[contract.strategy]
    if contract.strategy is Strategy.SYNC:
        calling = "`def` only (called synchronously)" + (", historic" if contract.historic else "")
        on_error = "the plugin fails to load and is reported"
    elif contract.strategy is Strategy.SYNC_FIRST:
        calling = "`def` only (called synchronously)"
        on_error = "the call fails, naming the plugin (see the hook)"
    else:
        calling = "`def` or `async def`"
        on_error = (
            "fails closed (the call is blocked)"
            if contract.strategy is Strategy.VETO
            else "reported and skipped"
        )
    types = contract.result_types()
    returns = ", ".join(f"`{t.__name__}`" for t in types) if types else "nothing"
    if contract.strategy is Strategy.SYNC:
        timeout = ""
    elif contract.bounded:
        timeout = " · **Timeout:** the hook timeout applies"
    else:
        timeout = " · **Timeout:** none (abortable)"
    return (
        f"**Dispatch:** {strategy} · **Implementations:** {calling} · **On error:** {on_error} · "
        f"**Returns:** {returns}{timeout}"
    )


def implementers() -> dict[str, list[str]]:
    """hook name → the first-party plugins implementing it (those importable here)."""
    from pi_host.plugin import PluginManager

    found: dict[str, list[str]] = {}
    for module_name, label in FIRST_PARTY:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        pm = PluginManager()
        pm.register(module, name=label)
        for caller in pm.get_hookcallers(module) or ():
            if caller.name.startswith("pi_"):
                found.setdefault(caller.name, []).append(label)
    return found


def _module_title(module: ModuleType) -> str:
    return (module.__doc__ or module.__name__).strip().splitlines()[0].rstrip(".")


def _module_body(module: ModuleType) -> str:
    doc = inspect.cleandoc(module.__doc__ or "")
    rest = "\n".join(doc.splitlines()[1:]).strip()
    return docstring_markdown(rest) if rest else ""


def render() -> str:
    """The whole reference page."""
    users = implementers()
    specs = list(iter_hookspecs())
    out = [
        "<!-- Generated by scripts/gen_hook_reference.py from the hookspec docstrings. Do not edit:",
        "     change the docstrings in pi_host/hookspecs/ and run"
        " `uv run python scripts/gen_hook_reference.py`. -->",
        "",
        "# Hook reference",
        "",
        f"Every hook pi-host defines ({len(specs)} of them), grouped by lifecycle area and listed in the",
        "order they fire. Implement one with `@pi_host.hookimpl` on a function of the same name;",
        "declare only the arguments you use (pluggy passes those). The combination rules, sync and",
        "async implementations, ordering and error policy are explained in [the plugin guide](index.md).",
        "",
        "## Contents",
        "",
    ]
    for module in SPEC_MODULES:
        names = [function.__name__ for mod, function, _ in specs if mod is module]
        area = module.__name__.rsplit(".", 1)[-1]
        links = ", ".join(f"[`{name}`](#{name})" for name in names)
        out.append(f"- **[{_module_title(module)}](#area-{area})**: {links}")
    for module in SPEC_MODULES:
        area = module.__name__.rsplit(".", 1)[-1]
        out += ["", f'<a id="area-{area}"></a>', "", f"## {_module_title(module)}", ""]
        out.append(f"Module `{module.__name__}`.")
        body = _module_body(module)
        if body:
            out += ["", body]
        for mod, function, contract in specs:
            if mod is not module:
                continue
            name = function.__name__
            out += ["", f'<a id="{name}"></a>', "", f"### `{name}`", ""]
            out += ["```python", signature(function), "```", "", badges(contract), ""]
            out.append(docstring_markdown(function.__doc__ or ""))
            implemented = users.get(name)
            out += [
                "",
                f"*Implemented by:* {', '.join(implemented) if implemented else 'no first-party plugin'}",
            ]
    return "\n".join(out).rstrip() + "\n"


def problems() -> list[str]:
    """What each hook's docstring lacks for the reference: a ``:param:`` per argument, an example."""
    found = []
    for _, function, contract in iter_hookspecs():
        name = function.__name__
        doc = function.__doc__ or ""
        if not doc.strip():
            found.append(f"{name}: no docstring")
            continue
        described = set(re.findall(r"^\s*:param\s+(\w+):\s*\S", doc, flags=re.MULTILINE))
        for argument in inspect.signature(function).parameters:
            if argument not in described:
                found.append(f"{name}: argument {argument!r} has no ':param {argument}:' description")
        if "Example::" not in doc:
            found.append(f"{name}: no 'Example::' block")
        if "**Combination:**" not in doc or "**On error:**" not in doc:
            found.append(f"{name}: no '**Combination:**' / '**On error:**' lines")
        if contract is None:
            found.append(f"{name}: not declared with pi_host.hookspecs.hookspec")
    return found


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run `uv run python scripts/gen_hook_reference.py`")
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
