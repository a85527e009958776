"""An mrtr server for the out-of-process explanation tests, run as its own process.

``python -m tests.inspect.keyed_server NAME [AUDIENCE]`` (it says ``READY <url>`` once it
listens: `tests.helpers.launch`): keys from ``MRTR_KEYS`` (as a fleet
shares them), a 30 s ttl, and a wall clock the test moves by writing seconds into the
file ``INSPECT_CLOCK_FILE`` names (read on every look at the clock). Its state is bound
to a principal: the name the client gives itself (a test's stand-in for authentication,
never a real one).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

from mrtr.server import Elicit, MCPServer, RequestStateSecurity, Resolve, ServerRequestContext

TTL = 30.0


def clock() -> float:
    """Now, moved by the seconds the test wrote."""
    path = os.environ.get("INSPECT_CLOCK_FILE")
    text = Path(path).read_text(encoding="utf-8").strip() if path else ""
    return time.time() + (float(text) if text else 0.0)


def client_name(ctx: ServerRequestContext) -> str | None:
    """The principal the state is bound to: who the client says it is."""
    return None if ctx.client_info is None else ctx.client_info.name


def build(name: str, audience: str | None = None) -> MCPServer:
    """A server whose one tool asks once; its state lives `TTL` seconds."""
    security = RequestStateSecurity.from_env(
        "MRTR_KEYS", ttl=TTL, clock=clock, audience=audience, bind_principal=client_name
    )
    app = MCPServer(name, request_state_security=security)

    async def ask_ok() -> Elicit[bool]:
        return Elicit("Go ahead?", bool)

    @app.tool()
    async def deploy(name: str, ok: Annotated[bool, Resolve(ask_ok)]) -> str:
        return f"{name} deployed" if ok else "stopped"

    return app


if __name__ == "__main__":
    from tests.helpers.launch import serve_http

    serve_http(build(sys.argv[1], *sys.argv[2:]).streamable_http_app())
