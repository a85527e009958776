"""An MCPServer over stdio on trio (threads read stdin), whose sync tools can hold threads.

``hold`` blocks its worker thread until ``release`` (an async tool) is called, or for two
minutes at most; ``python -m tests.helpers.mrtr_servers.sync_tools`` serves it.
"""

from __future__ import annotations

import threading

import anyio

from mrtr.server import MCPServer

app = MCPServer("sync-tools")
gate = threading.Event()


@app.tool()
def hold() -> str:
    """Block a worker thread until released."""
    return "held" if gate.wait(120) else "never released"


@app.tool()
async def release() -> str:
    """Let every held call return."""
    gate.set()
    return "released"


if __name__ == "__main__":
    anyio.run(app.server.run_stdio_async, backend="trio")
