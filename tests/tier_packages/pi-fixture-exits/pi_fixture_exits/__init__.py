"""A plugin that ends the interpreter at import: pi-host must contain it and name it."""

import sys

sys.exit(3)
