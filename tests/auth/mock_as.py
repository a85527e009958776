"""A small OAuth authorization server plus an mrtr MCP server that trusts it, for tests.

Run as ``python -m tests.auth.mock_as``: binds 127.0.0.1 on a free port, prints the port,
then serves until killed. The authorization server approves at once (``/authorize``
redirects straight back with a code), checks PKCE, registers clients dynamically, issues
rotating refresh tokens (a used refresh token is dead: reusing it is ``invalid_grant``),
and exposes ``/_stats`` (counters) and ``/_control`` (misbehaviours) to the tests. The MCP
endpoint ``/mcp`` is mrtr's own server with a token verifier, so it serves
protected-resource metadata and challenges as a real deployment would.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import socket
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio

from mrtr.server import Principal, ProtectedResource, Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)


@dataclass
class State:
    issuer: str
    expires_in: int = 3600
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    access: dict[str, dict[str, Any]] = field(default_factory=dict)
    refresh: dict[str, dict[str, Any]] = field(default_factory=dict)
    stats: dict[str, int] = field(
        default_factory=lambda: {
            "authorizations": 0,
            "registrations": 0,
            "code_grants": 0,
            "refreshes": 0,
            "refresh_refused": 0,
            "metadata": 0,
            "resource_metadata": 0,
        }
    )
    stall_token: bool = False
    reject_refresh: bool = False


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class AuthServerApp:
    """The ASGI app: authorization server routes, controls, and the MCP server."""

    def __init__(self, issuer: str) -> None:
        self.state = State(issuer)
        resource = ProtectedResource(authorization_servers=[issuer], scopes_supported=["mcp"])
        self.mcp = make_mcp_server().streamable_http_app(
            token_verifier=self.verify, protected_resource=resource
        )

    async def verify(self, token: str) -> Principal | None:
        record = self.state.access.get(token)
        if record is None or record["expires_at"] < time.time():
            return None
        return Principal(client_id=record["client_id"], issuer=self.state.issuer)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path == "/mcp" or path.startswith("/.well-known/oauth-p"):
            if path.startswith("/.well-known/oauth-p"):
                self.state.stats["resource_metadata"] += 1
            await self.mcp(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        query = dict(parse_qsl(scope.get("query_string", b"").decode()))
        status, out_headers, payload = await self.route(scope["method"], path, query, headers, body)
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
        hdrs += [(k.encode(), v.encode()) for k, v in out_headers.items()]
        await send({"type": "http.response.start", "status": status, "headers": hdrs})
        await send({"type": "http.response.body", "body": raw})

    async def route(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], Any]:
        state = self.state
        if path == "/.well-known/oauth-authorization-server":
            state.stats["metadata"] += 1
            return 200, {}, self.metadata()
        if path == "/_stats":
            return 200, {}, state.stats
        if path == "/_control" and method == "POST":
            for name, value in json.loads(body).items():
                if name == "forget_clients":
                    state.clients.clear()
                elif name == "expire_access":
                    for record in state.access.values():
                        record["expires_at"] = 0
                else:
                    setattr(state, name, value)
            return 200, {}, {}
        if path == "/register" and method == "POST":
            return self.register(json.loads(body))
        if path == "/authorize":
            return self.authorize(query)
        if path == "/token" and method == "POST":
            if state.stall_token:
                await anyio.sleep_forever()
            form = dict(parse_qsl(body.decode()))
            return self.token(form, headers)
        return 404, {}, {"error": "not_found"}

    def metadata(self) -> dict[str, Any]:
        issuer = self.state.issuer
        return {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "registration_endpoint": f"{issuer}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
            "scopes_supported": ["mcp", "offline_access"],
            "authorization_response_iss_parameter_supported": True,
        }

    def register(self, request: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        self.state.stats["registrations"] += 1
        if request.get("application_type") not in ("native", "web"):
            return 400, {}, {"error": "invalid_client_metadata"}
        client_id = "client-" + secrets.token_hex(8)
        method = request.get("token_endpoint_auth_method", "client_secret_basic")
        record = {**request, "client_id": client_id, "token_endpoint_auth_method": method}
        if method != "none":
            record["client_secret"] = "secret-" + secrets.token_hex(16)
        self.state.clients[client_id] = record
        return 201, {}, record

    def authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        client = self.state.clients.get(query.get("client_id", ""))
        redirect = query.get("redirect_uri", "")
        if client is None or redirect not in client.get("redirect_uris", []):
            return 400, {}, {"error": "invalid_request"}
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return 400, {}, {"error": "invalid_request"}
        self.state.stats["authorizations"] += 1
        code = "code-" + secrets.token_urlsafe(24)
        self.state.codes[code] = dict(query)
        back = {"code": code, "state": query.get("state", ""), "iss": self.state.issuer}
        return 302, {"location": f"{redirect}?{urlencode(back)}"}, b""

    def _client(self, form: dict[str, str], headers: dict[str, str]) -> dict[str, Any] | None:
        auth = headers.get("authorization", "")
        if auth.startswith("Basic "):
            client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
            if "client_id" in form:
                return None  # two authentication methods at once
            client = self.state.clients.get(client_id)
            return client if client and client.get("client_secret") == secret else None
        client = self.state.clients.get(form.get("client_id", ""))
        if client is None:
            return None
        if client["token_endpoint_auth_method"] == "none":
            return client
        return client if form.get("client_secret") == client.get("client_secret") else None

    def token(
        self, form: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], Any]:
        client = self._client(form, headers)
        if client is None:
            return 401, {}, {"error": "invalid_client"}
        grant = form.get("grant_type")
        if grant == "authorization_code":
            request = self.state.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            if (
                request is None
                or request["client_id"] != client["client_id"]
                or _b64url(hashlib.sha256(verifier.encode()).digest()) != request["code_challenge"]
                or form.get("resource") != request.get("resource")
            ):
                return 400, {}, {"error": "invalid_grant"}
            self.state.stats["code_grants"] += 1
            return 200, {}, self.issue(client["client_id"], request.get("scope", ""))
        if grant == "refresh_token":
            record = self.state.refresh.pop(form.get("refresh_token", ""), None)
            if record is None or self.state.reject_refresh:
                self.state.stats["refresh_refused"] += 1
                return 400, {}, {"error": "invalid_grant", "error_description": "refresh token"}
            self.state.stats["refreshes"] += 1
            return 200, {}, self.issue(client["client_id"], record["scope"])
        return 400, {}, {"error": "unsupported_grant_type"}

    def issue(self, client_id: str, scope: str) -> dict[str, Any]:
        access = "at-" + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        expires_at = time.time() + self.state.expires_in
        self.state.access[access] = {
            "client_id": client_id,
            "expires_at": expires_at,
            "scope": scope,
        }
        self.state.refresh[refresh] = {"client_id": client_id, "scope": scope}
        return {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.state.expires_in,
            "refresh_token": refresh,
            "scope": scope,
        }


async def _list_tools(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListToolsResult:
    return ListToolsResult(tools=[Tool(name="whoami", input_schema={"type": "object"})])


async def _call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
    who = ctx.principal.client_id if ctx.principal else "nobody"
    return CallToolResult(content=[TextContent(type="text", text=f"you are {who}")])


def make_mcp_server() -> Server:
    return Server("protected", on_list_tools=_list_tools, on_call_tool=_call_tool)


def main() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = AuthServerApp(f"http://127.0.0.1:{port}")
    print(port, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
