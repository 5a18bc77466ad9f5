# Sourced by run.sh and test.sh: sets UV to a uv executable, installing one if there is none.
#
# uv is never installed into the system Python: Debian's and Ubuntu's refuse `pip install`
# there (PEP 668, "externally-managed-environment"), and other Pythons should not be changed
# either. It goes into a virtual environment of its own under the user's cache folder, once.
pi_host_find_uv() {
  if command -v uv >/dev/null 2>&1; then
    UV=uv
    return
  fi
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/pi-host/uv-bootstrap"
  if [ -x "$dir/bin/uv" ]; then
    UV="$dir/bin/uv"
    return
  fi
  local python
  python="$(command -v python3 || command -v python || true)"
  if [ -z "$python" ]; then
    echo "error: no python3 on PATH; install Python 3.11+ or uv (https://docs.astral.sh/uv/)" >&2
    exit 1
  fi
  echo "uv is not installed: installing it into $dir (once)" >&2
  if ! "$python" -m venv "$dir" >/dev/null; then
    rm -rf "$dir"
    echo "error: $python cannot create a virtual environment (Debian/Ubuntu: apt install python3-venv);" \
      "or install uv yourself: https://docs.astral.sh/uv/" >&2
    exit 1
  fi
  if ! "$dir/bin/python" -m pip install --quiet --disable-pip-version-check uv; then
    rm -rf "$dir"
    echo "error: could not install uv with pip; install it yourself: https://docs.astral.sh/uv/" >&2
    exit 1
  fi
  UV="$dir/bin/uv"
}
pi_host_find_uv
