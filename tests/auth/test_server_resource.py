"""The server half: with a token verifier, protected-resource metadata (RFC 9728) and a
challenge that names it, and mrtr.auth can use both."""

from __future__ import annotations

import httpx
import pytest

from mrtr.auth._challenge import parse_challenges
from mrtr.server import Principal, ProtectedResource, Server

pytestmark = pytest.mark.anyio


async def verify(token: str) -> Principal | None:
    return Principal("app") if token == "good" else None


def client_for(**kwargs: object) -> httpx.AsyncClient:
    app = Server("protected").streamable_http_app(token_verifier=verify, **kwargs)  # type: ignore[arg-type]
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),  # type: ignore[arg-type]
        base_url="http://mcp.test",
    )


async def test_metadata_document_and_challenge_name_each_other() -> None:
    resource = ProtectedResource(
        authorization_servers=["https://as.test"], scopes_supported=["mcp"], resource_name="T"
    )
    async with client_for(protected_resource=resource) as client:
        document = await client.get("/.well-known/oauth-protected-resource/mcp")
        assert document.status_code == 200
        assert document.json() == {
            "resource": "http://mcp.test/mcp",
            "authorization_servers": ["https://as.test"],
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["mcp"],
            "resource_name": "T",
        }
        refused = await client.post("/mcp", json={}, headers={"authorization": "Bearer bad"})
        assert refused.status_code == 401
        (challenge,) = parse_challenges(refused.headers["www-authenticate"])
        assert challenge.scheme == "Bearer" and challenge.get("error") == "invalid_token"
        assert challenge.get("resource_metadata") == (
            "http://mcp.test/.well-known/oauth-protected-resource/mcp"
        )
        missing = await client.post("/mcp", json={})
        (challenge,) = parse_challenges(missing.headers["www-authenticate"])
        assert (
            challenge.get(
                "resource_metadata",
            )
            is not None
        )
        assert (await client.post("/.well-known/oauth-protected-resource/mcp")).status_code == 405


async def test_a_configured_canonical_url_wins_over_the_host_header() -> None:
    resource = ProtectedResource(["https://as.test"], resource="https://public.example/mcp")
    async with client_for(protected_resource=resource) as client:
        document = (await client.get("/.well-known/oauth-protected-resource")).json()
        assert document["resource"] == "https://public.example/mcp"
        refused = await client.post("/mcp", json={})
        (challenge,) = parse_challenges(refused.headers["www-authenticate"])
        assert challenge.get("resource_metadata") == (
            "https://public.example/.well-known/oauth-protected-resource/mcp"
        )


async def test_without_a_verifier_there_is_no_metadata() -> None:
    app = Server("open").streamable_http_app()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),  # type: ignore[arg-type]
        base_url="http://mcp.test",
    ) as client:
        assert (await client.get("/.well-known/oauth-protected-resource/mcp")).status_code == 404
