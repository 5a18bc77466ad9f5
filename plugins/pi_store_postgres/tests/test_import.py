"""Installing the plugin must not slow every pi-host start: its entry point loads no psycopg."""

from __future__ import annotations

import subprocess
import sys


def test_the_entry_point_module_does_not_import_psycopg() -> None:
    script = (
        "import sys, pi_store_postgres\n"
        "assert 'psycopg' not in sys.modules, 'psycopg imported at plugin load'\n"
        "pi_store_postgres.PostgresStore\n"
        "assert 'psycopg' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
