#!/usr/bin/env bash
# Run the agent. With no provider API key in the environment this is an offline demo on the
# scripted `faux` provider; with ANTHROPIC_API_KEY or OPENAI_API_KEY set it talks to the model.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet uv
uv sync --locked --quiet --compile-bytecode --project "$root"
uv run --project "$root" python -m compileall -q -j 0 "$root/pi_host" "$root/plugins" >/dev/null
if [ -z "${ANTHROPIC_API_KEY:-}${ANTHROPIC_OAUTH_TOKEN:-}${OPENAI_API_KEY:-}" ] && [ "$#" -eq 0 ]; then
  export PI_HOST_FAUX_SCRIPT="$root/examples/demo/faux-script.json"
  exec uv run --project "$root" pi-host --provider faux --no-session --tools read,bash,edit,write,ls -p "Give me a quick tour of this directory."
fi
exec uv run --project "$root" pi-host "$@"
