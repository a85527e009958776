"""A tool that asks with dependencies: `MCPServer` builds the questions for you.

    python examples/mcpserver_provision.py              # stdio
    python examples/mcpserver_provision.py --http 8000  # http://127.0.0.1:8000/mcp

``provision`` needs a region and a confirmation. Each is a resolver that returns a
question (`Elicit`); on a 2026-07-28 client both go out in one round (an
`InputRequiredResult` with keys ``ask_region`` and ``ask_confirm``), the answers come back
on the retry, and the body runs once, with both. On a 2025-11-25 client the same code asks
over the back-channel, in one call. The state between rounds is sealed (a key made at
start-up). ``pip install 'mrtr[server]'``.
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal

from pydantic import BaseModel

from mrtr.server import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)

app = MCPServer("Provisioner", version="1.0.0")


class Region(BaseModel):
    region: Literal["eu-west-1", "us-east-1", "ap-south-1"]


async def ask_region(name: str) -> Region | Elicit[Region]:
    """Ask where the database goes (a resolver: it gets the tool's `name` by name)."""
    if name.startswith("eu-"):
        return Region(region="eu-west-1")  # no question needed: a value is an answer
    return Elicit(f"Which region should {name!r} live in?", Region)


async def ask_confirm(name: str, region: Annotated[Region, Resolve(ask_region)]) -> Elicit[bool]:
    """Ask for a yes/no (a scalar question: a one-field form, unwrapped)."""
    return Elicit(f"Create {name!r} in {region.region}?", bool)


@app.tool()
async def provision(
    name: str,
    region: Annotated[Region, Resolve(ask_region)],
    confirm: Annotated[ElicitationResult[bool], Resolve(ask_confirm)],
) -> str:
    """Provision a database. Asks where, then whether."""
    if not isinstance(confirm, AcceptedElicitation) or not confirm.data:
        return f"Nothing created ({confirm.action})."
    return f"Provisioned {name!r} in {region.region}."


def main(argv: list[str]) -> None:
    if argv[:1] == ["--http"]:
        app.run("streamable-http", port=int(argv[1]) if len(argv) > 1 else 8000)
    else:
        app.run()


if __name__ == "__main__":
    main(sys.argv[1:])
