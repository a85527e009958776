"""``python -m mrtr``: the ``mrtr`` command line (see `mrtr.cli`)."""

from __future__ import annotations

import sys

from mrtr.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
