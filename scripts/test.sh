#!/usr/bin/env bash
# The whole test suite: set-up, lint, types, tests. Works on a fresh machine with Python 3.11+.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet uv
uv sync --locked --quiet --compile-bytecode
# Byte-compile the workspace too: with PYTHONDONTWRITEBYTECODE set (as on some machines) every
# pi-host subprocess of the suite would otherwise recompile the host from source.
uv run python -m compileall -q -j 0 pi_host plugins >/dev/null
uv run ruff check .
uv run ruff format --check .
uv run mypy pi_host plugins
uv run pytest -q -p no:cacheprovider "$@"
