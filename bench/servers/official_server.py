"""The shared benchmark server, built on the official SDK (`mcp==2.3.0`) low-level `Server`.

Tools (2026-07-28 era, manual form: the handler returns `InputRequiredResult`):

- `rounds` `{"n": N}`: asks one elicitation per round for N rounds; `requestState` carries
  the round count (plaintext: the low-level server does not seal).
- `big_state` `{"size": BYTES}`: first round carries a `requestState` of BYTES characters
  and one input request; the retry completes.
- `many_requests` `{"count": K}`: first round carries K input requests; the retry completes.

Run: `python -m bench.servers.official_server stdio` or
`python -m bench.servers.official_server http --port P` (uvicorn on 127.0.0.1).
"""

from __future__ import annotations

import argparse
from typing import Any

import mcp.types as types
from mcp.server import Server, ServerRequestContext

_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
_ASK = types.ElicitRequest(
    method="elicitation/create",
    params=types.ElicitRequestFormParams(message="Continue?", requested_schema=_SCHEMA),
)
_Answer = types.CallToolResult | types.InputRequiredResult
_TOOLS = [
    types.Tool(name=name, description=name, input_schema={"type": "object"})
    for name in ("rounds", "big_state", "many_requests")
]


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _ask(requests: dict[str, Any], state: str) -> types.InputRequiredResult:
    return types.InputRequiredResult(
        input_requests=requests, request_state=state, result_type="input_required"
    )


def _rounds(params: types.CallToolRequestParams) -> _Answer:
    n = int((params.arguments or {}).get("n", 0))
    done = int(params.request_state or "0")
    if done > 0 and f"q{done - 1}" not in (params.input_responses or {}):
        raise ValueError("missing answer")
    if done >= n:
        return _text(f"done after {done} rounds")
    return _ask({f"q{done}": _ASK}, str(done + 1))


def _big_state(params: types.CallToolRequestParams) -> _Answer:
    if params.request_state is not None:
        return _text(f"state of {len(params.request_state)} chars echoed")
    size = int((params.arguments or {}).get("size", 20 * 1024 * 1024))
    return _ask({"q": _ASK}, "x" * size)


def _many(params: types.CallToolRequestParams) -> _Answer:
    if params.request_state is not None:
        return _text(f"{len(params.input_responses or {})} answers")
    count = int((params.arguments or {}).get("count", 5000))
    return _ask({f"q{i}": _ASK for i in range(count)}, "many")


_HANDLERS = {"rounds": _rounds, "big_state": _big_state, "many_requests": _many}


async def _list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_TOOLS)


async def _call_tool(
    ctx: ServerRequestContext, params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    return _HANDLERS[params.name](params)


def build_server() -> Server[Any]:
    """The official low-level server with the three benchmark tools."""
    return Server("bench-official", on_list_tools=_list_tools, on_call_tool=_call_tool)


async def _serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _serve_http(port: int) -> None:
    import uvicorn

    app = build_server().streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if args.transport == "stdio":
        import anyio

        anyio.run(_serve_stdio)
    else:
        _serve_http(args.port)


if __name__ == "__main__":
    main()
