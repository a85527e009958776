"""A long-running tool as a task (the Tasks extension), kept in SQLite.

    python examples/mcpserver_tasks.py              # stdio
    python examples/mcpserver_tasks.py http         # streamable HTTP on 127.0.0.1:8000

``export_report`` first asks which dataset (an ordinary multi-round question, settled
before any task exists), then answers a client that declared the extension with a task
handle at once and works in the background: the client polls ``tasks/get``. Half way
it asks for an approval (``ctx.ask``): the task goes to ``input_required`` and resumes
when the client answers with ``tasks/update``. A client without the extension gets the
same tool as a plain call. Tasks and their results are kept in ``tasks.db`` (or
``$TASKS_DB``) for an hour; set ``$MRTR_STATE_KEY`` (32+ bytes) so that what they hold,
sealed with that key, can still be read after a restart.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Literal

import anyio
from pydantic import BaseModel

from mrtr.server import (
    AcceptedElicitation,
    Context,
    Elicit,
    MCPServer,
    RequestStateSecurity,
    Resolve,
    SqliteTaskStore,
)


class Dataset(BaseModel):
    dataset: Literal["sales", "support", "billing"]


class Approval(BaseModel):
    approve: bool


key = os.environ.get("MRTR_STATE_KEY")
app = MCPServer(
    "Reports",
    request_state_security=RequestStateSecurity(keys=[key]) if key else None,
    task_store=SqliteTaskStore(os.environ.get("TASKS_DB", "tasks.db")),
)


async def which_dataset() -> Elicit[Dataset]:
    return Elicit("Which dataset should the report cover?", Dataset)


@app.tool(task="optional")
async def export_report(
    ctx: Context,
    pick: Annotated[Dataset, Resolve(which_dataset, key="dataset")],
    rows: int = 1000,
) -> str:
    """Build a report of a dataset, asking for approval before it is published."""
    await anyio.sleep(min(rows, 100_000) / 100_000)  # the slow part (replay: runs again)
    go = await ctx.ask(Elicit(f"Publish the {pick.dataset} report ({rows} rows)?", Approval))
    if not isinstance(go, AcceptedElicitation) or not go.data.approve:
        return f"The {pick.dataset} report was built but not published."
    return f"Published the {pick.dataset} report ({rows} rows)."


if __name__ == "__main__":
    app.run("streamable-http" if sys.argv[1:] == ["http"] else "stdio")
