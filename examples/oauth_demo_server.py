"""A protected MCP server with a demo authorization server that speaks every grant.

    python examples/oauth_demo_server.py --http 8000    # http://127.0.0.1:8000/mcp

One process on 127.0.0.1 holds three parties, each under its own path:

- the MCP server at ``/mcp`` (tool ``whoami``), which serves protected-resource metadata
  naming the authorization server;
- the authorization server at the root: authorization code with PKCE (dynamic
  registration, approves at once), client credentials (client ``machine``, secret
  ``machine-secret``), JWT bearer assertions signed by the identity provider below, and
  the same assertions as ID-JAGs for the client ``enterprise-app`` (secret ``app-secret``);
- an enterprise identity provider at ``/idp``: ``GET /idp/id-token?user=NAME`` hands out
  an ID token (in real life: the user's single sign-on), ``POST /idp/token`` exchanges it
  for an ID-JAG (RFC 8693), and ``GET /idp/workload-token?sub=NAME`` is a workload's JWT.

The JWTs are HS256 under a key made at start-up: a demo only. A real authorization server
authenticates users, checks signatures against the issuer's published keys and keeps
state in a database. Needs ``pip install 'mrtr[server]'``. The OAuth guides use it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import sys
import time
from typing import Any
from urllib.parse import parse_qsl, urlencode

from mrtr.server import Principal, ProtectedResource, Server, ServerRequestContext
from mrtr.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
STATIC_CLIENTS = {"machine": "machine-secret", "enterprise-app": "app-secret"}
Reply = tuple[int, dict[str, str], dict[str, Any]]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class DemoJWT:
    """HS256 JWTs under one key: what the identity provider signs and the server checks."""

    def __init__(self) -> None:
        self.key = secrets.token_bytes(32)

    def sign(self, claims: dict[str, Any], typ: str = "JWT") -> str:
        head = _b64(json.dumps({"alg": "HS256", "typ": typ}).encode())
        body = _b64(json.dumps(claims).encode())
        mac = hmac.new(self.key, f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{_b64(mac)}"

    def verify(self, token: str, audience: str) -> dict[str, Any] | None:
        try:
            head, body, mac = token.split(".")
            good = hmac.new(self.key, f"{head}.{body}".encode(), hashlib.sha256).digest()
            claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(body + "=="))
        except ValueError:
            return None
        if not hmac.compare_digest(_b64(good), mac) or claims.get("aud") != audience:
            return None
        return claims if claims.get("exp", 0) > time.time() else None


class DemoAuthority:
    """The authorization server and the identity provider: approves at once, a demo only."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.idp = f"{issuer}/idp"
        self.jwt = DemoJWT()
        self.redirects: dict[str, list[str]] = {}
        self.codes: dict[str, dict[str, str]] = {}
        self.tokens: dict[str, tuple[str, float]] = {}

    async def verify(self, token: str) -> Principal | None:
        """The MCP server's token verifier."""
        who, expires_at = self.tokens.get(token, ("", 0.0))
        return Principal(who, issuer=self.issuer) if expires_at > time.time() else None

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "grant_types_supported": ["authorization_code", "client_credentials", JWT_BEARER],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            "authorization_response_iss_parameter_supported": True,
        }

    def handle(self, method: str, path: str, query: dict[str, str], form: dict[str, str],
               basic: tuple[str, str] | None) -> Reply:  # fmt: skip
        if path == "/.well-known/oauth-authorization-server":
            return 200, {}, self.metadata()
        if path == "/register" and method == "POST":
            request = json.loads(form["_body"])
            client_id = secrets.token_hex(8)
            self.redirects[client_id] = request["redirect_uris"]
            return 201, {}, {**request, "client_id": client_id}
        if path == "/authorize":
            return self._authorize(query)
        if path == "/token" and method == "POST":
            return self._token(form, basic)
        if path.startswith("/idp/"):
            return self._idp(path, query, form)
        return 404, {}, {"error": "not_found"}

    def _authorize(self, query: dict[str, str]) -> Reply:
        if query.get("redirect_uri") not in self.redirects.get(query.get("client_id", ""), []):
            return 400, {}, {"error": "invalid_request"}
        code = secrets.token_urlsafe(16)
        self.codes[code] = query
        back = urlencode({"code": code, "state": query["state"], "iss": self.issuer})
        return 302, {"location": f"{query['redirect_uri']}?{back}"}, {}

    def _token(self, form: dict[str, str], basic: tuple[str, str] | None) -> Reply:
        grant = form.get("grant_type")
        if grant == "authorization_code":
            request = self.codes.pop(form.get("code", ""), {})
            digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            if _b64(digest) != request.get("code_challenge"):
                return 400, {}, {"error": "invalid_grant"}
            return self._issue(f"user of {request['client_id']}")
        if grant == "client_credentials":
            if basic is None or STATIC_CLIENTS.get(basic[0]) != basic[1]:
                return 401, {}, {"error": "invalid_client"}
            return self._issue(basic[0])
        if grant == JWT_BEARER:
            claims = self.jwt.verify(form.get("assertion", ""), audience=self.issuer)
            if claims is None:
                return 400, {}, {"error": "invalid_grant"}
            if claims.get("typ") == "id-jag" and (
                basic is None or STATIC_CLIENTS.get(basic[0]) != basic[1]
            ):
                return 401, {}, {"error": "invalid_client"}
            return self._issue(str(claims["sub"]))
        return 400, {}, {"error": "unsupported_grant_type"}

    def _issue(self, who: str) -> Reply:
        token = secrets.token_urlsafe(24)
        self.tokens[token] = (who, time.time() + 3600)
        return 200, {}, {"access_token": token, "token_type": "Bearer", "expires_in": 3600}

    def _idp(self, path: str, query: dict[str, str], form: dict[str, str]) -> Reply:
        now = time.time()
        if path == "/idp/id-token":  # stands in for the user's single sign-on
            claims = {"iss": self.idp, "sub": query.get("user", "alice"), "aud": "enterprise-app"}
            return 200, {}, {"id_token": self.jwt.sign({**claims, "exp": now + 600})}
        if path == "/idp/workload-token":  # stands in for a platform's workload identity
            claims = {"iss": self.idp, "sub": query.get("sub", "batch-job"), "aud": self.issuer}
            return 200, {}, {"token": self.jwt.sign({**claims, "exp": now + 300})}
        if path == "/idp/token" and form.get("grant_type") == TOKEN_EXCHANGE:
            user = self.jwt.verify(form.get("subject_token", ""), audience="enterprise-app")
            if user is None or form.get("requested_token_type") != ID_JAG:
                return 400, {}, {"error": "invalid_grant"}
            claims = {
                "iss": self.idp,
                "sub": user["sub"],
                "aud": form.get("audience"),
                "resource": form.get("resource"),
                "typ": "id-jag",
                "exp": now + 300,
            }
            jag = self.jwt.sign(claims, typ="oauth-id-jag+jwt")
            return 200, {}, {"access_token": jag, "issued_token_type": ID_JAG,
                             "token_type": "N_A", "expires_in": 300}  # fmt: skip
        return 404, {}, {"error": "not_found"}


async def list_tools(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListToolsResult:
    return ListToolsResult(tools=[Tool(name="whoami", input_schema={"type": "object"})])


async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
    who = ctx.principal.client_id if ctx.principal else "nobody"
    return CallToolResult(content=[TextContent(type="text", text=f"signed in as {who}")])


def _basic(headers: dict[bytes, bytes]) -> tuple[str, str] | None:
    value = headers.get(b"authorization", b"").decode()
    if not value.lower().startswith("basic "):
        return None
    user, _, password = base64.b64decode(value[6:]).decode().partition(":")
    return user, password


def make_app(issuer: str) -> Any:
    """One ASGI app: the MCP server at /mcp, the authorization server and IdP elsewhere."""
    authority = DemoAuthority(issuer)
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
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        query = dict(parse_qsl(scope.get("query_string", b"").decode()))
        form = dict(parse_qsl(body.decode())) if b"=" in body and body[:1] != b"{" else {}
        form["_body"] = body.decode()
        headers = dict(scope["headers"])
        status, extra, payload = authority.handle(
            scope["method"], path, query, form, _basic(headers)
        )
        raw = json.dumps(payload).encode()
        head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(raw))]
        head += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": raw})

    return app


def main(argv: list[str]) -> None:
    import uvicorn

    port = int(argv[1]) if argv[:1] == ["--http"] and len(argv) > 1 else 8000
    app = make_app(f"http://127.0.0.1:{port}")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
