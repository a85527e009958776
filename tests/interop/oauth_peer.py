"""The official SDK's server (mcp==2.3.0) with its auth enabled, trusting our mock AS.

Run as ``python -m tests.interop.oauth_peer``: serves the mock authorization server and the
SDK's streamable HTTP server on two free ports of 127.0.0.1 (one process, two uvicorn
servers), prints ``<as-port> <mcp-port>``, and serves until killed. The SDK server
verifies tokens against the mock's records and serves its own protected-resource
metadata and challenges (``AuthSettings``).
"""

from __future__ import annotations

import asyncio
import socket

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from tests.auth.mock_as import AuthServerApp


def _listen() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


class Verifier:
    def __init__(self, authority: AuthServerApp) -> None:
        self.authority = authority

    async def verify_token(self, token: str) -> AccessToken | None:
        if await self.authority.verify(token) is None:
            return None
        record = self.authority.state.access[token]
        return AccessToken(
            token=token,
            client_id=record["client_id"],
            scopes=record["scope"].split(),
            expires_at=int(record["expires_at"]),
        )


async def main() -> None:
    as_sock, mcp_sock = _listen(), _listen()
    issuer = f"http://127.0.0.1:{as_sock.getsockname()[1]}"
    resource = f"http://127.0.0.1:{mcp_sock.getsockname()[1]}/mcp"
    authority = AuthServerApp(issuer)
    server = MCPServer(
        "sdk-protected",
        token_verifier=Verifier(authority),
        auth=AuthSettings(
            issuer_url=issuer,
            resource_server_url=resource,
            required_scopes=["mcp"],
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"echo: {text}"

    servers = [
        uvicorn.Server(uvicorn.Config(authority, log_level="warning", lifespan="off")),
        uvicorn.Server(
            uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
        ),
    ]
    print(as_sock.getsockname()[1], mcp_sock.getsockname()[1], flush=True)
    await asyncio.gather(servers[0].serve([as_sock]), servers[1].serve([mcp_sock]))


if __name__ == "__main__":
    asyncio.run(main())
