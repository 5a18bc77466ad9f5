"""pi-host's CHANGELOG.md: shipped inside the package and shown by ``/changelog``."""

from __future__ import annotations

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
