"""The plugin's surface: pi's tool definitions, registration, entry point, public imports."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pi_tools_fs
import pytest
from pi_tools_fs import TOOLS

from pi_host import Tool
from pi_host.testing import assert_entry_point, assert_public_imports_only

# Dumped from pi 0.73.1's createXToolDefinition(): the interface models were tuned on.
PI_DEFINITIONS = json.loads((Path(__file__).parent / "data" / "pi-0.73-tool-definitions.json").read_text())


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_definitions_match_pi(tool: Tool[Any]) -> None:
    expected = PI_DEFINITIONS[tool.name]
    spec = tool.spec()
    assert spec.name == expected["name"]
    assert tool.label == expected["label"]
    assert spec.description == expected["description"]
    # Same keys in the same order, as TypeBox writes them.
    assert json.dumps(spec.parameters) == json.dumps(expected["parameters"])
    assert tool.prompt_snippet == expected["promptSnippet"]
    assert list(tool.prompt_guidelines) == expected.get("promptGuidelines", [])
    assert (tool.prepare_arguments is not None) == expected["hasPrepare"]


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_written_schema_is_the_generated_one(tool: Tool[Any]) -> None:
    # The schemas are literals so that no process pays pydantic's schema generation; they
    # must stay exactly what the parameter models generate, key order included.
    assert tool.parameters_schema is not None
    generated = dataclasses.replace(tool, parameters_schema=None).spec().parameters
    assert json.dumps(tool.spec().parameters) == json.dumps(generated)


def test_tools_in_pi_order() -> None:
    assert [tool.name for tool in TOOLS] == ["read", "write", "edit", "grep", "find", "ls"]


def test_registers_through_the_hook() -> None:
    from pi_host.plugin import PluginManager

    manager = PluginManager()
    manager.register(pi_tools_fs, name="tools_fs")
    registered: list[Any] = []
    manager.hook.pi_register_tools(register=registered.append, config=None)
    assert registered == list(TOOLS)


def test_entry_point() -> None:
    assert_entry_point("tools_fs", pi_tools_fs)


def test_imports_only_the_public_pi_host_api() -> None:
    assert_public_imports_only(pi_tools_fs, top_level_only=True)


def test_public_names_are_sorted_and_exported() -> None:
    assert pi_tools_fs.__all__ == sorted(pi_tools_fs.__all__, key=lambda n: (not n.isupper(), n))
    for name in pi_tools_fs.__all__:
        assert hasattr(pi_tools_fs, name)


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = code + "\nimport sys\nprint('\\n'.join(sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(result.stdout.split())


# How many of the plugin's modules registering the tools and describing them to a model may
# load (four of 22 when it was set: the package, the definitions, their parameters and the
# truncation limits): the implementations (walker, glob compiler, diff, ripgrep and fd
# drivers …) load on each tool's first call.
_DEFINITIONS_BUDGET = 5


def test_loading_the_plugin_imports_no_tool_implementation() -> None:
    modules = _modules_after(
        "import pi_tools_fs\n"
        "from pi_host.plugin import PluginManager\n"
        "manager = PluginManager()\n"
        "manager.register(pi_tools_fs, name='tools_fs')\n"
        "tools = []\n"
        "manager.hook.pi_register_tools(register=tools.append, config=None)\n"
        "specs = [tool.spec() for tool in tools]\n"
    )
    own = sorted(name for name in modules if name.startswith("pi_tools_fs"))
    assert "pi_tools_fs._definitions" in own  # the tools were described
    assert len(own) <= _DEFINITIONS_BUDGET, own
    assert {"difflib", "subprocess"}.isdisjoint(modules)


def test_importing_the_entry_point_stays_light() -> None:
    # --help imports plugin modules only to read their flags.
    modules = _modules_after("import pi_tools_fs")
    assert {name for name in modules if name.startswith("pi_tools_fs")} == {"pi_tools_fs"}
    assert "pi_host.runtime" not in modules
    assert "pi_host.agent" not in modules


def test_write_and_edit_declare_the_file_they_write(tmp_path: Path) -> None:
    tools = {tool.name: tool for tool in TOOLS}
    home = str(Path.home())
    for name, arguments in (
        ("write", {"path": "@src/a.py", "content": "x"}),
        ("edit", {"path": "src/a.py", "edits": [{"oldText": "a", "newText": "b"}]}),
    ):
        tool = tools[name]
        assert tool.writes is not None
        params = tool.validate_arguments(arguments)
        assert tool.writes(params, str(tmp_path)) == [str(tmp_path / "src" / "a.py")]
    params = tools["write"].validate_arguments({"path": "~/notes.md", "content": ""})
    assert tools["write"].writes is not None
    assert tools["write"].writes(params, str(tmp_path)) == [f"{home}/notes.md"]
    # The tools that only read declare nothing.
    assert all(tools[name].writes is None for name in ("read", "grep", "find", "ls"))
