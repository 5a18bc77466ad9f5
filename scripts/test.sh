#!/usr/bin/env bash
# The whole test suite: set-up, lint, types, tests. Works on a fresh machine with Python 3.11+.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet uv
uv sync --locked --quiet
uv run ruff check .
uv run ruff format --check .
uv run mypy pi_host plugins
uv run pytest -q -p no:cacheprovider "$@"
