"""Several instances behind one client: share the request-state keys.

    export MRTR_STATE_KEYS=$(python -c "import secrets; print(secrets.token_hex(32))")
    python examples/server_shared_keys.py --http 8001 &
    python examples/server_shared_keys.py --http 8002 &

A retry may land on another instance (a load balancer, a restart, several uvicorn
workers). With the default ephemeral key that instance cannot open the state and the
client gets the frozen -32602 "Invalid or expired requestState"; with shared keys every
instance verifies what any sibling sealed. The audience is the server's name, so another
service that happens to share the secret still cannot redeem this one's state.

Rotating without downtime, each phase fully rolled out before the next
(``MRTR_STATE_KEYS`` is a comma-separated list, the first key seals):

    1. OLD,NEW   every instance learns to verify NEW; OLD still seals
    2. NEW,OLD   NEW seals; state sealed under OLD keeps verifying
    3. NEW       one ttl after phase 2 is everywhere, retire OLD
"""

from __future__ import annotations

import os
import sys

from mrtr.server import RequestStateSecurity, Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)


def load_keys() -> list[bytes]:
    raw = os.environ.get("MRTR_STATE_KEYS")
    if not raw:
        sys.exit("set MRTR_STATE_KEYS to one or more comma-separated hex secrets of 32+ bytes")
    return [bytes.fromhex(key.strip()) for key in raw.split(",")]


async def list_tools(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListToolsResult:
    return ListToolsResult(
        tools=[
            Tool(
                name="countdown", description="Takes three rounds.", input_schema={"type": "object"}
            )
        ]
    )


async def call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    step = int(ctx.request_state or "0")
    if step < 2:
        # nothing to ask: a state-only round; the state says how far we got
        return InputRequiredResult(request_state=str(step + 1))
    return CallToolResult(content=[TextContent(type="text", text=f"done after {step} rounds")])


def build(keys: list[bytes]) -> Server:
    policy = RequestStateSecurity(keys=keys, ttl=300)
    return Server(
        "fleet", on_list_tools=list_tools, on_call_tool=call_tool, request_state_security=policy
    )


def main(argv: list[str]) -> None:
    server = build(load_keys())
    if argv[:1] == ["--http"]:
        server.run_http(port=int(argv[1]) if len(argv) > 1 else 8000)
    else:
        server.run_stdio()


if __name__ == "__main__":
    main(sys.argv[1:])
