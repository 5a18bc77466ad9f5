"""``python -m tests.fakeservers.openai --port 0 --script steps.json``."""

from __future__ import annotations

import sys

from ._cli import main
from ._openai import OpenAIServer

if __name__ == "__main__":
    sys.exit(main(OpenAIServer))
