"""A plugin the tests disable: importing it leaves a marker file, so a test can prove it never was."""

from __future__ import annotations

from pathlib import Path

Path(__file__).with_name("IMPORTED").write_text("imported\n")
