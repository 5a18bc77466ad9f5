"""pi-host's CHANGELOG.md: shipped inside the package and shown by ``/changelog``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pi_host.modes._interactive._changelog import (
    NO_ENTRIES,
    changelog_markdown,
    changelog_sections,
    read_changelog,
)

ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_package_reads_the_repository_changelog() -> None:
    text = read_changelog()
    assert text == (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in text


def test_the_wheel_carries_the_changelog_inside_the_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    force_include = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force_include["CHANGELOG.md"] == "pi_host/CHANGELOG.md"


def test_releases_are_shown_oldest_first_without_the_preamble() -> None:
    text = (
        "# Changelog\n\nIntro.\n\n## [Unreleased]\n\n- new\n\n"
        "## [0.2.0]\n\n- middle\n\n## [0.1.0]\n\n- first\n"
    )
    assert changelog_sections(text) == [
        "## [Unreleased]\n\n- new",
        "## [0.2.0]\n\n- middle",
        "## [0.1.0]\n\n- first",
    ]
    shown = changelog_markdown(text)
    assert shown.index("0.1.0") < shown.index("0.2.0") < shown.index("Unreleased")
    assert "Intro." not in shown


def test_a_changelog_without_releases_says_so() -> None:
    assert changelog_markdown("# Changelog\n\nNothing yet.\n") == NO_ENTRIES
    assert changelog_markdown("") == NO_ENTRIES


# -- the public API and its changelog ---------------------------------------------------------

PUBLIC_MODULES = ("pi_host", "pi_host.hookspecs", "pi_host.testing")
RECORD = ROOT / "tests" / "data" / "public_api.txt"


def public_names() -> set[str]:
    """Every public name, qualified: ``pi_host.Tool``, ``pi_host.testing.HostFactory`` …"""
    import importlib

    return {
        f"{module}.{name}" for module in PUBLIC_MODULES for name in importlib.import_module(module).__all__
    }


def recorded() -> tuple[set[str], set[str]]:
    """The names tests/data/public_api.txt records as public, and those it records as removed."""
    public: set[str] = set()
    removed: set[str] = set()
    for line in RECORD.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("removed:"):
            removed.add(line.removeprefix("removed:").strip())
        else:
            public.add(line)
    return public, removed


def mentions(text: str, qualified: str) -> bool:
    """Whether ``text`` names ``qualified`` in backticks: `Name`, `pi_host.Name`, or a code
    span that uses it (`ctx.plugin_settings(Model)`)."""
    name = qualified.rsplit(".", 1)[1]
    word = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)|(?<![\w]){re.escape(qualified)}(?!\w)")
    return any(word.search(span) for span in re.findall(r"`([^`\n]+)`", text))


def unreleased(text: str) -> str:
    sections = changelog_sections(text)
    return next((section for section in sections if section.startswith("## [Unreleased]")), "")


def test_no_public_name_appears_or_disappears_unrecorded() -> None:
    public, removed = recorded()
    current = public_names()
    appeared = sorted(current - public)
    disappeared = sorted(public - current)
    assert not appeared, (
        f"new public names {appeared}: add each to tests/data/public_api.txt and name it in "
        "CHANGELOG.md under [Unreleased] (### Added), or keep it private"
    )
    assert not disappeared, (
        f"public names gone {disappeared}: in tests/data/public_api.txt turn each line into "
        '"removed: NAME" and name it in CHANGELOG.md under [Unreleased] (### Removed)'
    )
    assert not removed & current, f"recorded as removed but public: {sorted(removed & current)}"


def test_every_public_name_has_a_changelog_line() -> None:
    text = read_changelog()
    missing = sorted(name for name in public_names() if not mentions(text, name))
    assert not missing, f"public names CHANGELOG.md never names (in backticks): {missing}"


def test_every_removed_name_is_announced_in_the_unreleased_section() -> None:
    section = unreleased(read_changelog())
    _, removed = recorded()
    missing = sorted(name for name in removed if not mentions(section, name))
    assert not missing, f"removed public names [Unreleased] does not name: {missing}"


def test_a_changelog_mention_is_a_code_span_naming_the_whole_name() -> None:
    assert mentions("- `Tool` and `pi_host.testing.HostFactory`", "pi_host.Tool")
    assert mentions("read with `ctx.plugin_settings(Model)`", "pi_host.Model")
    assert not mentions("a Tool without backticks", "pi_host.Tool")
    assert not mentions("`ToolResult`", "pi_host.Tool")
    assert not mentions("`ctx.Tool`", "pi_host.Tool")
    assert mentions("`pi_host.testing.Step`", "pi_host.testing.Step")


def test_provisional_names_are_public_and_say_so() -> None:
    import pi_host

    assert set(pi_host.__all__) >= pi_host._PROVISIONAL
    for name in sorted(pi_host._PROVISIONAL):
        value = getattr(pi_host, name)
        if isinstance(value, type) or callable(value):
            doc = getattr(value, "__doc__", "") or ""
            if getattr(value, "__module__", "").startswith("pi_host"):
                assert "Provisional public API" in doc, f"{name}'s docstring does not say it is provisional"
