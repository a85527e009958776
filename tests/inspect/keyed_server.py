"""An mrtr server for the out-of-process explanation tests, run as its own process.

``python -m tests.inspect.keyed_server NAME PORT [AUDIENCE]``: keys from ``MRTR_KEYS`` (as a fleet
shares them), a 30 s ttl, and a wall clock the test moves by writing seconds into the
file ``INSPECT_CLOCK_FILE`` names (read on every look at the clock).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

from mrtr.server import Elicit, MCPServer, RequestStateSecurity, Resolve

TTL = 30.0


def clock() -> float:
    """Now, moved by the seconds the test wrote."""
    path = os.environ.get("INSPECT_CLOCK_FILE")
    text = Path(path).read_text(encoding="utf-8").strip() if path else ""
    return time.time() + (float(text) if text else 0.0)


def build(name: str, audience: str | None = None) -> MCPServer:
    """A server whose one tool asks once; its state lives `TTL` seconds."""
    security = RequestStateSecurity.from_env("MRTR_KEYS", ttl=TTL, clock=clock, audience=audience)
    app = MCPServer(name, request_state_security=security)

    async def ask_ok() -> Elicit[bool]:
        return Elicit("Go ahead?", bool)

    @app.tool()
    async def deploy(name: str, ok: Annotated[bool, Resolve(ask_ok)]) -> str:
        return f"{name} deployed" if ok else "stopped"

    return app


if __name__ == "__main__":
    build(sys.argv[1], *sys.argv[3:]).run_http(port=int(sys.argv[2]))
