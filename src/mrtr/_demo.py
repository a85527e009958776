"""`python -m mrtr demo`: a real multi-round flow over stdio, printed round by round.

The demo starts the bundled example server below as a subprocess (`python -m mrtr
demo-server`), connects a `Client` to it, and calls a tool that needs three rounds: it
asks which region, then asks for a confirmation, then answers "still working" once (a
state-only round, retried after a short backoff) before it returns its result. The
server seals its ``requestState``; the client echoes it without reading it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from mrtr.flow._driver import RoundEvent

_REGION_SCHEMA = {
    "type": "object",
    "properties": {"region": {"type": "string", "enum": ["eu-west-1", "us-east-1"]}},
    "required": ["region"],
}
_CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}


def server_extra_missing() -> str | None:
    """Why the bundled server cannot run here (the server extra is missing), or ``None``."""
    try:
        import mrtr.server  # noqa: F401  (the bundled server is mrtr's own)
    except ImportError as exc:
        return str(exc)
    return None


def build_demo_server() -> Any:
    """The example server: one tool, ``provision``, that asks before it acts."""
    from mrtr.server import RequestStateSecurity, Server, ServerRequestContext
    from mrtr.types import (
        CallToolRequestParams,
        CallToolResult,
        ElicitRequest,
        ElicitRequestFormParams,
        ElicitResult,
        InputRequiredResult,
        ListToolsResult,
        PaginatedRequestParams,
        TextContent,
        Tool,
    )

    def ask(message: str, schema: dict[str, Any]) -> ElicitRequest:
        return ElicitRequest(
            params=ElicitRequestFormParams(message=message, requested_schema=schema)
        )

    async def list_tools(
        ctx: ServerRequestContext, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        tool = Tool(name="provision", description="Provision a database.", input_schema=schema)
        return ListToolsResult(tools=[tool])

    async def call_tool(
        ctx: ServerRequestContext, params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        name = (params.arguments or {}).get("name", "orders")
        state = ctx.request_state or ""
        answers = ctx.input_responses or {}
        region = answers.get("region")
        confirm = answers.get("confirm")
        if not state:  # first leg: nothing known yet
            return InputRequiredResult(
                input_requests={"region": ask(f"Where should {name!r} live?", _REGION_SCHEMA)},
                request_state="step=region",
            )
        if state == "step=region" and isinstance(region, ElicitResult) and region.content:
            chosen = str(region.content["region"])
            question = ask(f"Create {name!r} in {chosen}?", _CONFIRM_SCHEMA)
            return InputRequiredResult(
                input_requests={"confirm": question}, request_state=f"step=confirm;{chosen}"
            )
        if state.startswith("step=confirm;") and isinstance(confirm, ElicitResult):
            chosen = state.split(";", 1)[1]
            if confirm.action != "accept" or not (confirm.content or {}).get("confirm"):
                return CallToolResult(content=[TextContent(text="Cancelled.")], is_error=True)
            return InputRequiredResult(request_state=f"step=working;{chosen}")  # poll once
        if state.startswith("step=working;"):
            chosen = state.split(";", 1)[1]
            text = f"Provisioned {name!r} in {chosen}."
            return CallToolResult(content=[TextContent(text=text)])
        return CallToolResult(content=[TextContent(text="Start over.")], is_error=True)

    key = os.environ.get("MRTR_DEMO_STATE_KEY")  # set by `mrtr call demo`: pause/resume demos
    security = RequestStateSecurity(keys=[bytes.fromhex(key)]) if key else None
    return Server(
        "mrtr-demo",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        request_state_security=security,
    )


def _print_round(event: RoundEvent) -> None:
    asked = ", ".join(f"{key} ({kind})" for key, kind in zip(event.keys, event.kinds, strict=True))
    state = "no state" if event.request_state_size is None else f"{event.request_state_size} B"
    print(
        f"  round {event.round}: asked [{asked or 'nothing: state only'}], state {state}, "
        f"callbacks {event.callback_seconds * 1000:.1f} ms, wait {event.wait_seconds * 1000:.0f}"
        f" ms, wire {event.wire_seconds * 1000:.1f} ms -> {event.outcome}"
    )


async def run_demo() -> int:
    """Connect to the demo server over stdio and drive one multi-round call."""
    from mrtr.client import Client, ClientRequestContext
    from mrtr.transports import StdioServerParameters
    from mrtr.types import ElicitRequestParams, ElicitResult

    scripted = {"region": {"region": "eu-west-1"}, "confirm": {"confirm": True}}

    async def answer(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        content = scripted[ctx.key or ""]
        print(f"  server asks ({ctx.key}): {params.message!r} -> answering {content}")
        return ElicitResult(action="accept", content=content)

    server = StdioServerParameters(sys.executable, ["-m", "mrtr", "demo-server"])
    print("starting the demo server over stdio and connecting ...")
    async with Client(server, elicitation_callback=answer, on_round=_print_round) as client:
        info = client.server_info
        who = f"{info.name} {info.version}" if info else "unknown"
        print(f"connected: protocol {client.protocol_version}, server {who}")
        tools = await client.list_tools()
        print(f"tools: {[tool.name for tool in tools.tools]}")
        print("calling provision(name='orders'):")
        result = await client.call_tool("provision", {"name": "orders"})
    text = " ".join(getattr(block, "text", "") for block in result.content)
    print(f"result: {text}")
    return 1 if result.is_error else 0
