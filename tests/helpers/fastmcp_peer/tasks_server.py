"""A fastmcp server whose tools run as tasks (fastmcp-tasks), over streamable HTTP.

``python -m tests.helpers.fastmcp_peer.tasks_server`` binds 127.0.0.1 on a free port and
prints ``READY <url>``. It runs under whatever interpreter starts it: the interop test
uses ``MRTR_FASTMCP_PYTHON`` when set (a separate environment with fastmcp and
fastmcp-tasks), else its own.

- ``crunch(n)``: a task that needs no input.
- ``approve(item)``: a task that asks for a confirmation midway. fastmcp-tasks asks the
  guard way: the body *returns* an ``InputRequiredResult`` and is run again, with the
  answers on ``ctx.input_responses``, once the client sent them with ``tasks/update``.
- ``forever()``: a task that waits until it is cancelled.
"""

from __future__ import annotations

import socket
from typing import Any

import anyio
import mcp_types
from fastmcp import Context, FastMCP
from fastmcp_tasks import TasksExtension


def build() -> FastMCP:
    mcp = FastMCP("fastmcp-tasks-peer")
    mcp.add_extension(TasksExtension(url="memory://"))

    @mcp.tool(task=True)
    async def crunch(n: int) -> str:
        return f"crunched {n * 2}"

    @mcp.tool(task=True)
    async def approve(ctx: Context, item: str) -> Any:
        answer = (ctx.input_responses or {}).get("confirm")
        if answer is None:
            schema = {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"],
            }
            ask = mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message=f"Approve {item}?", requested_schema=schema
                )
            )
            return mcp_types.InputRequiredResult(input_requests={"confirm": ask})
        wire = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        ok = wire.get("action") == "accept" and (wire.get("content") or {}).get("ok") is True
        return f"{item}: {'approved' if ok else 'rejected'}"

    @mcp.tool(task=True)
    async def forever() -> str:
        await anyio.sleep_forever()
        return "never"

    return mcp


def main() -> None:
    import uvicorn

    app = build().http_app(path="/mcp")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"READY http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
