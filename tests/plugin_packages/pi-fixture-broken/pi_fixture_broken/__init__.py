"""A plugin whose import fails: it needs a dependency nobody installed."""

from __future__ import annotations

import pi_fixture_missing_dependency  # noqa: F401
