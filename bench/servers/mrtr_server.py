"""mrtr's own server with the benchmark's `rounds` tool, for the in-memory scenarios.

Same behaviour as `official_server.rounds`: one elicitation per round for N rounds,
`requestState` carrying the round count. `build_server(sealed=False)` opts out of sealing
(`UNSEALED`) so that it does the same work as the official low-level server, which does
not seal; `sealed=True` is mrtr's default (AES-GCM with an ephemeral key).

Run: `python -m bench.servers.mrtr_server stdio [--sealed]` or
`python -m bench.servers.mrtr_server http --port P [--sealed]` (uvicorn on 127.0.0.1, the
same settings as `official_server`).
"""

from __future__ import annotations

import argparse
from typing import Any

from mrtr.server import UNSEALED, Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
_ASK = ElicitRequest(
    method="elicitation/create",
    params=ElicitRequestFormParams(message="Continue?", requested_schema=_SCHEMA),
)
_TOOLS = ListToolsResult(
    tools=[Tool(name="rounds", description="rounds", input_schema={"type": "object"})]
)


async def _list_tools(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> Any:
    return _TOOLS


async def _call_tool(
    ctx: ServerRequestContext, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    n = int((params.arguments or {}).get("n", 0))
    done = int(ctx.request_state or "0")
    if done > 0 and f"q{done - 1}" not in (ctx.input_responses or {}):
        raise ValueError("missing answer")
    if done >= n:
        return CallToolResult(content=[TextContent(type="text", text=f"done after {done} rounds")])
    return InputRequiredResult(
        input_requests={f"q{done}": _ASK}, request_state=str(done + 1), result_type="input_required"
    )


def build_server(*, sealed: bool = False) -> Server:
    """mrtr's server with the `rounds` tool; unsealed unless `sealed`."""
    return Server(
        "bench-mrtr",
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
        request_state_security=None if sealed else UNSEALED,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--sealed", action="store_true")
    args = parser.parse_args()
    server = build_server(sealed=args.sealed)
    if args.transport == "stdio":
        server.run_stdio()
        return
    import uvicorn

    app = server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
