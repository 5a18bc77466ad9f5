#!/usr/bin/env bash
# Run the agent. With no provider API key in the environment and no arguments this is the
# offline demo (examples/demo/tour.py: a real session on the scripted `faux` model that calls
# tools and answers from their results); otherwise pi-host with the arguments given.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/_uv.sh
source "$root/scripts/_uv.sh"
# Only what running needs: pi-host and its default plugins, not the dev tools. --inexact
# leaves alone what scripts/test.sh installed into the same environment.
"$UV" sync --locked --quiet --compile-bytecode --no-dev --extra default --inexact --project "$root"
"$UV" run --no-sync --project "$root" python -m compileall -q -j 0 "$root/pi_host" "$root/plugins" >/dev/null
if [ -z "${ANTHROPIC_API_KEY:-}${ANTHROPIC_OAUTH_TOKEN:-}${OPENAI_API_KEY:-}" ] && [ "$#" -eq 0 ]; then
  exec "$UV" run --no-sync --project "$root" python "$root/examples/demo/tour.py"
fi
exec "$UV" run --no-sync --project "$root" pi-host "$@"
