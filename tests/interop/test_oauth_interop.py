"""mrtr's OAuth client against the official SDK's server (mcp==2.3.0) with auth on."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import anyio
import httpx
import pytest

from mrtr import Client
from mrtr.auth import AuthorizationCode, FollowRedirectAuthorizer, MemoryStore, OAuth
from tests.auth.conftest import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.interop]


@pytest.fixture
def sdk_server() -> Iterator[tuple[str, str]]:
    """The SDK server and our mock authorization server: (issuer, MCP URL)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.interop.oauth_peer"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        as_port, mcp_port = proc.stdout.readline().split()
        yield f"http://127.0.0.1:{as_port}", f"http://127.0.0.1:{mcp_port}/mcp"
    finally:
        proc.kill()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


async def test_mrtr_logs_in_to_the_official_sdk_server_over_streamable_http(
    sdk_server: tuple[str, str],
) -> None:
    issuer, url = sdk_server
    auth = OAuth(grant=AuthorizationCode(FollowRedirectAuthorizer()), store=MemoryStore())
    with anyio.fail_after(60):
        async with Client(url, auth=auth) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            assert tools == ["echo"]
            result = await client.call_tool("echo", {"text": "hi"})
            assert result.content[0].text == "echo: hi"  # type: ignore[union-attr]
        async with httpx.AsyncClient() as http:
            stats = (await http.get(f"{issuer}/_stats", timeout=30)).json()
    assert auth.token is not None
    assert auth.token.issuer == issuer and auth.token.resource == url
    assert "mcp" in auth.token.scope  # from the SDK server's scopes_supported
    assert stats["authorizations"] == 1 and stats["registrations"] == 1
