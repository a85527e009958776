"""The ``mrtr`` command line: talk to any MCP server from a terminal or a script.

`main` parses the arguments, runs one command on the chosen event loop, and maps whatever
ended it to a stable exit code (`mrtr.cli._exit`). Only argparse and this package's light
modules load for ``--help``; the client, pydantic and httpx load when a command needs them.
"""

from __future__ import annotations

from mrtr.cli._main import main

__all__ = ["main"]
