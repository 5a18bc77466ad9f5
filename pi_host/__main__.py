"""``python -m pi_host``: the ``pi-host`` command, for workers that know only an interpreter."""

from __future__ import annotations

import sys

from pi_host.modes._cli import main

if __name__ == "__main__":
    sys.exit(main())
