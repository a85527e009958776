"""An mrtr client logs in to an mrtr server with OAuth 2.1, end to end.

    python examples/oauth_login.py                 # starts the server, then logs in
    python examples/oauth_login.py --serve 8000    # just the server, on 127.0.0.1:8000

The server process holds a small authorization server (a demo: it approves every
request at once, no login page) and an MCP server with a token verifier, which serves
protected-resource metadata naming that authorization server. The client knows only the
MCP URL: on the first 401 it discovers the authorization server, registers, runs the
authorization code flow with PKCE, stores the tokens (a file, ``0600``) and retries.
A second run with the same store reuses (or refreshes) them without logging in.

Needs ``pip install 'mrtr[server]'``. With a real authorization server, use
``LoopbackAuthorizer()`` (opens a browser) instead of ``FollowRedirectAuthorizer()``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio

from mrtr import Client
from mrtr.auth import AuthorizationCode, FileStore, FollowRedirectAuthorizer, OAuth
from mrtr.server import Principal, ProtectedResource, Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

# -- the server side ---------------------------------------------------------------------


async def list_tools(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListToolsResult:
    return ListToolsResult(tools=[Tool(name="whoami", input_schema={"type": "object"})])


async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
    who = ctx.principal.client_id if ctx.principal else "nobody"
    return CallToolResult(content=[TextContent(type="text", text=f"signed in as {who}")])


class DemoAuthorizationServer:
    """Approves at once. A demo only: a real one authenticates the user first."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.clients: dict[str, list[str]] = {}
        self.codes: dict[str, dict[str, str]] = {}
        self.tokens: dict[str, tuple[str, float]] = {}

    async def verify(self, token: str) -> Principal | None:
        client_id, expires_at = self.tokens.get(token, ("", 0.0))
        return Principal(client_id, issuer=self.issuer) if expires_at > time.time() else None

    def handle(self, method: str, path: str, query: dict[str, str], body: bytes) -> Any:
        if path == "/.well-known/oauth-authorization-server":
            return (
                200,
                {},
                {
                    "issuer": self.issuer,
                    "authorization_endpoint": f"{self.issuer}/authorize",
                    "token_endpoint": f"{self.issuer}/token",
                    "registration_endpoint": f"{self.issuer}/register",
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                    "authorization_response_iss_parameter_supported": True,
                },
            )
        if path == "/register" and method == "POST":
            request = json.loads(body)
            client_id = secrets.token_hex(8)
            self.clients[client_id] = request["redirect_uris"]
            return 201, {}, {**request, "client_id": client_id}
        if path == "/authorize" and query.get("redirect_uri") in self.clients.get(
            query.get("client_id", ""), []
        ):
            code = secrets.token_urlsafe(16)
            self.codes[code] = query
            back = urlencode({"code": code, "state": query["state"], "iss": self.issuer})
            return 302, {"location": f"{query['redirect_uri']}?{back}"}, {}
        if path == "/token" and method == "POST":
            form = dict(parse_qsl(body.decode()))
            request = self.codes.pop(form.get("code", ""), {})
            digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != request.get(
                "code_challenge"
            ):
                return 400, {}, {"error": "invalid_grant"}
            token = secrets.token_urlsafe(24)
            self.tokens[token] = (request["client_id"], time.time() + 3600)
            return 200, {}, {"access_token": token, "token_type": "Bearer", "expires_in": 3600}
        return 404, {}, {"error": "not_found"}


def make_app(issuer: str) -> Any:
    """One ASGI app: the authorization server at the root, the MCP server at /mcp."""
    authority = DemoAuthorizationServer(issuer)
    server = Server("protected", on_list_tools=list_tools, on_call_tool=call_tool)
    mcp = server.streamable_http_app(
        token_verifier=authority.verify,
        protected_resource=ProtectedResource(authorization_servers=[issuer]),
    )

    async def app(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path == "/mcp" or "oauth-protected-resource" in path:
            await mcp(scope, receive, send)
            return
        body = b""
        while (message := await receive()).get("more_body"):
            body += message.get("body", b"")
        body += message.get("body", b"")
        query = dict(parse_qsl(scope.get("query_string", b"").decode()))
        status, headers, payload = authority.handle(scope["method"], path, query, body)
        raw = json.dumps(payload).encode()
        head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(raw))]
        head += [(k.encode(), v.encode()) for k, v in headers.items()]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": raw})

    return app


def serve(port: int) -> None:
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    port = sock.getsockname()[1]
    print(port, flush=True)
    app = make_app(f"http://127.0.0.1:{port}")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


# -- the client side ---------------------------------------------------------------------


async def login_and_call(url: str, store_path: Path) -> str:
    auth = OAuth(grant=AuthorizationCode(FollowRedirectAuthorizer()), store=FileStore(store_path))
    async with Client(url, auth=auth) as client:
        result = await client.call_tool("whoami", {})
        text = result.content[0].text  # type: ignore[union-attr]
        return str(text)


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]) if len(sys.argv) > 2 else 8000)
        return
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}/mcp"
        with tempfile.TemporaryDirectory() as home:
            store = Path(home) / "tokens.json"
            print(anyio.run(login_and_call, url, store))  # logs in
            print(anyio.run(login_and_call, url, store), "(stored tokens, no new login)")
    finally:
        server.terminate()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()


if __name__ == "__main__":
    main()
