"""``pi-host plugins info NAME [--json]``: one plugin, and where it comes from."""

from __future__ import annotations

import importlib.metadata
import json
import re
import sys
from typing import Any

__all__ = ["run_plugin_info"]

_USAGE = "Usage: pi-host plugins info NAME [--json]"
_CONVENTION_KEYWORD = "pi-host-plugin"


def run_plugin_info(argv: list[str]) -> int:
    """Show the plugin ``argv[0]`` (short name or distribution name); returns the exit status."""
    names = [arg for arg in argv if not arg.startswith("-")]
    if len(names) != 1 or any(arg != "--json" for arg in argv if arg.startswith("-")):
        print(_USAGE, file=sys.stderr)
        return 2
    from pi_host.runtime import Host
    from pi_host.runtime._settings import settings_disabled_plugins

    wanted = names[0]
    host = Host.load(disabled=settings_disabled_plugins())
    normalised = _normalise(wanted)
    infos = host.plugin_manager.list_plugins()
    matches = [
        info
        for info in infos
        if info.name == wanted or (info.distribution and _normalise(info.distribution) == normalised)
    ]
    if not matches:
        print(
            f"Error: no plugin named {wanted!r} (pi-host plugins list --all shows every plugin)",
            file=sys.stderr,
        )
        return 1
    details = [
        {**_details(info.model_dump(mode="json")), "settings": _settings(host, info.name)} for info in matches
    ]
    if "--json" in argv:
        print(json.dumps(details if len(details) > 1 else details[0], indent=2))
        return 0
    for index, detail in enumerate(details):
        if index:
            print()
        _print(detail)
    return 0


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _details(info: dict[str, Any]) -> dict[str, Any]:
    """The listing's row plus what the distribution's metadata says."""
    detail = dict(info)
    if info["source"] != "entrypoint" or not info.get("distribution"):
        return detail
    try:
        dist = importlib.metadata.distribution(info["distribution"])
    except importlib.metadata.PackageNotFoundError:
        return detail
    metadata = dist.metadata
    entry = next(
        (ep for ep in dist.entry_points if ep.group == "pi_host.plugins" and ep.name == info["name"]), None
    )
    keywords = [
        part.strip() for part in ",".join(metadata.get_all("Keywords") or []).split(",") if part.strip()
    ]
    direct_url = dist.read_text("direct_url.json")
    detail.update(
        summary=(metadata.get_all("Summary") or [None])[0],
        module=entry.value if entry is not None else None,
        location=str(dist.locate_file("")),
        requires=list(dist.requires or []),
        urls=metadata.get_all("Project-URL") or [],
        editable=_editable(direct_url),
        follows_convention=_CONVENTION_KEYWORD in keywords,
        uninstall=f"pi-host uninstall {info['distribution']}",
    )
    return detail


def _settings(host: Any, plugin: str) -> list[dict[str, Any]]:
    """The settings sections ``plugin`` declared, each with its keys, types and defaults."""
    from pi_host.runtime._plugin_settings import section_fields

    return [
        {
            "key": section.key,
            "description": section.description,
            "fields": [
                {"key": f.key, "type": f.type, "default": f.default, "description": f.description}
                for f in section_fields(section)
            ],
        }
        for key, section in host.settings_sections.items()
        if host.settings_section_sources.get(key) == plugin
    ]


def _editable(direct_url: str | None) -> bool:
    """PEP 610's ``direct_url.json`` says whether the installation is editable."""
    if not direct_url:
        return False
    try:
        data = json.loads(direct_url)
    except ValueError:
        return False
    return isinstance(data, dict) and bool(data.get("dir_info", {}).get("editable"))


def _print(detail: dict[str, Any]) -> None:
    version = f" {detail['version']}" if detail.get("version") else ""
    print(detail["name"])
    rows = [
        ("distribution", f"{detail['distribution']}{version}" if detail.get("distribution") else None),
        ("summary", detail.get("summary")),
        ("source", detail["source"]),
        ("status", detail["status"] + (f" ({detail['error']})" if detail.get("error") else "")),
        ("module", detail.get("module")),
        ("hooks", ", ".join(detail["hooks"]) or None),
        ("installed in", detail.get("location")),
        ("editable", "yes" if detail.get("editable") else None),
        ("requires", ", ".join(detail.get("requires") or []) or None),
        ("urls", ", ".join(detail.get("urls") or []) or None),
        ("uninstall", detail.get("uninstall")),
    ]
    for label, value in rows:
        if value:
            print(f"  {label + ':':<14}{value}")
    for section in detail.get("settings") or []:
        about = f" — {section['description']}" if section["description"] else ""
        print(f"  {'settings:':<14}{section['key']}{about}")
        width = max((len(field["key"]) for field in section["fields"]), default=0) + 2
        for field in section["fields"]:
            default = json.dumps(field["default"])
            print(f"  {'':<14}  {field['key']:<{width}}{field['type']}, default {default}")
