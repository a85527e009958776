"""The manual loop: drive the rounds yourself and persist requestState between legs.

Run: python examples/client_manual_loop.py

Each leg writes what it needs to continue (the pending input requests and the opaque
``requestState``) to a JSON file; the next leg reads it back in a brand-new Client, as a
distributed client would in another process.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from client_auto_loop import server  # the same in-process Provisioner server

from mrtr import Client
from mrtr.types import CallToolResult, ElicitRequest, ElicitResult, InputRequiredResult, TextContent

ARGUMENTS = {"name": "orders"}
# No callbacks here, so say what this client answers by hand (form-mode elicitation).
CAPABILITIES = {"elicitation": {"form": {}}}


def fulfil(request: Any) -> ElicitResult:
    if not isinstance(request, ElicitRequest):
        raise NotImplementedError(f"this client cannot answer a {request.method!r} request")
    print(f"  the server asks: {request.params.message}")
    return ElicitResult(action="accept", content={"region": "eu-west-1"})


async def first_leg(store: Path) -> CallToolResult | None:
    async with Client(server, capabilities=CAPABILITIES) as client:
        result = await client.session.call_tool("provision", ARGUMENTS, allow_input_required=True)
    if not isinstance(result, InputRequiredResult):
        return result
    await anyio.Path(store).write_text(json.dumps(result.to_wire()))
    print(f"  paused; state written to {store}")
    return None


async def resume(store: Path) -> CallToolResult:
    pending = InputRequiredResult.model_validate(json.loads(await anyio.Path(store).read_text()))
    async with Client(server, capabilities=CAPABILITIES) as client:
        result: CallToolResult | InputRequiredResult = pending
        while isinstance(result, InputRequiredResult):
            responses = {key: fulfil(req) for key, req in (result.input_requests or {}).items()}
            result = await client.session.call_tool(
                "provision",
                ARGUMENTS,
                input_responses=responses,
                request_state=result.request_state,
                allow_input_required=True,
            )
    return result


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = Path(directory) / "pending.json"
        result = await first_leg(store) or await resume(store)
    block = result.content[0]
    assert isinstance(block, TextContent)
    print(block.text)


if __name__ == "__main__":
    anyio.run(main)
