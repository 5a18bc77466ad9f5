"""A way to end the interactive mode from outside its key handling: a signal handler's.

The command line watches SIGTERM and SIGHUP for the mode's whole run, shutdown included (see
pi_host.modes._signals); the terminal UI, which alone knows how to leave the screen, waits on
a :class:`QuitRequest` and quits as ``/quit`` does.
"""

from __future__ import annotations

import anyio

__all__ = ["QuitRequest"]


class QuitRequest:
    """Set once, from the event loop's thread, to end the interactive mode.

    ``terminal_gone``: the terminal hung up (SIGHUP), so the mode writes as little as it can on
    the way out; whatever it still writes fails harmlessly (see ``SynchronizedOutput``).
    """

    def __init__(self) -> None:
        self._event = anyio.Event()
        self.terminal_gone = False

    def request(self, *, terminal_gone: bool = False) -> None:
        """Ask the mode to quit; a request made before the screen is up ends it as it starts."""
        self.terminal_gone = self.terminal_gone or terminal_gone
        self._event.set()

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()
