"""The high-level benchmark servers: `python -m bench.servers.mcpserver_servers KIND`.

KIND is ``mrtr`` (mrtr's `MCPServer`), ``official`` (the official `MCPServer`,
``mcp==2.3.0``) or ``lowlevel`` (the same two tools written on mrtr's low-level
`Server`). Each serves stdio and offers the same two tools:

- ``provision`` ``{"name": ...}``: two dependencies (a region and a confirmation); round
  one asks both, round two completes. On the low-level server, the handler does it by
  hand (both questions, and state to find them again).
- ``guarded`` ``{}``: the manual form: the body returns its own `InputRequiredResult`
  with one elicitation and a state, and reads the answer on the retry.
"""

# no `from __future__ import annotations`: the tools' annotations name types imported in
# the function that defines them, which the official SDK could not resolve from strings
import sys
from typing import Annotated, Any

from pydantic import BaseModel


class Region(BaseModel):
    region: str


class Confirm(BaseModel):
    ok: bool


def high_level(kind: str) -> Any:
    """The two tools on a high-level server (the same source for both SDKs)."""
    if kind == "mrtr":
        from mrtr.server import Context, Elicit, ElicitationResult, MCPServer, Resolve
        from mrtr.types import (
            ElicitRequest,
            ElicitRequestFormParams,
            ElicitResult,
            InputRequiredResult,
        )
    else:
        from mcp.server.mcpserver import (  # type: ignore[no-redef,assignment]
            Context,
            Elicit,
            ElicitationResult,
            MCPServer,
            Resolve,
        )
        from mcp.types import (  # type: ignore[assignment]
            ElicitRequest,
            ElicitRequestFormParams,
            ElicitResult,
            InputRequiredResult,
        )

    app = MCPServer("bench")
    ask = ElicitRequest(
        params=ElicitRequestFormParams(
            message="Who is it for?",
            requested_schema={
                "type": "object",
                "properties": {"who": {"type": "string"}},
                "required": ["who"],
            },
        )
    )

    async def ask_region(name: str) -> Region | Elicit[Region]:
        return Elicit(f"Which region for {name!r}?", Region)

    async def ask_confirm(name: str) -> Elicit[Confirm]:
        return Elicit(f"Really provision {name!r}?", Confirm)

    @app.tool()
    async def provision(
        name: str,
        region: Annotated[Region, Resolve(ask_region)],
        confirm: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)],
    ) -> str:
        return f"provisioned {name} in {region.region}"

    @app.tool()
    async def guarded(ctx: Context) -> str | InputRequiredResult:  # type: ignore[type-arg]
        answer = (ctx.input_responses or {}).get("who")
        if not isinstance(answer, ElicitResult) or answer.content is None:
            return InputRequiredResult(input_requests={"who": ask}, request_state="g1")
        return f"for {answer.content['who']}"

    return app


def low_level() -> Any:
    """The same two tools on mrtr's low-level `Server`, written by hand."""
    from mrtr.server import Server, ServerRequestContext
    from mrtr.types import (
        CallToolRequestParams,
        CallToolResult,
        ElicitRequest,
        ElicitRequestFormParams,
        ElicitResult,
        InputRequiredResult,
        ListToolsResult,
        TextContent,
        Tool,
    )

    def form(message: str, field: str, kind: str) -> ElicitRequest:
        schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
        return ElicitRequest(
            params=ElicitRequestFormParams(message=message, requested_schema=schema)
        )

    who = form("Who is it for?", "who", "string")
    tools = ListToolsResult(
        tools=[
            Tool(
                name="provision",
                input_schema={"type": "object", "properties": {"name": {"type": "string"}}},
            ),
            Tool(name="guarded", input_schema={"type": "object"}),
        ]
    )

    async def list_tools(ctx: ServerRequestContext, params: Any) -> ListToolsResult:
        return tools

    def answered(ctx: ServerRequestContext, key: str) -> dict[str, Any] | None:
        answer = (ctx.input_responses or {}).get(key)
        if isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content:
            return dict(answer.content)
        return None

    async def call_tool(
        ctx: ServerRequestContext, params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        if params.name == "guarded":
            got = answered(ctx, "who")
            if got is None:
                return InputRequiredResult(input_requests={"who": who}, request_state="g1")
            return CallToolResult(content=[TextContent(type="text", text=f"for {got['who']}")])
        name = str((params.arguments or {}).get("name"))
        region, confirm = answered(ctx, "ask_region"), answered(ctx, "ask_confirm")
        if region is None or confirm is None or ctx.request_state != "p1":
            return InputRequiredResult(
                input_requests={
                    "ask_region": form(f"Which region for {name!r}?", "region", "string"),
                    "ask_confirm": form(f"Really provision {name!r}?", "ok", "boolean"),
                },
                request_state="p1",
            )
        text = f"provisioned {name} in {region['region']}"
        return CallToolResult(content=[TextContent(type="text", text=text)])

    return Server("bench", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    kind = sys.argv[1]
    if kind == "lowlevel":
        low_level().run_stdio()
    elif kind == "mrtr":
        high_level("mrtr").run()
    else:
        high_level("official").run()


if __name__ == "__main__":
    main()
