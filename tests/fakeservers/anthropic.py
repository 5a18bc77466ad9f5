"""``python -m tests.fakeservers.anthropic --port 0 --script steps.json``."""

from __future__ import annotations

import sys

from ._anthropic import AnthropicServer
from ._cli import main

if __name__ == "__main__":
    sys.exit(main(AnthropicServer))
