"""The task tools of `bench.tasks`, on mrtr's `MCPServer` and on fastmcp with fastmcp-tasks.

Run: ``python -m bench.servers.tasks_servers http --port P KIND [--db PATH]`` (uvicorn on
127.0.0.1), KIND one of ``mrtr-memory``, ``mrtr-sqlite`` (``--db``) and ``fastmcp``.

- ``crunch(n)``: a task that needs no input, on every kind.
- ``approve(item)`` (mrtr only): asks one question (``ctx.ask``), then answers; a task
  for a client that declared the extension, a plain multi-round call for one that did not.
- ``store_writes()`` (mrtr only, never a task): how many records the task store was given
  so far (``put`` calls), read between batches.
"""

from __future__ import annotations

import argparse
from typing import Any


def mrtr_app(kind: str, db: str | None) -> Any:
    from pydantic import BaseModel

    from mrtr.server import (
        AcceptedElicitation,
        Context,
        Elicit,
        MCPServer,
        MemoryTaskStore,
        SqliteTaskStore,
        TaskRecord,
    )

    inner: Any = (
        SqliteTaskStore(db or "bench-tasks.db") if kind == "mrtr-sqlite" else MemoryTaskStore()
    )

    class Counting:
        """The store, counting what it is asked to write."""

        def __init__(self) -> None:
            self.writes = 0

        async def put(self, record: TaskRecord) -> None:
            self.writes += 1
            await inner.put(record)

        def __getattr__(self, name: str) -> Any:
            return getattr(inner, name)

    store = Counting()
    app = MCPServer("bench-tasks", task_store=store)  # type: ignore[arg-type]

    class Confirm(BaseModel):
        ok: bool

    @app.tool(task="optional")
    async def crunch(n: int) -> str:
        return f"crunched {n * 2}"

    @app.tool(task="optional")
    async def approve(ctx: Context, item: str) -> str:
        answer = await ctx.ask(Elicit(f"Approve {item}?", Confirm, key="confirm"))
        ok = isinstance(answer, AcceptedElicitation) and answer.data.ok
        return f"{item}: {'approved' if ok else 'rejected'}"

    @app.tool()
    async def store_writes() -> int:
        return store.writes

    return app.streamable_http_app()


def fastmcp_app() -> Any:
    from fastmcp import FastMCP
    from fastmcp_tasks import TasksExtension

    mcp = FastMCP("bench-tasks")
    mcp.add_extension(TasksExtension(url="memory://"))

    @mcp.tool(task=True)
    async def crunch(n: int) -> str:
        return f"crunched {n * 2}"

    return mcp.http_app(path="/mcp")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["http"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("kind", choices=["mrtr-memory", "mrtr-sqlite", "fastmcp"])
    parser.add_argument("--db")
    args = parser.parse_args()
    import uvicorn

    app = fastmcp_app() if args.kind == "fastmcp" else mrtr_app(args.kind, args.db)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
