#!/usr/bin/env bash
# The whole test suite: set-up, lint, types, tests. Works on a fresh machine with Python 3.11+.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/_uv.sh
source scripts/_uv.sh
# CI also installs ripgrep and fd, so the file tools' tests compare both search back-ends.
if [ "${CI:-}" = "true" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
  && ! command -v rg >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq ripgrep fd-find >/dev/null) \
    || echo "note: could not install ripgrep/fd; their back-end tests will be skipped" >&2
fi
# CI also installs the PostgreSQL server, so pi-store-postgres's tests run against a real one.
if [ "${CI:-}" = "true" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
  && ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq postgresql >/dev/null) \
    || { echo "error: could not install PostgreSQL for the session-store tests" >&2; exit 1; }
fi
"$UV" sync --locked --quiet --compile-bytecode
# Byte-compile the workspace too: with PYTHONDONTWRITEBYTECODE set (as on some machines) every
# pi-host subprocess of the suite would otherwise recompile the host from source.
"$UV" run python -m compileall -q -j 0 pi_host plugins >/dev/null
"$UV" run ruff check .
"$UV" run ruff format --check .
"$UV" run mypy pi_host plugins
"$UV" run pytest -q -p no:cacheprovider "$@"
