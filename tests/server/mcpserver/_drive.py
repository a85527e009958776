"""Raw JSON-RPC against an app's low-level server: one round at a time, nothing hidden."""

from __future__ import annotations

from typing import Any

from mrtr.server import MCPServer
from mrtr.server._core._connection import ServerConnection

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ALL_CAPS: dict[str, Any] = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}


async def _discard(message: dict[str, Any]) -> None:
    return None


class Wire:
    """One connection to an app, modern by default (``legacy=True`` initializes first)."""

    def __init__(self, app: MCPServer, *, caps: dict[str, Any] | None = None) -> None:
        self.connection: ServerConnection = app.connection()
        self.caps = ALL_CAPS if caps is None else caps
        self.ids = 0
        self.legacy = False

    async def initialize(self, version: str = LEGACY) -> dict[str, Any]:
        self.legacy = True
        return await self.send(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": self.caps,
                "clientInfo": {"name": "t", "version": "1"},
            },
        )

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.ids += 1
        p = dict(params or {})
        if not self.legacy and method != "initialize":
            p["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": self.caps,
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            }
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": p}
        response = await self.connection.handle(message, emit=_discard)
        assert response is not None
        return response

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        responses: dict[str, Any] | None = None,
        state: str | None = None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if responses is not None:
            params["inputResponses"] = responses
        if state is not None:
            params["requestState"] = state
        return await self.send("tools/call", params)

    async def result(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        response = await self.call(*args, **kwargs)
        assert "result" in response, response
        result: dict[str, Any] = response["result"]
        return result


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def text_of(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


def resolver_fn(app: MCPServer, tool: str, key: str) -> Any:
    """The function of the resolver `key` in `tool`'s plan (what an override replaces)."""
    plan = app.spec.registry.tools[tool].spec.plan
    assert plan is not None, f"{tool} has no resolvers"
    (node,) = [n for n in plan.nodes if n.key == key]
    return node.fn
