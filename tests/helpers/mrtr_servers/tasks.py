"""An mrtr `MCPServer` whose tools run as tasks (the tasks extension), for the client's tests.

``python -m tests.helpers.mrtr_servers.tasks http`` serves streamable HTTP on 127.0.0.1 and
prints ``READY <url>``: the command-line tests follow its tasks from several processes.
"""

from __future__ import annotations

import sys

import anyio
from pydantic import BaseModel

from mrtr.server import AcceptedElicitation, Context, Elicit, MCPServer, MemoryTaskStore
from tests.helpers.mrtr_servers import serve


class Confirm(BaseModel):
    confirm: bool


def build() -> MCPServer:
    app = MCPServer("tasker", task_store=MemoryTaskStore())

    @app.tool(task="optional")
    async def crunch(n: int) -> str:
        """A task that needs no input: it works, then completes."""
        return f"crunched {n * 2}"

    @app.tool(task="required")
    async def approve(ctx: Context, item: str = "report") -> str:
        """Ask for an approval in the background, then say what was decided."""
        answer = await ctx.ask(Elicit(f"Approve {item}?", Confirm, key="confirm"))
        approved = isinstance(answer, AcceptedElicitation) and answer.data.confirm
        return f"{item}: {'approved' if approved else 'rejected'}"

    @app.tool()
    async def plain_ask(ctx: Context) -> str:
        """Never a task: its question is a round of an ordinary multi-round call."""
        answer = await ctx.ask(Elicit("Go on?", Confirm, key="confirm"))
        return "went on" if isinstance(answer, AcceptedElicitation) else "stopped"

    @app.tool(task="required")
    async def forever() -> str:
        """Never finishes on its own: cancel it."""
        await anyio.sleep_forever()
        return "never"

    return app


def main() -> None:
    serve(build(), sys.argv[1] if len(sys.argv) > 1 else "stdio")


if __name__ == "__main__":
    main()
