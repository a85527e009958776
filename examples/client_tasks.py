"""A client of the tasks extension: a call the server runs in the background.

Run: python examples/client_tasks.py

The server here is an in-process `MCPServer` whose tool runs as a task (needs
``pip install 'mrtr[server]'``); point the Client at a URL (such as
``examples/mcpserver_tasks.py http``) to talk to a real one. Two ways to follow a task:

1. ``Client(tasks=True)``: `call_tool` polls the task, answers its questions through the
   same callbacks as every multi-round call, and returns the result. `on_task` shows
   its life.
2. By hand: ``session.call_tool(..., allow_task=True)`` gives the `Task` handle, a value
   that can be saved as JSON and finished later, by any process that reaches the server.
"""

from __future__ import annotations

import anyio
from pydantic import BaseModel

from mrtr import Client, ClientRequestContext, Task
from mrtr.server import AcceptedElicitation, Context, Elicit, MCPServer, MemoryTaskStore
from mrtr.types import CallToolResult, ElicitRequestParams, ElicitResult, TextContent

app = MCPServer("Reports", task_store=MemoryTaskStore())


class Approval(BaseModel):
    approve: bool


@app.tool(task="optional")
async def export_report(ctx: Context, dataset: str) -> str:
    """Build a report, asking for approval before it is published."""
    go = await ctx.ask(Elicit(f"Publish the {dataset} report?", Approval, key="publish"))
    if isinstance(go, AcceptedElicitation) and go.data.approve:
        return f"Published the {dataset} report."
    return f"The {dataset} report was not published."


async def approve(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    print(f"  asked by task {ctx.task_id is not None}: {params.message}")
    return ElicitResult(action="accept", content={"approve": True})


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    return block.text if isinstance(block, TextContent) else repr(block)


def show(task: Task) -> None:
    waiting = f", waiting for {', '.join(task.requests)}" if task.requests else ""
    print(f"  task {task.state}{waiting}")


async def main() -> None:
    print("1. call_tool follows the task:")
    async with Client(app, tasks=True, elicitation_callback=approve, on_task=show) as client:
        result = await client.call_tool("export_report", {"dataset": "sales"})
        print(text_of(result))

    print("2. by hand, with the handle saved and read back:")
    async with Client(app, capabilities={"elicitation": {"form": {}}}) as client:
        task = await client.session.call_tool(
            "export_report", {"dataset": "support"}, allow_task=True
        )
        assert isinstance(task, Task)
        saved = (await task.wait(client)).to_json()  # a file, a row, a queue message
        task = Task.from_json(saved)
        print(f"  waiting for {list(task.requests)}")
        task = await task.answer(
            client, {"publish": {"action": "accept", "content": {"approve": True}}}
        )
        print(text_of(await task.result(client)))


if __name__ == "__main__":
    anyio.run(main)
