"""The OAuth layer's own HTTP requests: through the user's httpx client, always bounded.

Every request carries a timeout and is sent without auth (never the MCP token to an
authorization server) and without following redirects unless asked; bodies are read up
to a cap. httpx failures become `AuthError` with no URL query or body in the message.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx

from mrtr.errors import AuthError

__all__ = ["MAX_BODY", "HTTPScope", "OAuthHTTP", "Reply"]

MAX_BODY = 1_048_576
"""The default cap on one metadata or token response body, in bytes."""


class Reply:
    """A read response: status, headers and the JSON body when it was a JSON object."""

    def __init__(self, status: int, headers: httpx.Headers, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.json: dict[str, Any] | None = None
        try:
            parsed = json.loads(body) if body else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            parsed = None
        if isinstance(parsed, dict):
            self.json = parsed

    @property
    def ok(self) -> bool:
        """True for a 2xx status."""
        return 200 <= self.status < 300


class OAuthHTTP:
    """Sends the OAuth requests with a fixed per-request timeout."""

    def __init__(self, client: httpx.AsyncClient, timeout: float, max_body: int = MAX_BODY) -> None:
        self.client = client
        self.timeout = timeout
        self.max_body = max_body

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        data: dict[str, str] | None = None,
        json_body: dict[str, Any] | None = None,
        follow_redirects: bool = False,
    ) -> Reply:
        """Send one request and read its reply (bounded).

        Raises:
            AuthError: the request failed or timed out.
        """
        sent = {"Accept": "application/json", **(headers or {})}
        try:
            request = self.client.build_request(
                method, url, headers=sent, data=data, json=json_body, timeout=self.timeout
            )
            response = await self.client.send(
                request, auth=None, follow_redirects=follow_redirects, stream=True
            )
            try:
                body = await _read_capped(response, self.max_body)
            finally:
                await response.aclose()
        except httpx.TimeoutException as exc:
            raise AuthError(
                f"{method} {_safe(url)} got no answer within {self.timeout:g} s"
            ) from exc
        except httpx.HTTPError as exc:
            raise AuthError(f"{method} {_safe(url)} failed: {type(exc).__name__}") from exc
        return Reply(response.status_code, response.headers, body)

    async def get_json(self, url: str, headers: dict[str, str] | None = None) -> Reply:
        """GET a metadata document."""
        return await self.request("GET", url, headers=headers)


class HTTPScope:
    """An `OAuthHTTP` over the given client, or over a private one closed afterwards."""

    def __init__(self, client: httpx.AsyncClient | None, timeout: float, max_body: int) -> None:
        self._client = client if client is not None and not client.is_closed else None
        self._timeout = timeout
        self._max_body = max_body
        self._own: httpx.AsyncClient | None = None

    async def __aenter__(self) -> OAuthHTTP:
        client = self._client
        if client is None:
            client = self._own = httpx.AsyncClient()
        return OAuthHTTP(client, self._timeout, self._max_body)

    async def __aexit__(self, *exc: Any) -> None:
        if self._own is not None:
            with anyio.CancelScope(shield=True):
                await self._own.aclose()


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise AuthError(
                f"a response from {_safe(str(response.url))} was over {limit} bytes "
                "(raise OAuth(max_response_size=...) if this server is trusted)"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _safe(url: str) -> str:
    """The URL without its query (an authorization URL's query is nobody's business)."""
    return url.split("?", 1)[0].split("#", 1)[0]
