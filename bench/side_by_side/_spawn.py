"""Start one agent as the child of this small process and report what the agent alone cost.

Run by :class:`._measure.MeasuredProcess` as ``python -I -S _spawn.py REPORT_FD ARGV...``. The
agent inherits stdin, stdout, stderr, the environment and the working directory; once it has
exited, one line ``wall_s cpu_s max_rss_kib exit_code`` goes to ``REPORT_FD`` and this process
exits with the agent's status.

Why a process in between: on Linux a child's peak resident set (``ru_maxrss``) starts from the
resident set of the process it was forked from, which the kernel carries across ``exec``. Spawned
straight from the runner, every agent's peak was at least the runner's own (21 MiB when
``pi-host --version`` runs, 12 MiB on its own; 31 MiB later in a run). This process imports
nothing beyond the interpreter's core, so the floor it passes on is a few MiB, below any agent's.
Wall time is taken here too, around the agent alone, not this process's start.
"""

import os
import sys
import time


def main() -> None:
    report = int(sys.argv[1])
    argv = sys.argv[2:]
    started = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ)
    _pid, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    os.write(report, f"{wall} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss} {code}\n".encode())
    os.close(report)
    # A signal's death is reported as 128 + the signal, as shells do; the report has the truth.
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
